/**
 * Vitest globalSetup of the cluster project: starts ONE Redis Cluster (3 masters + 3 replicas)
 * for the whole run and provides its `redis+cluster://` URL under the key the integration suites
 * already read (`inject('redisUrl')`), so they run unchanged against it.
 */
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './redis-cluster.ts';
import { markRun } from './global-setup.ts'; // and the ProvidedContext declaration

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  console.info(`[baton tests] node ${process.version} (${process.execPath})`);
  // Every process of the run carries a marker: the teardown or a watchdog kills what is left.
  const unmark = markRun();
  const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 }).catch(
    async (err: unknown) => {
      await unmark();
      throw err;
    },
  );
  console.info(`[baton tests] Redis Cluster ${cluster.url}`);
  project.provide('redisUrl', cluster.url);
  project.provide('redisUrls', [cluster.url]);
  project.provide('redisSource', 'redis-server');
  return async () => {
    await cluster.stop();
    await unmark();
  };
}
