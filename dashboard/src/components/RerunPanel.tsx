// Re-run or re-plan the inspected task of a project that has ended, with optional instructions for
// its agents (POST /api/projects/{id}/nodes/{node_id}/rerun). The server resets the task and its
// ancestors; the graph follows through the usual node_update diffs.

import { useEffect, useState } from "react";
import { api } from "../api/http";
import type { TaskNode } from "../api/types";
import { useStore } from "../state/store";
import { useSubmit } from "../useSubmit";

/** Whether a task of a project in ``status`` can be run again: not the root, and not while it runs. */
export function canRerun(node: TaskNode, status: string | undefined): boolean {
  return node.parent_id !== null && status !== undefined && status !== "running" && status !== "created";
}

export function RerunPanel({ projectId, node }: { projectId: string; node: TaskNode }) {
  const projectChanged = useStore((s) => s.projectChanged);
  const [instructions, setInstructions] = useState("");
  const { busy, error, run, clear } = useSubmit();

  useEffect(() => {
    setInstructions("");
    clear();
  }, [node.task_id, clear]);

  const send = (replan: boolean) =>
    run(async () => {
      const text = instructions.trim();
      projectChanged(await api.rerun(projectId, node.task_id, { replan, instructions: text || null }));
    });

  return (
    <section data-testid="rerun-panel">
      <h4>Run this task again</h4>
      <p className="muted small">
        Its subtasks are rebuilt and the tasks above it combine the new result; every other task keeps its result.
      </p>
      <textarea
        aria-label="Instructions for this task"
        data-testid="rerun-instructions"
        placeholder="Optional instructions, e.g. use only the 2024 documentation"
        rows={3}
        maxLength={4000}
        value={instructions}
        onChange={(e) => setInstructions(e.target.value)}
      />
      <div className="modal-actions">
        {node.node_type === "EXECUTE" && (
          <button type="button" disabled={busy} onClick={() => void send(false)} data-testid="rerun-button">
            Re-run
          </button>
        )}
        <button type="button" disabled={busy} onClick={() => void send(true)} data-testid="replan-button">
          Re-plan
        </button>
      </div>
      {error && <div className="error-box" data-testid="rerun-error">{error}</div>}
    </section>
  );
}
