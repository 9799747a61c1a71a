// Sending a review's answer: busy while it is on its way, the server's refusal shown, and the
// review dropped from the store once answered.

import { useState } from "react";
import { api } from "../api/http";
import type { Review, ReviewAnswer } from "../api/types";
import { errorText } from "../format";
import { useStore } from "../state/store";

export function useAnswer(review: Review) {
  const resolved = useStore((s) => s.reviewResolved);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async (answer: ReviewAnswer) => {
    setBusy(true);
    setError(null);
    try {
      await api.answer(review.review_id, answer);
      resolved(review.review_id);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, send };
}

/** The label of the top bar's button that opens the pending reviews. */
export function reviewsLabel(reviews: Review[]): string {
  const calls = reviews.filter((r) => r.kind === "tool_call").length;
  const what = calls === 0 ? "Review plan" : calls === reviews.length ? "Approve tool call" : "Review";
  return `${what} (${reviews.length})`;
}
