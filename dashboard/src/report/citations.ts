// Remark plugin and URL policy for untrusted Markdown (LLM output, web content).
// Raw HTML is never interpreted: without rehype-raw, react-markdown renders it as text.
// Citations "[n]" / "[1, 2]" in a text become links to "#<prefix>ref-n". The references they
// point at are not read from the Markdown: the report view lists them from the report's JSON.

interface MdNode {
  type: string;
  value?: string;
  url?: string;
  children?: MdNode[];
  data?: { hProperties?: Record<string, string> };
}

const CITATION = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
const SKIP = new Set(["link", "linkReference", "inlineCode", "code", "definition", "html"]);
const SAFE_URL = /^https?:\/\//i;

/** Only http(s) links and in-page anchors survive; everything else (javascript:, data:, …) is dropped. */
export function safeUrl(url: string): string | null {
  const trimmed = url.trim();
  if (trimmed.startsWith("#")) return trimmed;
  return SAFE_URL.test(trimmed) ? trimmed : null;
}

/** The element id of reference `n` in a cited text whose anchors start with `prefix`. */
export function referenceId(n: number | string, prefix = ""): string {
  return `${prefix}ref-${n}`;
}

function citationLink(n: string, prefix: string): MdNode {
  return {
    type: "link",
    url: `#${referenceId(n, prefix)}`,
    children: [{ type: "text", value: n }],
    data: { hProperties: { className: "citation", "data-ref": n } },
  };
}

/** Split one text node into text and citation links. */
export function splitCitations(value: string, prefix = ""): MdNode[] {
  const out: MdNode[] = [];
  let last = 0;
  for (const match of value.matchAll(CITATION)) {
    const at = match.index ?? 0;
    if (at > last) out.push({ type: "text", value: value.slice(last, at) });
    const numbers = (match[1] ?? "").split(",").map((s) => s.trim());
    out.push({ type: "text", value: "[" });
    numbers.forEach((n, i) => {
      if (i > 0) out.push({ type: "text", value: ", " });
      out.push(citationLink(n, prefix));
    });
    out.push({ type: "text", value: "]" });
    last = at + match[0].length;
  }
  if (last < value.length) out.push({ type: "text", value: value.slice(last) });
  return out;
}

function linkCitations(node: MdNode, prefix: string): void {
  if (!node.children || SKIP.has(node.type)) return;
  const next: MdNode[] = [];
  for (const child of node.children) {
    if (child.type === "text" && child.value && CITATION.test(child.value)) {
      CITATION.lastIndex = 0;
      next.push(...splitCitations(child.value, prefix));
    } else {
      linkCitations(child, prefix);
      next.push(child);
    }
  }
  CITATION.lastIndex = 0;
  node.children = next;
}

/** The remark plugin: `remarkPlugins={[[remarkCitations, { prefix }]]}` (the prefix defaults to ""). */
export function remarkCitations(options?: { prefix?: string }) {
  const prefix = options?.prefix ?? "";
  return (tree: unknown): void => {
    linkCitations(tree as MdNode, prefix);
  };
}
