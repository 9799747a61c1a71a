// Sending a review's answer (through useSubmit: busy while it is on its way, the server's refusal
// shown), and the review dropped from the store once answered.

import { api } from "../api/http";
import type { Review, ReviewAnswer } from "../api/types";
import { useStore } from "../state/store";
import { useSubmit } from "../useSubmit";

export function useAnswer(review: Review) {
  const resolved = useStore((s) => s.reviewResolved);
  const { busy, error, run, clear } = useSubmit();
  const send = (answer: ReviewAnswer) =>
    run(async () => {
      await api.answer(review.review_id, answer);
      resolved(review.review_id);
    });
  return { busy, error, clear, send };
}

/** The label of the top bar's button that opens the pending reviews. */
export function reviewsLabel(reviews: Review[]): string {
  const calls = reviews.filter((r) => r.kind === "tool_call").length;
  const what = calls === 0 ? "Review plan" : calls === reviews.length ? "Approve tool call" : "Review";
  return `${what} (${reviews.length})`;
}
