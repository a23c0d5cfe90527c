import { useState } from 'preact/hooks';

/** Asks for the API key once per browser tab (kept in sessionStorage). */
export function KeyForm({ onKey }: { onKey: (key: string) => void }) {
  const [value, setValue] = useState('');
  return (
    <section class="card narrow">
      <h1 tabIndex={-1}>Sign in with an API key</h1>
      <p>
        The console calls the Baton API with your key. It stays in this tab only (session storage)
        and is forgotten when the tab closes.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim() !== '') onKey(value.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          required
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <button type="submit">Use this key</button>
      </form>
    </section>
  );
}
