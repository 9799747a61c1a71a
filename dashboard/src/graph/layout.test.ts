import { describe, expect, it } from "vitest";
import type { TaskNode } from "../api/types";
import { node } from "../testFixtures";
import { NODE_HEIGHT, layoutTree } from "./layout";

function bigTree(fanout: number, depth: number): Map<string, TaskNode> {
  const nodes = new Map<string, TaskNode>();
  const grow = (id: string, level: number) => {
    const kids = level < depth ? Array.from({ length: fanout }, (_, i) => `${id}.${i}`) : [];
    nodes.set(id, node(id, { children: kids, depends_on: id.endsWith(".1") ? [`${id.slice(0, -2)}.0`] : [] }));
    kids.forEach((k) => grow(k, level + 1));
  };
  grow("root", 0);
  return nodes;
}

describe("layoutTree", () => {
  it("places every node once, parents left of their children, without overlaps", () => {
    const nodes = bigTree(10, 3); // 1,111 nodes
    const layout = layoutTree(nodes);
    expect(layout.nodes).toHaveLength(nodes.size);
    const pos = new Map(layout.nodes.map((p) => [p.id, p]));
    for (const n of nodes.values()) {
      if (n.parent_id) expect(pos.get(n.parent_id)!.x).toBeLessThan(pos.get(n.task_id)!.x);
    }
    const byColumn = new Map<number, number[]>();
    for (const p of layout.nodes) byColumn.set(p.x, [...(byColumn.get(p.x) ?? []), p.y]);
    for (const ys of byColumn.values()) {
      ys.sort((a, b) => a - b);
      for (let i = 1; i < ys.length; i++) expect(ys[i]! - ys[i - 1]!).toBeGreaterThanOrEqual(NODE_HEIGHT);
    }
  });

  it("draws tree edges and sibling dependency edges", () => {
    const layout = layoutTree(bigTree(2, 1));
    const ids = layout.edges.map((e) => e.id).sort();
    expect(ids).toEqual(["d:root.0>root.1", "t:root>root.0", "t:root>root.1"]);
  });

  it("hides a collapsed subtree and counts what it hides", () => {
    const layout = layoutTree(bigTree(3, 2), new Set(["root.0"]));
    expect(layout.nodes.find((p) => p.id === "root.0.1")).toBeUndefined();
    expect(layout.nodes.find((p) => p.id === "root.0")?.hiddenDescendants).toBe(3);
    expect(layout.nodes).toHaveLength(13 - 3);
  });

  it("orders siblings numerically", () => {
    const nodes = new Map<string, TaskNode>();
    const kids = Array.from({ length: 11 }, (_, i) => `root.${i}`);
    nodes.set("root", node("root", { children: [] }));
    kids.forEach((k) => nodes.set(k, node(k)));
    const ys = layoutTree(nodes).nodes.filter((p) => p.id !== "root");
    const order = [...ys].sort((a, b) => a.y - b.y).map((p) => p.id);
    expect(order).toEqual(kids);
  });

});
