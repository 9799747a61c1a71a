// Graph exports: JSON (the nodes as the server sent them), SVG drawn from the layout, and
// PNG rasterised from that SVG. No DOM scraping, so the export is the whole tree, not the viewport.

import type { TaskNode } from "../api/types";
import { DEP_IN_Y, DEP_OUT_Y, dependencyBulge, layoutTree, NODE_HEIGHT, NODE_WIDTH } from "./layout";

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

/** Width of the text area of a node, in px (its left border and padding, and a right margin, off). */
const TEXT_WIDTH = NODE_WIDTH - 24;
const GOAL_LINES = 2;
const FONT_FAMILY = "system-ui, sans-serif";
const GOAL_FONT = `12px ${FONT_FAMILY}`;
const HEAD_FONT = `600 11px ${FONT_FAMILY}`;
const HEAD_STATUS_FONT = `700 10px ${FONT_FAMILY}`;

/** Measures a text's width in px in a CSS font ("12px system-ui, sans-serif"). */
export type Measure = (text: string, font: string) => number;

/** The browser's own measure, in the fonts the image is drawn with; about 0.6 em a character without a DOM. */
export function browserMeasure(): Measure {
  const ctx = typeof document === "undefined" ? null : document.createElement("canvas").getContext("2d");
  if (!ctx) return (text, font) => text.length * 0.6 * (Number.parseFloat(font.replace(/^\d00 /, "")) || 12);
  return (text, font) => {
    ctx.font = font;
    return ctx.measureText(text).width;
  };
}

/** The longest start of ``text`` that ``fits`` with "…" after it, and the "…". */
function cut(text: string, fits: (line: string) => boolean): string {
  let end = text.length;
  while (end > 0 && !fits(`${text.slice(0, end)}…`)) end -= 1;
  return `${text.slice(0, end)}…`;
}

/**
 * ``text`` in at most ``lines`` lines that each ``fits``, broken between words (a word too long
 * for a whole line is broken where it must be). Text that does not fit ends the last line with "…".
 */
export function wrapWords(text: string, fits: (line: string) => boolean, lines: number): string[] {
  const words = text.split(/\s+/).filter(Boolean).flatMap((word) => {
    const parts: string[] = [];
    let rest = word;
    while (rest.length > 1 && !fits(rest)) {
      let end = rest.length - 1;
      while (end > 1 && !fits(rest.slice(0, end))) end -= 1;
      parts.push(rest.slice(0, end));
      rest = rest.slice(end);
    }
    if (rest) parts.push(rest);
    return parts;
  });
  const out: string[] = [];
  let line = "";
  for (const word of words) {
    const joined = line ? `${line} ${word}` : word;
    if (fits(joined)) {
      line = joined;
      continue;
    }
    if (line) out.push(line);
    line = word;
    if (out.length === lines) break; // this word and the rest do not fit
  }
  if (out.length < lines) {
    if (line) out.push(line);
    return out;
  }
  // Cut: drop words from the last line until the ellipsis fits after it.
  const last = (out.pop() ?? "").split(" ");
  while (last.length > 1 && !fits(`${last.join(" ")} …`)) last.pop();
  const kept = last.join(" ");
  out.push(fits(`${kept} …`) ? `${kept} …` : cut(kept, fits));
  return out;
}

export function graphToJson(projectId: string, root: string | null, nodes: ReadonlyMap<string, TaskNode>): string {
  return JSON.stringify({ project_id: projectId, root, nodes: Object.fromEntries(nodes) }, null, 2);
}

/** The whole tree as an SVG image: every node and edge (dependency arcs included), goals wrapped at words. */
export function graphToSvg(
  nodes: ReadonlyMap<string, TaskNode>,
  measure: Measure = browserMeasure(),
): { svg: string; width: number; height: number } {
  const layout = layoutTree(nodes);
  const pad = 24;
  const width = Math.ceil(layout.width + 2 * pad);
  const height = Math.ceil(layout.height + 2 * pad);
  const at = new Map(layout.nodes.map((p) => [p.id, p]));
  const parts: string[] = [];
  const clips: string[] = []; // each node's text is clipped to its box
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
      parts.push(`<path class="tree-edge" d="M${x1},${y1} H${mx} V${y2} H${x2}" fill="none" stroke="#cbd5e1" stroke-width="1.5"/>`);
    } else {
      const x = s.x + NODE_WIDTH + pad;
      const y1 = s.y + DEP_OUT_Y + pad;
      const y2 = t.y + DEP_IN_Y + pad;
      const bulge = dependencyBulge(y1, y2);
      parts.push(
        `<path class="dependency-edge" d="M${x},${y1} C${x + bulge},${y1} ${x + bulge},${y2} ${x},${y2}" fill="none" stroke="#6366f1" stroke-width="1.5" stroke-dasharray="5 4" marker-end="url(#arrow)"/>`,
      );
    }
  }
  layout.nodes.forEach((p, i) => {
    const n = nodes.get(p.id);
    if (!n) return;
    const x = p.x + pad;
    const y = p.y + pad;
    const colour = statusColour(n.status);
    const status = n.status.replace("_", " ");
    // The status is right-aligned; the type and id get what is left of the line.
    const headRoom = TEXT_WIDTH - measure(status, HEAD_STATUS_FONT) - 8;
    const head = `${n.task_type} · ${n.task_id}`;
    const headText = measure(head, HEAD_FONT) <= headRoom ? head : cut(head, (t) => measure(t, HEAD_FONT) <= headRoom);
    clips.push(`<clipPath id="node-${i}"><rect x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="8"/></clipPath>`);
    const goal = wrapWords(n.goal, (line) => measure(line, GOAL_FONT) <= TEXT_WIDTH, GOAL_LINES)
      .map((line, k) => `<text class="goal" x="${x + 14}" y="${y + 42 + 16 * k}" font-size="12" fill="#334155">${escapeXml(line)}</text>`)
      .join("");
    parts.push(
      `<g clip-path="url(#node-${i})">` +
        `<rect x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="8" fill="#ffffff" stroke="${colour}" stroke-width="2"/>` +
        `<rect x="${x}" y="${y}" width="5" height="${NODE_HEIGHT}" rx="2" fill="${colour}"/>` +
        `<text x="${x + 14}" y="${y + 20}" font-size="11" font-weight="600" fill="#0f172a">${escapeXml(headText)}</text>` +
        `<text x="${x + NODE_WIDTH - 10}" y="${y + 20}" font-size="10" font-weight="700" fill="${colour}" text-anchor="end">${escapeXml(status)}</text>` +
        `${goal}</g>`,
    );
  });
  const arrow =
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto">` +
    `<path d="M0,0 L10,5 L0,10 z" fill="#6366f1"/></marker>${clips.join("")}</defs>`;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT_FAMILY}">` +
    `${arrow}<rect width="100%" height="100%" fill="#f8fafc"/>${parts.join("")}</svg>`;
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
