import { describe, expect, it } from "vitest";
import { addSubtask, planProblems, removeSubtask, toDraft, toPlan, type DraftSubtask } from "./planEdit";

const d = (goal: string, deps = "", task_type = "SEARCH"): DraftSubtask => ({ goal, task_type, deps });

describe("planProblems", () => {
  it("accepts a valid plan", () => {
    expect(planProblems([d("a"), d("b", "0")])).toEqual([]);
  });
  it("reports an empty goal", () => {
    expect(planProblems([d("a"), d("  ")])).toEqual(["subtask 1 has an empty goal"]);
  });
  it("reports self, forward and out-of-range dependencies", () => {
    expect(planProblems([d("a", "0"), d("b", "2"), d("c", "7")])).toEqual([
      "subtask 0 depends on itself",
      "subtask 1 depends on later subtask 2 (dependencies must point backwards)",
      "subtask 2 depends on 7, which does not exist",
    ]);
  });
  it("reports a dependency that is not a number", () => {
    expect(planProblems([d("a"), d("b", "x")])).toEqual(['subtask 1 has a dependency "x" that is not an index']);
  });
  it("bounds the number of subtasks", () => {
    expect(planProblems([d("a")])).toEqual(["a plan needs at least 2 subtasks"]);
    expect(planProblems(Array.from({ length: 13 }, (_, i) => d(`g${i}`)))).toEqual([
      "a plan has at most 12 subtasks",
    ]);
  });
});

describe("editing", () => {
  it("round-trips a plan", () => {
    const plan = { subtasks: [{ goal: "a", task_type: "SEARCH", depends_on_indices: [] }, { goal: "b", task_type: "WRITE", depends_on_indices: [0] }] };
    expect(toPlan(toDraft(plan))).toEqual(plan);
  });
  it("renumbers dependencies when a subtask is removed", () => {
    const next = removeSubtask([d("a"), d("b"), d("c", "0, 1")], 0);
    expect(next.map((s) => s.deps)).toEqual(["", "0"]);
  });
  it("adds an empty subtask that must be filled in", () => {
    const next = addSubtask([d("a"), d("b")]);
    expect(planProblems(next)).toEqual(["subtask 2 has an empty goal"]);
  });
});
