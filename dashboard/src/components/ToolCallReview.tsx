// Tool call approval: a tool marked `confirm: true` waits for the user to approve or refuse one
// call. Nothing here is editable but the reason for refusing, which the agent is told.

import { useState } from "react";
import type { Review, ReviewedCall } from "../api/types";
import { useAnswer } from "../review/answer";
import { useStore } from "../state/store";

export function ToolCallReview({ review, call }: { review: Review; call: ReviewedCall }) {
  const openReview = useStore((s) => s.openReview);
  const { busy, error, send } = useAnswer(review);
  const [reason, setReason] = useState("");
  return (
    <div className="modal" role="dialog" aria-label="Tool call approval" data-testid="review-dialog">
      <div className="modal-head">
        <div>
          <div className="muted small">Tool call approval · {review.task_id}</div>
          <h2 data-testid="tool-call-tool">{call.tool}</h2>
        </div>
        <button type="button" className="ghost close" aria-label="Close (decide later)" onClick={() => openReview(null)}>
          ×
        </button>
      </div>
      <p className="muted small">
        The agent of task {review.task_id} wants to call this tool, marked <code>confirm: true</code> in agents.yaml, with:
      </p>
      <pre className="trace" data-testid="tool-call-arguments">
        {JSON.stringify(call.arguments, null, 2)}
      </pre>
      <textarea
        className="review-text"
        rows={2}
        value={reason}
        data-testid="review-reason"
        placeholder="Why not? (told to the agent if you refuse; optional)"
        onChange={(e) => setReason(e.target.value)}
      />
      {error && <div className="form-error" role="alert" data-testid="review-error">{error}</div>}
      <div className="modal-actions">
        <button
          type="button"
          className="danger ghost"
          disabled={busy}
          onClick={() => send({ action: "reject", reason: reason.trim() || "refused in the dashboard" })}
          data-testid="refuse-call"
        >
          Refuse
        </button>
        <button type="button" className="primary" disabled={busy} onClick={() => send({ action: "approve" })} data-testid="approve-call">
          Approve
        </button>
      </div>
    </div>
  );
}
