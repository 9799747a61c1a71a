// Editing a proposed plan: pure operations and validation. The checks mirror
// sentient/hitl/protocol.py `plan_problems` plus the PlanOutput bounds (2–12 subtasks), so an
// invalid edit is shown to the reviewer and never sent.

import { TASK_TYPES, type Plan, type PlanSubtask } from "../api/types";

export const MIN_SUBTASKS = 2;
export const MAX_SUBTASKS = 12;

/** A subtask as edited in the form: dependencies are free text ("0, 2") until sent. */
export interface DraftSubtask {
  goal: string;
  task_type: string;
  deps: string;
}

export function toDraft(plan: Plan): DraftSubtask[] {
  return plan.subtasks.map((s) => ({
    goal: s.goal,
    task_type: s.task_type,
    deps: s.depends_on_indices.join(", "),
  }));
}

/** Parse "0, 2" into indices; a token that is not a whole number is reported, not dropped. */
export function parseDeps(text: string): { indices: number[]; bad: string[] } {
  const indices: number[] = [];
  const bad: string[] = [];
  for (const token of text.split(/[\s,]+/).filter(Boolean)) {
    if (/^\d+$/.test(token)) indices.push(Number(token));
    else bad.push(token);
  }
  return { indices, bad };
}

export function planProblems(draft: readonly DraftSubtask[]): string[] {
  const problems: string[] = [];
  const count = draft.length;
  if (count < MIN_SUBTASKS) problems.push(`a plan needs at least ${MIN_SUBTASKS} subtasks`);
  if (count > MAX_SUBTASKS) problems.push(`a plan has at most ${MAX_SUBTASKS} subtasks`);
  draft.forEach((sub, i) => {
    if (!sub.goal.trim()) problems.push(`subtask ${i} has an empty goal`);
    if (!(TASK_TYPES as readonly string[]).includes(sub.task_type)) {
      problems.push(`subtask ${i} has an unknown type ${sub.task_type}`);
    }
    const { indices, bad } = parseDeps(sub.deps);
    for (const token of bad) problems.push(`subtask ${i} has a dependency "${token}" that is not an index`);
    for (const dep of indices) {
      if (dep === i) problems.push(`subtask ${i} depends on itself`);
      else if (dep < 0 || dep >= count) problems.push(`subtask ${i} depends on ${dep}, which does not exist`);
      else if (dep > i) {
        problems.push(`subtask ${i} depends on later subtask ${dep} (dependencies must point backwards)`);
      }
    }
  });
  return problems;
}

export function toPlan(draft: readonly DraftSubtask[]): Plan {
  const subtasks: PlanSubtask[] = draft.map((s) => ({
    goal: s.goal.trim(),
    task_type: s.task_type,
    depends_on_indices: [...new Set(parseDeps(s.deps).indices)].sort((a, b) => a - b),
  }));
  return { subtasks };
}

/** Remove subtask `index`: references to it are dropped, later indices shift down. */
export function removeSubtask(draft: readonly DraftSubtask[], index: number): DraftSubtask[] {
  return draft
    .filter((_, i) => i !== index)
    .map((s) => {
      const { indices, bad } = parseDeps(s.deps);
      const kept = indices.filter((d) => d !== index).map((d) => (d > index ? d - 1 : d));
      return { ...s, deps: [...kept.map(String), ...bad].join(", ") };
    });
}

export function addSubtask(draft: readonly DraftSubtask[]): DraftSubtask[] {
  return [...draft, { goal: "", task_type: "SEARCH", deps: "" }];
}
