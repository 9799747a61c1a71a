import { describe, expect, it } from "vitest";
import type { TaskNode } from "../api/types";
import { node } from "../testFixtures";
import { graphToSvg, wrapWords, type Measure } from "./export";

/** At most ``n`` characters a line. */
const chars = (n: number) => (line: string) => line.length <= n;
/** Every character 7 px wide (DejaVu Sans at 12 px, about). */
const wide: Measure = (text) => text.length * 7;

const GOAL = "Compare Python concurrency libraries for asynchronous networking applications today";

/** root with three children in one column, the later ones depending on root.0 (the widest arcs). */
function tree(): Map<string, TaskNode> {
  const nodes = new Map<string, TaskNode>();
  nodes.set("root", node("root", { goal: GOAL, children: ["root.0", "root.1", "root.2"], node_type: "PLAN" }));
  nodes.set("root.0", node("root.0", { goal: "Find the libraries" }));
  nodes.set("root.1", node("root.1", { goal: "Benchmark them", depends_on: ["root.0"] }));
  nodes.set("root.2", node("root.2", { goal: "Write it up", depends_on: ["root.0", "root.1"] }));
  return nodes;
}

describe("wrapWords", () => {
  it("breaks lines between words", () => {
    expect(wrapWords("Compare Python concurrency libraries", chars(21), 2)).toEqual(["Compare Python", "concurrency libraries"]);
  });

  it("ends a cut text with an ellipsis after a whole word", () => {
    const lines = wrapWords(GOAL, chars(32), 2);
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => l.length <= 32)).toBe(true);
    expect(lines[1]!.endsWith(" …")).toBe(true);
    const shown = [...lines[0]!.split(" "), ...lines[1]!.slice(0, -2).split(" ")];
    expect(shown).toEqual(["Compare", "Python", "concurrency", "libraries", "for", "asynchronous"]);
  });

  it("cuts only a word longer than a whole line", () => {
    expect(wrapWords("a supercalifragilisticexpialidocious word", chars(10), 3)).toEqual(["a", "supercalif", "ragilisti…"]);
  });
});

describe("graphToSvg", () => {
  const { svg, width, height } = graphToSvg(tree(), wide);

  it("draws every edge, dependency arcs included, inside the image", () => {
    const paths = [...svg.matchAll(/<path class="(tree-edge|dependency-edge)" d="([^"]+)"/g)];
    expect(paths.filter((m) => m[1] === "dependency-edge")).toHaveLength(3);
    for (const [, , d] of paths) {
      // A curve lies within the convex hull of its points: all of them inside means the edge is.
      const points = [...d!.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
      expect(points.length).toBeGreaterThan(0);
      for (const [x, y] of points) {
        expect(x).toBeGreaterThanOrEqual(0);
        expect(x).toBeLessThanOrEqual(width);
        expect(y).toBeGreaterThanOrEqual(0);
        expect(y).toBeLessThanOrEqual(height);
      }
    }
  });

  it("writes goals in whole words", () => {
    const lines = [...svg.matchAll(/<text class="goal"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
    const rootLines = lines.slice(0, 2);
    const shown = rootLines.join(" ").replace(/ …$/, "").split(" ");
    expect(shown).toEqual(GOAL.split(" ").slice(0, shown.length));
    expect(lines).toContain("Find the libraries");
    expect(lines.every((line) => wide(line, "12px") <= 216)).toBe(true);
  });
});
