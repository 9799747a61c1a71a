// The totals the top bar shows. While a project runs they are summed from the live node map
// (every node_update diff changes them) and the elapsed time counts from the start of the
// current run; once the run has ended they are the totals it recorded.

import type { Project, TaskNode } from "../api/types";
import type { GraphState } from "./graphState";

export interface Totals {
  nodes: number;
  agent_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  elapsed_s: number;
}

const ENDED = new Set(["DONE", "FAILED", "CANCELLED"]);

/** The sums over the nodes (every node carries its own calls, tokens and cost). */
export function nodeTotals(nodes: ReadonlyMap<string, TaskNode>): Omit<Totals, "elapsed_s"> {
  const totals = { nodes: nodes.size, agent_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  for (const n of nodes.values()) {
    totals.agent_calls += n.agent_calls;
    totals.input_tokens += n.input_tokens;
    totals.output_tokens += n.output_tokens;
    totals.cost_usd += n.cost_usd;
  }
  return totals;
}

/**
 * When the current run began, from the root's status history: a resume moves an ended root
 * back to work, so the run began at the first status after the root's last ended one (or at
 * its first status). A run resumed after its process died, with the root never ended, counts
 * from the first run.
 */
export function runStartedAt(root: TaskNode | undefined): number | null {
  const history = root?.history ?? [];
  let start = history[0]?.at ?? null;
  history.forEach((h, i) => {
    const next = history[i + 1];
    if (ENDED.has(h.status) && next) start = next.at;
  });
  return start;
}

/** What the top bar shows for ``project`` at ``now`` (Unix seconds). */
export function projectTotals(project: Project, graph: GraphState, now: number): Totals {
  const stats = project.stats;
  const recorded: Totals = {
    nodes: stats.nodes ?? 0,
    agent_calls: stats.agent_calls ?? 0,
    input_tokens: stats.input_tokens ?? 0,
    output_tokens: stats.output_tokens ?? 0,
    cost_usd: stats.cost_usd ?? 0,
    elapsed_s: stats.elapsed_s ?? 0,
  };
  if (project.status !== "running") return recorded;
  // A running project's stored stats are the previous run's (or none): live values instead.
  if (graph.projectId !== project.project_id || graph.nodes.size === 0) return { ...recorded, elapsed_s: 0 };
  const start = runStartedAt(graph.root ? graph.nodes.get(graph.root) : undefined);
  return { ...nodeTotals(graph.nodes), elapsed_s: start === null ? 0 : Math.max(0, now - start) };
}
