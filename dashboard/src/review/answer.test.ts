import { describe, expect, it } from "vitest";
import type { Review } from "../api/types";
import { reviewsLabel } from "./answer";

const review = (kind: Review["kind"]): Review => ({
  review_id: kind,
  project_id: "p",
  task_id: "root",
  goal: "g",
  layer: 0,
  round: 1,
  kind,
  plan: kind === "plan" ? { subtasks: [] } : null,
  tool_call: kind === "tool_call" ? { tool: "refund", arguments: {} } : null,
  context: "",
  created_at: 0,
  deadline: null,
  status: "pending",
});

describe("reviewsLabel", () => {
  it("names what waits: plans, tool calls, or both", () => {
    expect(reviewsLabel([review("plan"), review("plan")])).toBe("Review plan (2)");
    expect(reviewsLabel([review("tool_call")])).toBe("Approve tool call (1)");
    expect(reviewsLabel([review("plan"), review("tool_call")])).toBe("Review (2)");
  });
});
