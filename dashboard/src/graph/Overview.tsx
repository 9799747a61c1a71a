// The zoomed-out view of a big tree: one canvas instead of a DOM element per task. Below
// DETAIL_ZOOM node text is unreadable anyway, and painting a thousand DOM boxes (plus their
// handles and SVG edges) is what made large snapshots slow to show. The canvas follows the
// React Flow viewport and redraws at most once a frame when statuses change.

import { useStore as useFlowStore, type ReactFlowState } from "@xyflow/react";
import { useEffect, useRef } from "react";
import { useStore } from "../state/store";
import { statusColour } from "./export";
import { DEP_IN_Y, DEP_OUT_Y, dependencyBulge, NODE_HEIGHT, NODE_WIDTH, type Layout } from "./layout";

const transformSelector = (s: ReactFlowState) => s.transform;
const sizeSelector = (s: ReactFlowState) => `${s.width}x${s.height}`;

export function Overview({ layout }: { layout: Layout }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [x, y, zoom] = useFlowStore(transformSelector);
  const size = useFlowStore(sizeSelector);
  const nodes = useStore((s) => s.graph.nodes);
  const selected = useStore((s) => s.selected);

  useEffect(() => {
    const frame = requestAnimationFrame(() => {
      const el = canvas.current;
      const ctx = el?.getContext("2d");
      if (!el || !ctx) return;
      const dpr = window.devicePixelRatio || 1;
      const { clientWidth: w, clientHeight: h } = el;
      if (el.width !== Math.round(w * dpr) || el.height !== Math.round(h * dpr)) {
        el.width = Math.round(w * dpr);
        el.height = Math.round(h * dpr);
      }
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, el.width, el.height);
      ctx.setTransform(dpr * zoom, 0, 0, dpr * zoom, dpr * x, dpr * y);
      const at = new Map(layout.nodes.map((p) => [p.id, p]));
      ctx.lineWidth = Math.max(0.5, Math.min(1.5, zoom * 20)) / zoom; // in screen pixels: thin when far out
      ctx.strokeStyle = "#cbd5e1";
      ctx.beginPath();
      for (const e of layout.edges) {
        if (e.kind !== "tree") continue;
        const s = at.get(e.source);
        const t = at.get(e.target);
        if (!s || !t) continue;
        const mx = s.x + NODE_WIDTH + (t.x - s.x - NODE_WIDTH) / 2;
        ctx.moveTo(s.x + NODE_WIDTH, s.y + NODE_HEIGHT / 2);
        ctx.lineTo(mx, s.y + NODE_HEIGHT / 2);
        ctx.lineTo(mx, t.y + NODE_HEIGHT / 2);
        ctx.lineTo(t.x, t.y + NODE_HEIGHT / 2);
      }
      ctx.stroke();
      ctx.strokeStyle = "#6366f1";
      ctx.beginPath();
      for (const e of layout.edges) {
        if (e.kind !== "dependency") continue;
        const s = at.get(e.source);
        const t = at.get(e.target);
        if (!s || !t) continue;
        const sx = s.x + NODE_WIDTH;
        const sy = s.y + DEP_OUT_Y;
        const ty = t.y + DEP_IN_Y;
        const bulge = dependencyBulge(sy, ty);
        ctx.moveTo(sx, sy);
        ctx.bezierCurveTo(sx + bulge, sy, sx + bulge, ty, sx, ty);
      }
      ctx.stroke();
      for (const p of layout.nodes) {
        ctx.fillStyle = statusColour(nodes.get(p.id)?.status ?? "PENDING");
        ctx.fillRect(p.x, p.y, NODE_WIDTH, NODE_HEIGHT);
      }
      const sel = selected ? at.get(selected) : undefined;
      if (sel) {
        ctx.lineWidth = 4 / zoom;
        ctx.strokeStyle = "#4f46e5";
        ctx.strokeRect(sel.x - 6 / zoom, sel.y - 6 / zoom, NODE_WIDTH + 12 / zoom, NODE_HEIGHT + 12 / zoom);
      }
      el.dataset.drawnNodes = String(layout.nodes.length);
    });
    return () => cancelAnimationFrame(frame);
  }, [layout, nodes, selected, x, y, zoom, size]);

  return <canvas ref={canvas} className="overview-canvas" data-testid="graph-overview" />;
}
