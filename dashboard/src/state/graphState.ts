// Pure graph state: a Map of nodes plus a structure version that changes only when the tree's
// shape changes (nodes added/removed, parents, children, dependencies). Status and result
// updates keep the structure version, so the layout is not recomputed for them.

import type { TaskNode } from "../api/types";

export interface GraphState {
  projectId: string | null;
  root: string | null;
  nodes: ReadonlyMap<string, TaskNode>;
  structure: number;
}

export const emptyGraph: GraphState = { projectId: null, root: null, nodes: new Map(), structure: 0 };

export function graphFromSnapshot(
  projectId: string,
  nodes: Record<string, TaskNode>,
  root: string | null,
  previous: GraphState,
): GraphState {
  return { projectId, root, nodes: new Map(Object.entries(nodes)), structure: previous.structure + 1 };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function shapeChanged(before: TaskNode | undefined, after: TaskNode): boolean {
  return (
    before === undefined ||
    before.parent_id !== after.parent_id ||
    before.node_type !== after.node_type ||
    !sameList(before.children, after.children) ||
    !sameList(before.depends_on, after.depends_on)
  );
}

/**
 * Apply a `node_update` diff. Each entry is a whole node and replaces the stored one; only
 * the changed entries get new object identities, so only their components re-render.
 */
export function applyNodeUpdate(
  state: GraphState,
  updated: readonly TaskNode[],
  removed: readonly string[] = [],
): GraphState {
  if (updated.length === 0 && removed.length === 0) return state;
  const nodes = new Map(state.nodes);
  let reshaped = false;
  for (const id of removed) {
    if (nodes.delete(id)) reshaped = true;
  }
  for (const node of updated) {
    if (shapeChanged(nodes.get(node.task_id), node)) reshaped = true;
    nodes.set(node.task_id, node);
  }
  // A new node whose parent does not list it yet is still shown under that parent (see layout).
  const root = state.root ?? (nodes.has("root") ? "root" : null);
  return { ...state, root, nodes, structure: reshaped ? state.structure + 1 : state.structure };
}
