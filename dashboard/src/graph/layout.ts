// Tidy-tree layout (Reingold–Tilford via d3-hierarchy), left to right: depth grows along x,
// siblings stack along y. Pure: nodes + collapsed set in, positions and edges out.

import { hierarchy, tree } from "d3-hierarchy";
import type { TaskNode } from "../api/types";

export const NODE_WIDTH = 240;
export const NODE_HEIGHT = 72;
const H_GAP = 80;
const V_GAP = 18;
/** Where a dependency edge leaves its source and enters its target, down the right side. */
export const DEP_OUT_Y = 0.3 * NODE_HEIGHT;
export const DEP_IN_Y = 0.7 * NODE_HEIGHT;

/**
 * How far a dependency edge arcs out to the right of its column (siblings are stacked, so the
 * edge goes round the nodes between them). Its curve stays within this distance.
 */
export function dependencyBulge(sourceY: number, targetY: number): number {
  return Math.min(70, 28 + Math.abs(targetY - sourceY) * 0.12);
}

export interface PlacedNode {
  id: string;
  x: number;
  y: number;
  hasChildren: boolean;
  hiddenDescendants: number;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
  kind: "tree" | "dependency";
}

export interface Layout {
  nodes: PlacedNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
}

interface TreeItem {
  id: string;
  children?: TreeItem[];
}

const VIRTUAL_ROOT = "\u0000forest";

/** Numeric-aware order of sibling ids: root.2 before root.10. */
function siblingOrder(a: string, b: string): number {
  const na = Number(a.slice(a.lastIndexOf(".") + 1));
  const nb = Number(b.slice(b.lastIndexOf(".") + 1));
  if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Children of each node, from parent_id (authoritative) ordered by the parent's list. */
export function childrenIndex(nodes: ReadonlyMap<string, TaskNode>): Map<string | null, string[]> {
  const index = new Map<string | null, string[]>();
  for (const node of nodes.values()) {
    const parent = node.parent_id !== null && nodes.has(node.parent_id) ? node.parent_id : null;
    const list = index.get(parent);
    if (list) list.push(node.task_id);
    else index.set(parent, [node.task_id]);
  }
  for (const [parent, list] of index) {
    const listed = parent === null ? undefined : nodes.get(parent)?.children;
    const rank = new Map(listed?.map((id, i) => [id, i]));
    list.sort((a, b) => {
      const ra = rank.get(a);
      const rb = rank.get(b);
      if (ra !== undefined && rb !== undefined) return ra - rb;
      if (ra !== undefined) return -1;
      if (rb !== undefined) return 1;
      return siblingOrder(a, b);
    });
  }
  return index;
}

function countDescendants(id: string, index: Map<string | null, string[]>): number {
  let total = 0;
  const stack = [...(index.get(id) ?? [])];
  while (stack.length > 0) {
    const next = stack.pop() as string;
    total += 1;
    stack.push(...(index.get(next) ?? []));
  }
  return total;
}

export function layoutTree(
  nodes: ReadonlyMap<string, TaskNode>,
  collapsed: ReadonlySet<string> = new Set(),
): Layout {
  if (nodes.size === 0) return { nodes: [], edges: [], width: 0, height: 0 };
  const index = childrenIndex(nodes);

  const build = (id: string): TreeItem => {
    const kids = index.get(id);
    if (!kids || kids.length === 0 || collapsed.has(id)) return { id };
    return { id, children: kids.map(build) };
  };
  const tops = index.get(null) ?? [];
  const data: TreeItem =
    tops.length === 1 ? build(tops[0] as string) : { id: VIRTUAL_ROOT, children: tops.map(build) };

  const root = hierarchy<TreeItem>(data);
  tree<TreeItem>()
    .nodeSize([NODE_HEIGHT + V_GAP, NODE_WIDTH + H_GAP])
    .separation((a, b) => (a.parent === b.parent ? 1 : 1.25))(root);

  const placed: PlacedNode[] = [];
  const edges: LayoutEdge[] = [];
  const visible = new Set<string>();
  let minY = Infinity;
  let maxY = -Infinity;
  let maxX = 0;
  const shift = data.id === VIRTUAL_ROOT ? NODE_WIDTH + H_GAP : 0;
  root.each((d) => {
    const id = d.data.id;
    if (id === VIRTUAL_ROOT) return;
    const x = (d.y ?? 0) - shift;
    const y = d.x ?? 0;
    const kids = index.get(id) ?? [];
    placed.push({
      id,
      x,
      y,
      hasChildren: kids.length > 0,
      hiddenDescendants: collapsed.has(id) ? countDescendants(id, index) : 0,
    });
    visible.add(id);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
    maxX = Math.max(maxX, x);
    if (d.parent && d.parent.data.id !== VIRTUAL_ROOT) {
      edges.push({ id: `t:${d.parent.data.id}>${id}`, source: d.parent.data.id, target: id, kind: "tree" });
    }
  });
  for (const id of visible) {
    for (const dep of nodes.get(id)?.depends_on ?? []) {
      if (visible.has(dep)) edges.push({ id: `d:${dep}>${id}`, source: dep, target: id, kind: "dependency" });
    }
  }
  // The width takes in the dependency edges that arc out to the right of the last column.
  let width = maxX + NODE_WIDTH;
  const at = new Map(placed.map((p) => [p.id, p]));
  for (const e of edges) {
    const s = at.get(e.source);
    const t = at.get(e.target);
    if (e.kind !== "dependency" || !s || !t) continue;
    width = Math.max(width, s.x + NODE_WIDTH + dependencyBulge(s.y + DEP_OUT_Y, t.y + DEP_IN_Y));
  }
  // Shift so the layout starts at y = 0.
  for (const p of placed) p.y -= minY;
  return { nodes: placed, edges, width, height: maxY - minY + NODE_HEIGHT };
}
