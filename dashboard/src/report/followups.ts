// Follow-up questions of a project: which threads are still being researched, and what the
// question box may send.

import type { Followup } from "../api/types";

const ANSWERING = new Set(["created", "running", "interrupted"]);

/** Whether a follow-up is still being researched (its answer is yet to come). */
export function answering(thread: Followup): boolean {
  return ANSWERING.has(thread.project.status);
}

/** Why a follow-up cannot be asked of a project in `status` now, or null when it can. */
export function whyNotAsk(status: string | undefined): string | null {
  if (status === "running") return "Ask once the run has ended.";
  if (status === "created" || status === undefined) return "Run the project first.";
  return null;
}
