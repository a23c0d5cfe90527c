import { FieldInputError, coerceField, payloadForm, type FormField } from '@baton/client';
import type { AwaitedToolCall, JsonObject, JsonValue } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { href } from './route.ts';

export interface DecisionChoice {
  readonly action: 'resume' | 'cancel';
  readonly payload?: JsonValue;
}

function inputFor(field: FormField, id: string, value: string, set: (v: string) => void) {
  const onInput = (e: { currentTarget: { value: string } }): void => set(e.currentTarget.value);
  switch (field.kind) {
    case 'enum':
      return (
        <select id={id} value={value} onChange={onInput} required={field.required}>
          {!field.required && <option value="">(none)</option>}
          {field.options.map((o) => {
            const text = typeof o === 'string' ? o : JSON.stringify(o);
            return (
              <option key={text} value={text}>
                {text}
              </option>
            );
          })}
        </select>
      );
    case 'boolean':
      return (
        <select id={id} value={value} onChange={onInput} required={field.required}>
          <option value="">{field.required ? 'choose…' : '(none)'}</option>
          <option value="yes">yes</option>
          <option value="no">no</option>
        </select>
      );
    case 'json':
      return (
        <textarea
          id={id}
          rows={3}
          value={value}
          onInput={onInput}
          required={field.required}
          placeholder="JSON"
        />
      );
    case 'number':
    case 'integer':
      return (
        <input
          id={id}
          type="number"
          step={field.kind === 'integer' ? 1 : 'any'}
          value={value}
          onInput={onInput}
          required={field.required}
        />
      );
    case 'string':
      return <input id={id} value={value} onInput={onInput} required={field.required} />;
  }
}

/**
 * One suspended call: what it waits for, the payload form its responseSchema describes, and
 * Approve / Deny. The API checks the payload again (422 payload_invalid is shown here). A call
 * of a descendant run (shown on an ancestor's page) names and links the run that holds it.
 */
/** "4 m 05 s" until `at` (0 once passed). */
function countdownText(at: number, now: number): string {
  const s = Math.max(0, Math.round((at - now) / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h} h ${String(m).padStart(2, '0')} m` : `${m} m ${sec} s`;
}

const OUTCOME_TEXT: Record<string, string> = {
  deny: 'then it is denied',
  resume: 'then it resumes with the default answer',
  cancel: 'then the run is cancelled',
  escalate: 'then it escalates',
};

/** The call's deadline, counting down each second. */
function Deadline({ deadline }: { deadline: NonNullable<AwaitedToolCall['deadline']> }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(t);
  }, []);
  return (
    <p class="deadline" title={new Date(deadline.at).toISOString()}>
      ⏱ {countdownText(deadline.at, now)} left, {OUTCOME_TEXT[deadline.action] ?? deadline.action}
      {deadline.escalated ? ' (escalated once)' : ''}
    </p>
  );
}

export function DecisionForm({
  call,
  onDecide,
}: {
  call: AwaitedToolCall;
  onDecide: (choice: DecisionChoice) => Promise<string | null>;
}) {
  const form = payloadForm(call.responseSchema);
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Call ids are per run: a child's call may have its parent's call's id.
  const base = `${call.runId ?? ''}-${call.toolCallId}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const idFor = (name: string): string => `payload-${base}-${name || 'value'}`;

  const decide = async (action: 'resume' | 'cancel'): Promise<void> => {
    setError(null);
    let payload: JsonValue | undefined;
    if (action === 'resume' && form.fields.length > 0) {
      try {
        if (form.object) {
          const obj: JsonObject = {};
          for (const f of form.fields) {
            const v = coerceField(f, values[f.name] ?? '');
            if (v !== undefined) obj[f.name] = v;
          }
          payload = obj;
        } else payload = coerceField(form.fields[0]!, values[''] ?? '');
      } catch (e) {
        setError(FieldInputError.isInstance(e) ? e.message : String(e));
        return;
      }
    }
    setBusy(true);
    const problem = await onDecide(payload === undefined ? { action } : { action, payload });
    setBusy(false);
    if (problem) setError(problem);
  };

  return (
    <article class="await" aria-labelledby={`await-${base}`}>
      <h3 id={`await-${base}`}>
        {call.toolName} <span class="muted">({call.reason})</span>
      </h3>
      {call.runId !== undefined && (
        <p class="muted">
          Asked by child run{' '}
          <a class="mono" href={href({ page: 'run', runId: call.runId })}>
            {call.runId}
          </a>
        </p>
      )}
      <p class="ticket">{call.message}</p>
      {call.deadline !== undefined && <Deadline deadline={call.deadline} />}
      {call.waitFor && (
        <p class="muted" data-testid="wait-for">
          {call.waitFor.kind === 'event'
            ? `Waiting for event ${call.waitFor.name} (key ${call.waitFor.key})`
            : 'Waiting for its waitpoint URL'}
          {call.waitFor.expiresAt !== undefined &&
            ` until ${new Date(call.waitFor.expiresAt).toLocaleString()}`}
        </p>
      )}
      {call.parameters !== undefined && (
        <pre class="args">{JSON.stringify(call.parameters, null, 2)}</pre>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void decide('resume');
        }}
      >
        {form.fields.length > 0 && (
          <fieldset>
            <legend>Payload</legend>
            {form.fields.map((f) => (
              <div key={f.name} class="field">
                <label for={idFor(f.name)}>
                  {f.name || 'payload'}
                  {f.required ? '' : ' (optional)'}
                </label>
                {inputFor(f, idFor(f.name), values[f.name] ?? '', (v) =>
                  setValues((old) => ({ ...old, [f.name]: v })),
                )}
                {f.description && <p class="muted">{f.description}</p>}
              </div>
            ))}
          </fieldset>
        )}
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="approve" disabled={busy}>
            Approve
          </button>
          <button type="button" class="deny" disabled={busy} onClick={() => void decide('cancel')}>
            Deny
          </button>
        </div>
      </form>
    </article>
  );
}
