import { useState, type FormEvent } from "react";
import { setToken } from "../api/token";

/** Asked once, when the server answers 401: the token is kept in sessionStorage. */
export function TokenPrompt({ onDone }: { onDone: () => void }) {
  const [value, setValue] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!value.trim()) return;
    setToken(value.trim());
    onDone();
  };
  return (
    <div className="modal-backdrop">
      <form className="modal small" onSubmit={submit} data-testid="token-prompt">
        <h2>API token required</h2>
        <p className="muted">
          This server needs the token it was started with (<code>SENTIENT_API_TOKEN</code>). It is kept for this
          browser tab only.
        </p>
        <input
          type="password"
          autoFocus
          placeholder="Token"
          value={value}
          onChange={(e) => setValue(e.target.value)}
          aria-label="API token"
        />
        <div className="modal-actions">
          <button type="submit" className="primary" disabled={!value.trim()}>
            Connect
          </button>
        </div>
      </form>
    </div>
  );
}
