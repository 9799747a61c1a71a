// Test data builders for the unit tests.

import type { TaskNode } from "./api/types";

/** A node with defaults; the parent is derived from the id (root.1.2 -> root.1). */
export function node(id: string, extra: Partial<TaskNode> = {}): TaskNode {
  const parent = id.includes(".") ? id.slice(0, id.lastIndexOf(".")) : null;
  return {
    task_id: id, parent_id: parent, goal: `goal ${id}`, task_type: "SEARCH", node_type: "EXECUTE",
    layer: id.split(".").length - 1, status: "PENDING", depends_on: [], children: [], result: null,
    error: null, sources: [], agent_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0,
    history: [], warnings: [], ...extra,
  };
}
