import { useState, type FormEvent } from "react";
import { api, ApiError } from "../api/http";
import type { Project } from "../api/types";
import { errorText } from "../format";
import { changedOptions, profileOptions, type Options } from "../projectOptions";
import { useStore } from "../state/store";

/** Create a project and start it. */
export function NewProjectDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (p: Project) => void }) {
  const profiles = useStore((s) => s.profiles);
  const [goal, setGoal] = useState("");
  const [profile, setProfile] = useState(profiles[0]?.name ?? "deep_research_agent");
  // What the user changed; every other option is the profile's.
  const [changed, setChanged] = useState<Partial<Options>>({});
  const defaults = profileOptions(profiles.find((p) => p.name === profile));
  const options = { ...defaults, ...changed };
  const [docs, setDocs] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const config: Record<string, unknown> = { ...changedOptions(changed, defaults) };
      if (docs.trim()) config.docs = docs.trim();
      const created = await api.create({ goal: goal.trim(), profile, config });
      let project = created;
      try {
        project = await api.execute(created.project_id);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 409)) throw err; // 409: already running
      }
      onCreated(project);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <form className="modal" onSubmit={submit} data-testid="new-project-dialog">
        <h2>New research project</h2>
        <label>
          Goal
          <textarea
            name="goal"
            autoFocus
            rows={3}
            required
            placeholder="e.g. Research quantum computing applications in healthcare"
            value={goal}
            onChange={(e) => setGoal(e.target.value)}
          />
        </label>
        <div className="form-row">
          <label>
            Profile
            <select name="profile" value={profile} onChange={(e) => setProfile(e.target.value)}>
              {(profiles.length ? profiles : [{ name: profile, description: "" }]).map((p) => (
                <option key={p.name} value={p.name} title={p.description}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Max depth
            <input
              name="max_depth"
              type="number"
              min={0}
              max={8}
              value={options.max_depth}
              title={`The profile's value is ${defaults.max_depth}`}
              onChange={(e) => setChanged({ ...changed, max_depth: Number(e.target.value) })}
            />
          </label>
          <label>
            Plan review
            <select name="review" value={options.review} onChange={(e) => setChanged({ ...changed, review: e.target.value })}>
              <option value="none">None (auto-approve)</option>
              <option value="root">Root plan</option>
              <option value="all">Every plan</option>
            </select>
          </label>
        </div>
        <label>
          Documents folder <span className="muted">(optional, on the server)</span>
          <input name="docs" placeholder="/path/to/docs" value={docs} onChange={(e) => setDocs(e.target.value)} />
        </label>
        <div className="form-row">
          <label>
            Model <span className="muted">(optional)</span>
            <input
              name="model"
              placeholder="the server's"
              title="e.g. local, openai:gpt-4o-mini (the server must have its key)"
              value={options.model}
              onChange={(e) => setChanged({ ...changed, model: e.target.value })}
            />
          </label>
          <label>
            Language <span className="muted">(optional)</span>
            <input
              name="language"
              placeholder="the goal's"
              title="the language every agent writes in, e.g. de, fr, pt-BR"
              value={options.language}
              onChange={(e) => setChanged({ ...changed, language: e.target.value })}
            />
          </label>
          <label className="checkbox">
            <span>
              <input
                name="offline"
                type="checkbox"
                checked={options.offline}
                onChange={(e) => setChanged({ ...changed, offline: e.target.checked })}
              />{" "}
              Offline
            </span>
            <span className="muted">no web search</span>
          </label>
        </div>
        {error && <div className="form-error" role="alert">{error}</div>}
        <div className="modal-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy || !goal.trim()}>
            {busy ? "Starting…" : "Start research"}
          </button>
        </div>
      </form>
    </div>
  );
}
