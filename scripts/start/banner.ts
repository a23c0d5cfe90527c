/**
 * What `npm start` prints once the API and the worker are up: where things are, and a CLI and
 * curl session with an agent the worker actually loaded (from BATON_AGENTS), asked from the API
 * (`GET /v1/agents`), so the example answers instead of unknown_agent.
 */

/** The part of an agent descriptor (GET /v1/agents) the banner uses. */
export interface LoadedAgent {
  readonly name: string;
  readonly description?: string;
  readonly workers: readonly string[];
  readonly available: boolean;
  readonly tools: readonly { readonly name: string; readonly approval: boolean }[];
}

/**
 * The agents worker `workerId` runs, as the API lists them; every available agent if the API
 * does not list that worker (yet), [] if the API cannot be asked.
 */
export async function fetchLoadedAgents(
  url: string,
  key: string | undefined,
  workerId: string | undefined,
): Promise<LoadedAgent[]> {
  if (key === undefined) return [];
  try {
    const res = await fetch(`${url}/v1/agents`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(5_000),
    });
    if (!res.ok) return [];
    const { agents } = (await res.json()) as { agents: LoadedAgent[] };
    const mine = agents.filter((a) => workerId !== undefined && a.workers.includes(workerId));
    return mine.length > 0 ? mine : agents.filter((a) => a.available);
  } catch {
    return [];
  }
}

/** The demo's assistant when loaded (its session approves a deploy), else the first agent. */
function exampleAgent(agents: readonly LoadedAgent[]): LoadedAgent | undefined {
  return agents.find((a) => a.name === 'assistant') ?? agents[0];
}

export interface BannerInput {
  readonly url: string;
  readonly key: string;
  readonly keyGenerated: boolean;
  readonly adminKey: string | undefined;
  readonly agents: readonly LoadedAgent[];
  /** BATON_AGENTS as the worker got it. */
  readonly agentSources: string;
  readonly watching: readonly string[];
  /** Where a generated key is kept between starts (shown with it). */
  readonly keptIn?: string;
  /** Why the worker is down (crash-looping), when it is. */
  readonly workerDown?: string | undefined;
  readonly bold: (s: string) => string;
}

export function bannerLines(input: BannerInput): string[] {
  const { url, key } = input;
  const agent = exampleAgent(input.agents);
  const name = agent?.name ?? '<agent>';
  const message = name === 'assistant' ? 'deploy please' : 'hello there';
  const asks = agent?.tools.some((t) => t.approval) ?? false;
  const agentLine =
    input.agents.length > 0
      ? `  Agents (BATON_AGENTS=${input.agentSources}): ${input.agents.map((a) => a.name).join(', ')}`
      : `  Agents: BATON_AGENTS=${input.agentSources} (list them with GET ${url}/v1/agents or \`npx baton agents\`)`;
  const approve = asks
    ? [
        '  CALL=$(curl -s $BATON/v1/runs/$RUN -H "Authorization: Bearer $KEY" | sed -E \'s/.*"await":\\{"kind":"tool_calls","calls":\\[\\{"toolCallId":"([^"]+)".*/\\1/\')',
        `  curl -s $BATON/v1/runs/$RUN/decisions -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\`,
        `       -d "{\\"decisions\\":[{\\"toolCallId\\":\\"$CALL\\",\\"action\\":\\"resume\\"}]}"`,
        '  curl -N "$BATON/v1/runs/$RUN/events" -H "Authorization: Bearer $KEY" -H "Last-Event-ID: 0"',
      ]
    : [];
  return [
    '',
    input.bold(`Baton is running at ${url}`),
    `  API key (tenant "local"):  ${key}${input.keyGenerated ? `   (the same every start, kept in ${input.keptIn ?? '.baton/local.json'}; set API_KEYS to choose your own)` : ''}`,
    ...(input.adminKey
      ? [
          `  Admin key (Bull Board):    ${input.adminKey}   -> ${url}/admin/queues (user: anything, password: the key)`,
        ]
      : []),
    `  OpenAPI: ${url}/openapi.json   metrics: ${url}/metrics (admin key as bearer)   health: ${url}/readyz`,
    `  Run console: ${url}/console/   (paste the API key once per tab)`,
    ...(input.workerDown !== undefined
      ? [
          input.bold(
            `  The worker is DOWN (${input.workerDown}); the API and Redis are up and keep the runs, and it is started again periodically`,
          ),
        ]
      : []),
    agentLine,
    ...(input.watching.length > 0
      ? [
          `  Watching ${input.watching.join(', ')}: a saved change restarts the worker only (the API, Redis and the runs stay)`,
        ]
      : []),
    '',
    `From another terminal, the CLI${asks ? ' (asks you to approve in the terminal)' : ''}:`,
    `  export BATON_URL=${url} BATON_API_KEY=${key}`,
    `  npx baton runs create --agent ${name} --message "${message}" --watch`,
    '',
    `Or with curl (create -> watch events${asks ? ' -> approve -> done' : ''}):`,
    `  export BATON=${url} KEY=${key}`,
    `  RUN=$(curl -s $BATON/v1/runs -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\`,
    `        -d '{"agent":"${name}","input":{"messages":[{"role":"user","content":"${message}"}]}}' | sed -E 's/.*"runId":"([^"]+)".*/\\1/')`,
    `  curl -N "$BATON/v1/runs/$RUN/events?until=${asks ? 'suspended' : 'done'}" -H "Authorization: Bearer $KEY"`,
    ...approve,
    '',
    'Press Ctrl-C to stop.',
    '',
  ];
}
