import { describe, expect, it } from "vitest";
import { node } from "../testFixtures";
import { applyNodeUpdate, emptyGraph, graphFromSnapshot } from "./graphState";

describe("applyNodeUpdate", () => {
  const base = graphFromSnapshot(
    "p",
    { root: node("root", { children: ["root.0"] }), "root.0": node("root.0") },
    "root",
    emptyGraph,
  );

  it("replaces only the updated nodes and keeps the others' identity", () => {
    const next = applyNodeUpdate(base, [node("root.0", { status: "DONE" })]);
    expect(next.nodes.get("root.0")?.status).toBe("DONE");
    expect(next.nodes.get("root")).toBe(base.nodes.get("root"));
    expect(base.nodes.get("root.0")?.status).toBe("PENDING");
  });

  it("keeps the structure version for a status change", () => {
    const next = applyNodeUpdate(base, [node("root.0", { status: "EXECUTING" })]);
    expect(next.structure).toBe(base.structure);
  });

  it("bumps the structure version when nodes are added or removed", () => {
    const added = applyNodeUpdate(base, [node("root.1")]);
    expect(added.structure).toBe(base.structure + 1);
    const removed = applyNodeUpdate(added, [], ["root.1"]);
    expect(removed.structure).toBe(added.structure + 1);
    expect(removed.nodes.has("root.1")).toBe(false);
  });

  it("bumps the structure version when dependencies change", () => {
    const next = applyNodeUpdate(base, [node("root.0", { depends_on: ["root.1"] })]);
    expect(next.structure).toBe(base.structure + 1);
  });

  it("returns the same state for an empty diff", () => {
    expect(applyNodeUpdate(base, [], [])).toBe(base);
  });
});
