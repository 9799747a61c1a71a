import { useState } from "react";
import { api } from "../api/http";
import { cost, count, errorText, seconds } from "../format";
import { useStore } from "../state/store";

const CONNECTION_LABEL = {
  connecting: "Connecting…",
  connected: "Live",
  reconnecting: "Reconnecting…",
  disconnected: "Offline",
} as const;

const ACTIVE = new Set(["running"]);

export function TopBar({ onDeleted }: { onDeleted: () => void }) {
  const connection = useStore((s) => s.connection);
  const project = useStore((s) => s.project);
  const view = useStore((s) => s.view);
  const setView = useStore((s) => s.setView);
  const reviews = useStore((s) => s.reviews);
  const openReview = useStore((s) => s.openReview);
  const notify = useStore((s) => s.notify);
  const projectChanged = useStore((s) => s.projectChanged);
  const [confirmDelete, setConfirmDelete] = useState(false);

  const act = async (what: "cancel" | "resume" | "execute" | "remove") => {
    if (!project) return;
    try {
      if (what === "remove") {
        await api.remove(project.project_id);
        onDeleted();
      } else {
        projectChanged(await api[what](project.project_id));
      }
    } catch (err) {
      notify("error", errorText(err));
    }
  };

  const status = project?.status ?? "";
  return (
    <header className="topbar">
      <div className="topbar-title">
        {project ? (
          <>
            <span className={`project-status ps-${status}`} data-testid="project-status">
              {status}
            </span>
            <h1 title={project.goal}>{project.goal}</h1>
          </>
        ) : (
          <h1 className="muted">Sentient dashboard</h1>
        )}
      </div>
      {project && (
        <div className="topbar-stats">
          <span title="Nodes">{count(project.stats.nodes)} nodes</span>
          <span title="Agent calls">{count(project.stats.agent_calls)} calls</span>
          <span title="Tokens in / out">
            {count(project.stats.input_tokens)} / {count(project.stats.output_tokens)} tok
          </span>
          <span>{cost(project.stats.cost_usd)}</span>
          <span>{seconds(project.stats.elapsed_s)}</span>
        </div>
      )}
      {project && (
        <nav className="tabs" aria-label="View">
          <button type="button" className={view === "graph" ? "active" : ""} onClick={() => setView("graph")}>
            Graph
          </button>
          <button
            type="button"
            className={view === "report" ? "active" : ""}
            onClick={() => setView("report")}
            data-testid="report-tab"
          >
            Report
          </button>
        </nav>
      )}
      {project && (
        <div className="topbar-actions">
          {reviews.length > 0 && (
            <button type="button" className="warn" onClick={() => openReview(reviews[0]?.review_id ?? null)} data-testid="open-review">
              Review plan ({reviews.length})
            </button>
          )}
          {ACTIVE.has(status) && (
            <button type="button" onClick={() => act("cancel")} data-testid="cancel-project">
              Cancel
            </button>
          )}
          {(status === "interrupted" || status === "stopped" || status === "cancelled" || status === "failed") && (
            <button type="button" onClick={() => act("resume")} data-testid="resume-project">
              Resume
            </button>
          )}
          {status === "created" && (
            <button type="button" onClick={() => act("execute")}>
              Start
            </button>
          )}
          {confirmDelete ? (
            <>
              <button type="button" className="danger" onClick={() => act("remove")} data-testid="confirm-delete">
                Delete for good
              </button>
              <button type="button" onClick={() => setConfirmDelete(false)}>
                Keep
              </button>
            </>
          ) : (
            <button type="button" className="ghost" onClick={() => setConfirmDelete(true)} data-testid="delete-project">
              Delete
            </button>
          )}
        </div>
      )}
      <div className={`connection conn-${connection}`} data-testid="connection" data-state={connection}>
        <span className="dot" />
        {CONNECTION_LABEL[connection]}
      </div>
    </header>
  );
}
