// Plan review: approve, edit the plan (validated here before anything is sent), send
// instructions to the plan modifier, or reject with a reason. A tool call's review is the tool
// call approval (ToolCallReview).

import { useMemo, useState } from "react";
import { TASK_TYPES, type Plan, type Review } from "../api/types";
import { useAnswer } from "../review/answer";
import { addSubtask, planProblems, removeSubtask, toDraft, toPlan, type DraftSubtask } from "../review/planEdit";
import { useStore } from "../state/store";
import { ToolCallReview } from "./ToolCallReview";

type Mode = "view" | "edit" | "instruct" | "reject";

function PlanTable({ draft, editing, onChange }: { draft: DraftSubtask[]; editing: boolean; onChange: (d: DraftSubtask[]) => void }) {
  const update = (i: number, patch: Partial<DraftSubtask>) =>
    onChange(draft.map((s, k) => (k === i ? { ...s, ...patch } : s)));
  return (
    <table className="plan-table" data-testid="plan-table">
      <thead>
        <tr>
          <th>#</th>
          <th>Goal</th>
          <th>Type</th>
          <th title="Indices of earlier subtasks, e.g. 0, 2">Depends on</th>
          {editing && <th />}
        </tr>
      </thead>
      <tbody>
        {draft.map((s, i) => (
          <tr key={i} data-testid="plan-subtask">
            <td className="muted">{i}</td>
            <td>
              {editing ? (
                <textarea rows={2} value={s.goal} aria-label={`Goal of subtask ${i}`} onChange={(e) => update(i, { goal: e.target.value })} />
              ) : (
                s.goal
              )}
            </td>
            <td>
              {editing ? (
                <select value={s.task_type} aria-label={`Type of subtask ${i}`} onChange={(e) => update(i, { task_type: e.target.value })}>
                  {TASK_TYPES.map((t) => (
                    <option key={t}>{t}</option>
                  ))}
                </select>
              ) : (
                <span className={`type-badge type-${s.task_type.toLowerCase()}`}>{s.task_type}</span>
              )}
            </td>
            <td>
              {editing ? (
                <input value={s.deps} aria-label={`Dependencies of subtask ${i}`} placeholder="none" onChange={(e) => update(i, { deps: e.target.value })} />
              ) : (
                s.deps || <span className="muted">—</span>
              )}
            </td>
            {editing && (
              <td>
                <button type="button" className="ghost" aria-label={`Remove subtask ${i}`} onClick={() => onChange(removeSubtask(draft, i))}>
                  ✕
                </button>
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What rejecting the plan will do, as the engine does it (AgentProcessor._review). */
function rejectionOutcome(review: Review, hasDirectAnswer: boolean): { warning: string; confirm: string } {
  if (hasDirectAnswer) {
    return {
      warning: "Rejecting this plan stops the research: the task ends with its direct answer, not confirmed by any source.",
      confirm: "Reject plan",
    };
  }
  if (review.layer === 0) {
    return {
      warning:
        "Rejecting the root plan ends the project: it is cancelled, and nothing more is researched. You can resume it later to plan again.",
      confirm: "Reject and cancel the project",
    };
  }
  return {
    warning: `Rejecting this plan fails task ${review.task_id}; the project's failure policy then decides (replan its parent, go on without it, or fail the parent).`,
    confirm: "Reject plan",
  };
}

function PlanReview({ review, plan }: { review: Review; plan: Plan }) {
  const openReview = useStore((s) => s.openReview);
  // A question answered first is planned with its unconfirmed direct answer kept as its result.
  const hasDirectAnswer = useStore((s) => Boolean(s.graph.nodes.get(review.task_id)?.result));
  const outcome = rejectionOutcome(review, hasDirectAnswer);
  const [mode, setMode] = useState<Mode>("view");
  const original = useMemo(() => toDraft(plan), [plan]);
  const [draft, setDraft] = useState<DraftSubtask[]>(original);
  const [text, setText] = useState("");
  const { busy, error, clear, send } = useAnswer(review);
  const problems = mode === "edit" ? planProblems(draft) : [];

  return (
    <div className="modal wide" role="dialog" aria-label="Plan review" data-testid="review-dialog">
      <div className="modal-head">
        <div>
          <div className="muted small">
            Plan review · {review.task_id} · layer {review.layer} · round {review.round}
          </div>
          <h2>{review.goal}</h2>
        </div>
        <button type="button" className="ghost close" aria-label="Close (decide later)" onClick={() => openReview(null)}>
          ×
        </button>
      </div>
      <PlanTable draft={mode === "edit" ? draft : original} editing={mode === "edit"} onChange={setDraft} />
      {mode === "edit" && (
        <button type="button" className="ghost add-subtask" onClick={() => setDraft(addSubtask(draft))}>
          + Add subtask
        </button>
      )}
      {review.context && (
        <details className="review-context">
          <summary>What the planner saw</summary>
          <pre className="trace">{review.context}</pre>
        </details>
      )}
      {problems.length > 0 && (
        <ul className="problems" data-testid="plan-problems" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      {(mode === "instruct" || mode === "reject") && (
        <textarea
          className="review-text"
          rows={3}
          autoFocus
          value={text}
          data-testid={mode === "instruct" ? "review-instructions" : "review-reason"}
          placeholder={mode === "instruct" ? "Instructions for the plan modifier…" : "Why is this plan rejected?"}
          onChange={(e) => setText(e.target.value)}
        />
      )}
      {mode === "reject" && (
        <p className="reject-warning" role="alert" data-testid="reject-warning">
          {outcome.warning}
        </p>
      )}
      {error && <div className="form-error" role="alert" data-testid="review-error">{error}</div>}
      <div className="modal-actions">
        {mode === "view" ? (
          <>
            <button type="button" className="danger ghost" title={outcome.warning} onClick={() => setMode("reject")} data-testid="reject-plan">
              Reject…
            </button>
            <button type="button" onClick={() => setMode("instruct")}>
              Instruct modifier…
            </button>
            <button type="button" onClick={() => { setDraft(original); setMode("edit"); }} data-testid="edit-plan">
              Edit plan
            </button>
            <button type="button" className="primary" disabled={busy} onClick={() => send({ action: "approve" })} data-testid="approve-plan">
              Approve
            </button>
          </>
        ) : (
          <>
            <button type="button" onClick={() => { setMode("view"); setText(""); clear(); }}>
              Back
            </button>
            {mode === "edit" && (
              <button type="button" className="primary" disabled={busy || problems.length > 0} onClick={() => send({ action: "modify", plan: toPlan(draft) })} data-testid="send-edited-plan">
                Send edited plan
              </button>
            )}
            {mode === "instruct" && (
              <button type="button" className="primary" disabled={busy || !text.trim()} onClick={() => send({ action: "modify", instructions: text.trim() })} data-testid="send-instructions">
                Send to plan modifier
              </button>
            )}
            {mode === "reject" && (
              <button type="button" className="danger" disabled={busy || !text.trim()} onClick={() => send({ action: "reject", reason: text.trim() })} data-testid="send-reject">
                {outcome.confirm}
              </button>
            )}
          </>
        )}
      </div>
    </div>
  );
}

export function ReviewDialog() {
  const review = useStore((s) => s.reviews.find((r) => r.review_id === s.reviewOpen));
  if (!review) return null;
  return (
    <div className="modal-backdrop">
      {review.tool_call ? (
        <ToolCallReview key={review.review_id} review={review} call={review.tool_call} />
      ) : review.plan ? (
        <PlanReview key={review.review_id} review={review} plan={review.plan} />
      ) : null}
    </div>
  );
}
