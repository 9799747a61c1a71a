import { memo } from "react";
import type { Project } from "../api/types";
import { age, cost } from "../format";
import { useStore } from "../state/store";

const ProjectItem = memo(function ProjectItem({
  project,
  active,
  onOpen,
}: {
  project: Project;
  active: boolean;
  onOpen: (id: string) => void;
}) {
  return (
    <li>
      <button
        type="button"
        className={`project-item${active ? " active" : ""}`}
        onClick={() => onOpen(project.project_id)}
        data-testid="project-item"
        data-project-id={project.project_id}
        data-status={project.status}
      >
        <div className="project-goal">{project.goal}</div>
        <div className="project-meta">
          <span className={`project-status ps-${project.status}`}>{project.status}</span>
          <span>{cost(project.stats.cost_usd)}</span>
          <span>{age(project.created_at)}</span>
          {project.pending_reviews > 0 && (
            <span className="review-badge" data-testid="pending-review-badge" title="Plans waiting for review">
              {project.pending_reviews} review{project.pending_reviews > 1 ? "s" : ""}
            </span>
          )}
        </div>
      </button>
    </li>
  );
});

export function Sidebar({ onNew, onOpen }: { onNew: () => void; onOpen: (id: string) => void }) {
  const projects = useStore((s) => s.projects);
  const currentId = useStore((s) => s.currentId);
  return (
    <aside className="sidebar">
      <div className="brand">
        <span className="logo" aria-hidden>
          ◆
        </span>
        Sentient
      </div>
      <button type="button" className="primary new-project" onClick={onNew} data-testid="new-project">
        + New project
      </button>
      <div className="sidebar-title">Projects</div>
      {projects.length === 0 ? (
        <p className="muted empty-projects">No projects yet.</p>
      ) : (
        <ul className="project-list" data-testid="project-list">
          {projects.map((p) => (
            <ProjectItem key={p.project_id} project={p} active={p.project_id === currentId} onOpen={onOpen} />
          ))}
        </ul>
      )}
    </aside>
  );
}
