import { describe, expect, it } from "vitest";
import type { Followup } from "../api/types";
import { answering, whyNotAsk } from "./followups";

function thread(status: string): Followup {
  return {
    project: {
      project_id: "f",
      goal: "Why?",
      profile: "general_agent",
      status,
      created_at: 0,
      updated_at: 0,
      error: null,
      settings: {},
      stats: {},
      pending_reviews: 0,
    },
    answer: null,
  };
}

describe("follow-up threads", () => {
  it("is answering until its run has ended", () => {
    expect(["created", "running", "interrupted"].map((s) => answering(thread(s)))).toEqual([true, true, true]);
    expect(["completed", "failed", "cancelled", "stopped"].map((s) => answering(thread(s)))).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it("can be asked only of a project that ran and is not running", () => {
    expect(whyNotAsk("running")).toMatch(/ended/);
    expect(whyNotAsk("created")).toMatch(/first/);
    expect(whyNotAsk("completed")).toBeNull();
    expect(whyNotAsk("failed")).toBeNull();
  });
});
