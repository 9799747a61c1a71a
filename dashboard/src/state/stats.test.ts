import { describe, expect, it } from "vitest";
import type { Project } from "../api/types";
import { counted, duration } from "../format";
import { node } from "../testFixtures";
import { applyNodeUpdate, emptyGraph, graphFromSnapshot } from "./graphState";
import { projectTotals, runStartedAt } from "./stats";

function project(status: string, stats: Project["stats"] = {}): Project {
  return {
    project_id: "p", goal: "g", profile: "general_agent", status, created_at: 0, updated_at: 0, error: null,
    settings: {}, stats, pending_reviews: 0,
  };
}

const started = 1_000;
const root = node("root", {
  node_type: "PLAN",
  status: "PLANNING",
  agent_calls: 1,
  input_tokens: 120,
  output_tokens: 30,
  cost_usd: 0.001,
  history: [{ status: "READY", at: started }, { status: "PLANNING", at: started + 1 }],
});
const graph = graphFromSnapshot("p", { root }, "root", emptyGraph);

describe("projectTotals", () => {
  it("counts a running project from its nodes, not from the stats stored before it ran", () => {
    const totals = projectTotals(project("running", { nodes: 0, agent_calls: 0, elapsed_s: 0 }), graph, started + 5);
    expect(totals).toEqual({
      nodes: 1, agent_calls: 1, input_tokens: 120, output_tokens: 30, cost_usd: 0.001, elapsed_s: 5,
    });
  });

  it("follows node_update diffs and the clock while running", () => {
    const grown = applyNodeUpdate(graph, [
      node("root.0", { agent_calls: 2, input_tokens: 10, output_tokens: 5 }),
      node("root.1"),
    ]);
    const totals = projectTotals(project("running"), grown, started + 12.5);
    expect([totals.nodes, totals.agent_calls, totals.input_tokens, totals.elapsed_s]).toEqual([3, 3, 130, 12.5]);
  });

  it("shows what an ended run recorded", () => {
    const stats = { nodes: 3, agent_calls: 7, input_tokens: 900, output_tokens: 80, cost_usd: 0, elapsed_s: 4.2 };
    expect(projectTotals(project("completed", stats), graph, started + 99)).toEqual(stats);
  });

  it("does not show another project's nodes", () => {
    const other = { ...project("running", { nodes: 4 }), project_id: "q" };
    expect(projectTotals(other, graph, started + 5)).toMatchObject({ nodes: 4, elapsed_s: 0 });
  });
});

describe("runStartedAt", () => {
  it("is the root's first status for a first run", () => {
    expect(runStartedAt(root)).toBe(started);
  });

  it("is the first status after the root last ended, for a resumed run", () => {
    const resumed = node("root", {
      history: [
        { status: "READY", at: 10 },
        { status: "CANCELLED", at: 20 },
        { status: "READY", at: 500 },
        { status: "PLANNING", at: 501 },
      ],
    });
    expect(runStartedAt(resumed)).toBe(500);
  });
});

describe("counted and duration", () => {
  it("uses the singular for exactly one", () => {
    expect([counted(0, "node"), counted(1, "node"), counted(2, "node"), counted(1200, "call")]).toEqual([
      "0 nodes", "1 node", "2 nodes", "1,200 calls",
    ]);
  });

  it("shows minutes and hours for long runs", () => {
    expect([duration(0.25), duration(12.34), duration(245), duration(7380)]).toEqual([
      "250 ms", "12.3 s", "4 min 05 s", "2 h 03 min",
    ]);
  });
});
