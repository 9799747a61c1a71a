// bench/dashboard_bench.py feeds a synthetic 1,000-node snapshot and a stream of node
// updates straight into the store (no server needed). Only installed with `?bench` in the
// URL; it exposes nothing the page's own code could not already do.

import type { SnapshotEvent, TaskNode } from "./api/types";
import { useStore } from "./state/store";

declare global {
  interface Window {
    sentientBench?: {
      open(projectId: string): void;
      snapshot(event: SnapshotEvent): void;
      nodeUpdate(projectId: string, nodes: TaskNode[]): void;
      node(id: string): TaskNode | undefined;
    };
  }
}

export function installBenchHook(): void {
  if (!new URLSearchParams(window.location.search).has("bench")) return;
  window.sentientBench = {
    open: (projectId) => useStore.getState().open(projectId),
    snapshot: (event) => useStore.getState().snapshot(event),
    nodeUpdate: (projectId, nodes) => useStore.getState().nodeUpdate(projectId, nodes, []),
    node: (id) => useStore.getState().graph.nodes.get(id),
  };
}
