import type { BatonClient } from '@baton/client';
import { DEFAULT_PRIORITY, type AgentDescriptor, type RunOptions } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';

/**
 * The agents the workers advertise, for a form's agent picker (the first one picked until the
 * user picks); null while loading. A failure goes to `onError` unless it is a lost login.
 */
export function useAgents(
  client: BatonClient,
  onUnauthorized: () => void,
  onError: (message: string) => void,
): {
  readonly agents: AgentDescriptor[] | null;
  readonly agent: string;
  readonly setAgent: (agent: string) => void;
} {
  const [agents, setAgents] = useState<AgentDescriptor[] | null>(null);
  const [agent, setAgent] = useState('');
  useEffect(() => {
    client.agents.list().then(
      (list) => {
        setAgents(list);
        setAgent((a) => a || list[0]?.name || '');
      },
      (e: unknown) => {
        if (!handleAuth(e, onUnauthorized)) onError(describeError(e));
      },
    );
  }, [client]);
  return { agents, agent, setAgent };
}

/** A run's admission options as a form holds them: only what differs from the defaults is sent. */
export function admissionOptions(priority: number, fairnessKey: string): RunOptions {
  return {
    ...(priority !== DEFAULT_PRIORITY ? { priority } : {}),
    ...(fairnessKey.trim() ? { fairnessKey: fairnessKey.trim() } : {}),
  };
}

/** Priority (1 first … 5 last) and fairness key fields (docs/fairness.md), labelled by the form. */
export function AdmissionFields({
  idPrefix,
  labels,
  priority,
  setPriority,
  fairnessKey,
  setFairnessKey,
}: {
  idPrefix: string;
  labels: { readonly priority: string; readonly fairnessKey: string };
  priority: number;
  setPriority: (priority: number) => void;
  fairnessKey: string;
  setFairnessKey: (key: string) => void;
}) {
  return (
    <>
      <label for={`${idPrefix}-priority`}>{labels.priority}</label>
      <select
        id={`${idPrefix}-priority`}
        value={String(priority)}
        onChange={(e) => setPriority(Number(e.currentTarget.value))}
      >
        {[1, 2, 3, 4, 5].map((p) => (
          <option key={p} value={String(p)}>
            {p}
            {p === 1
              ? ' (first)'
              : p === 5
                ? ' (last)'
                : p === DEFAULT_PRIORITY
                  ? ' (default)'
                  : ''}
          </option>
        ))}
      </select>
      <label for={`${idPrefix}-fairness-key`}>{labels.fairnessKey}</label>
      <input
        id={`${idPrefix}-fairness-key`}
        value={fairnessKey}
        placeholder="e.g. your end user's id (default: your tenant)"
        pattern="[A-Za-z0-9._:\-]{1,128}"
        onInput={(e) => setFairnessKey(e.currentTarget.value)}
      />
    </>
  );
}
