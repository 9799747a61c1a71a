import { useEffect, useState } from "react";
import { api } from "../api/http";
import { cost, count, counted, duration, errorText } from "../format";
import { projectTotals } from "../state/stats";
import { reviewsLabel } from "../review/answer";
import { useStore } from "../state/store";

const CONNECTION_LABEL = {
  connecting: "Connecting…",
  connected: "Live",
  reconnecting: "Reconnecting…",
  disconnected: "Offline",
} as const;

const ACTIVE = new Set(["running"]);
/** Statuses whose error says why the project ended where it did. */
const ENDED_EARLY = new Set(["failed", "cancelled", "stopped", "interrupted"]);

/** The time (Unix seconds) at this render; while ``ticking``, the component renders again every ``ms``. */
function useNow(ticking: boolean, ms = 500): number {
  const [, setTicks] = useState(0);
  useEffect(() => {
    if (!ticking) return;
    const timer = setInterval(() => setTicks((t) => t + 1), ms);
    return () => clearInterval(timer);
  }, [ticking, ms]);
  return Date.now() / 1000;
}

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
  const graph = useStore((s) => s.graph);
  const now = useNow(project?.status === "running");

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
  const totals = project ? projectTotals(project, graph, now) : null;
  const why = project?.error && ENDED_EARLY.has(status) && project.error !== status ? project.error : null;
  return (
    <header className="topbar">
      <div className="topbar-title">
        {project ? (
          <>
            <span className={`project-status ps-${status}`} data-testid="project-status">
              {status}
            </span>
            <div className="topbar-heading">
              <h1 title={project.goal}>{project.goal}</h1>
              {why && (
                <div className="project-error" title={why} data-testid="project-error">
                  {why}
                </div>
              )}
            </div>
          </>
        ) : (
          <h1 className="muted">Sentient dashboard</h1>
        )}
      </div>
      <div className={`connection conn-${connection}`} data-testid="connection" data-state={connection}>
        <span className="dot" />
        {CONNECTION_LABEL[connection]}
      </div>
      {project && totals && (
        <div className="topbar-tools">
          <div className="topbar-stats" data-testid="project-stats">
            <span title="Tasks in the tree" data-testid="stat-nodes">{counted(totals.nodes, "node")}</span>
            <span title="Agent calls" data-testid="stat-calls">{counted(totals.agent_calls, "call")}</span>
            <span title="Tokens in / out" data-testid="stat-tokens">
              {count(totals.input_tokens)} / {count(totals.output_tokens)} tok
            </span>
            <span title="Cost" data-testid="stat-cost">{cost(totals.cost_usd)}</span>
            <span title={status === "running" ? "Elapsed in this run" : "Duration of the last run"} data-testid="stat-elapsed">
              {duration(totals.elapsed_s)}
            </span>
          </div>
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
          <div className="topbar-actions">
            {reviews.length > 0 && (
              <button type="button" className="warn" onClick={() => openReview(reviews[0]?.review_id ?? null)} data-testid="open-review">
                {reviewsLabel(reviews)}
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
        </div>
      )}
    </header>
  );
}
