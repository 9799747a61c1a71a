// Graph exports: JSON (the nodes as the server sent them), SVG drawn from the layout, and
// PNG rasterised from that SVG. No DOM scraping, so the export is the whole tree, not the viewport.

import type { TaskNode } from "../api/types";
import { layoutTree, NODE_HEIGHT, NODE_WIDTH } from "./layout";

const STATUS_COLOURS: Record<string, string> = {
  DONE: "#16a34a",
  FAILED: "#dc2626",
  CANCELLED: "#6b7280",
  EXECUTING: "#2563eb",
  PLANNING: "#7c3aed",
  PLAN_MODIFICATION: "#7c3aed",
  ATOMIZATION: "#7c3aed",
  AGGREGATING: "#0891b2",
  PLAN_DONE: "#0e7490",
  NEEDS_REPLAN: "#d97706",
  READY: "#ca8a04",
  PENDING: "#9ca3af",
};

export function statusColour(status: string): string {
  return STATUS_COLOURS[status] ?? "#9ca3af";
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function graphToJson(projectId: string, root: string | null, nodes: ReadonlyMap<string, TaskNode>): string {
  return JSON.stringify({ project_id: projectId, root, nodes: Object.fromEntries(nodes) }, null, 2);
}

export function graphToSvg(nodes: ReadonlyMap<string, TaskNode>): { svg: string; width: number; height: number } {
  const layout = layoutTree(nodes);
  const pad = 24;
  const width = Math.ceil(layout.width + 2 * pad);
  const height = Math.ceil(layout.height + 2 * pad);
  const at = new Map(layout.nodes.map((p) => [p.id, p]));
  const parts: string[] = [];
  for (const e of layout.edges) {
    const s = at.get(e.source);
    const t = at.get(e.target);
    if (!s || !t) continue;
    if (e.kind === "tree") {
      const x1 = s.x + NODE_WIDTH + pad;
      const y1 = s.y + NODE_HEIGHT / 2 + pad;
      const x2 = t.x + pad;
      const y2 = t.y + NODE_HEIGHT / 2 + pad;
      const mx = (x1 + x2) / 2;
      parts.push(`<path d="M${x1},${y1} H${mx} V${y2} H${x2}" fill="none" stroke="#cbd5e1" stroke-width="1.5"/>`);
    } else {
      const x = s.x + NODE_WIDTH + pad;
      const y1 = s.y + NODE_HEIGHT * 0.3 + pad;
      const y2 = t.y + NODE_HEIGHT * 0.7 + pad;
      const bulge = Math.min(70, 28 + Math.abs(y2 - y1) * 0.12);
      parts.push(
        `<path d="M${x},${y1} C${x + bulge},${y1} ${x + bulge},${y2} ${x},${y2}" fill="none" stroke="#6366f1" stroke-width="1.5" stroke-dasharray="5 4"/>`,
      );
    }
  }
  for (const p of layout.nodes) {
    const n = nodes.get(p.id);
    if (!n) continue;
    const x = p.x + pad;
    const y = p.y + pad;
    const colour = statusColour(n.status);
    parts.push(
      `<g><rect x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="8" fill="#ffffff" stroke="${colour}" stroke-width="2"/>` +
        `<rect x="${x}" y="${y}" width="5" height="${NODE_HEIGHT}" rx="2" fill="${colour}"/>` +
        `<text x="${x + 14}" y="${y + 22}" font-size="12" font-weight="600" fill="#0f172a">${escapeXml(`${n.task_type} · ${n.task_id} · ${n.status}`)}</text>` +
        `<text x="${x + 14}" y="${y + 44}" font-size="12" fill="#334155">${escapeXml(clip(n.goal, 34))}</text>` +
        `<text x="${x + 14}" y="${y + 60}" font-size="12" fill="#334155">${escapeXml(clip(n.goal.slice(33), 34))}</text></g>`,
    );
  }
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">` +
    `<rect width="100%" height="100%" fill="#f8fafc"/>${parts.join("")}</svg>`;
  return { svg, width, height };
}

/** Rasterise the SVG export. Very large trees are scaled down to stay within canvas limits. */
export async function graphToPng(nodes: ReadonlyMap<string, TaskNode>): Promise<Blob> {
  const { svg, width, height } = graphToSvg(nodes);
  const scale = Math.min(2, 16000 / Math.max(width, height));
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.floor(width * scale));
    canvas.height = Math.max(1, Math.floor(height * scale));
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("no 2D canvas");
    ctx.scale(scale, scale);
    ctx.drawImage(image, 0, 0);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG export failed"))), "image/png"),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}

export function download(name: string, data: Blob | string, type = "application/octet-stream"): void {
  const blob = typeof data === "string" ? new Blob([data], { type }) : data;
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
