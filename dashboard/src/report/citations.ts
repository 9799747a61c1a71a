// Remark plugin and URL policy for untrusted Markdown (LLM output, web content).
// Raw HTML is never interpreted: without rehype-raw, react-markdown renders it as text.
// Citations "[n]" / "[1, 2]" become links to "#ref-n"; the items of the ordered list under a
// "References" heading get the ids "ref-n"; code spans there that hold an http(s) URL become links.

interface MdNode {
  type: string;
  value?: string;
  url?: string;
  depth?: number;
  ordered?: boolean | null;
  start?: number | null;
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

function citationLink(n: string): MdNode {
  return {
    type: "link",
    url: `#ref-${n}`,
    children: [{ type: "text", value: n }],
    data: { hProperties: { className: "citation", "data-ref": n } },
  };
}

/** Split one text node into text and citation links. */
export function splitCitations(value: string): MdNode[] {
  const out: MdNode[] = [];
  let last = 0;
  for (const match of value.matchAll(CITATION)) {
    const at = match.index ?? 0;
    if (at > last) out.push({ type: "text", value: value.slice(last, at) });
    const numbers = (match[1] ?? "").split(",").map((s) => s.trim());
    out.push({ type: "text", value: "[" });
    numbers.forEach((n, i) => {
      if (i > 0) out.push({ type: "text", value: ", " });
      out.push(citationLink(n));
    });
    out.push({ type: "text", value: "]" });
    last = at + match[0].length;
  }
  if (last < value.length) out.push({ type: "text", value: value.slice(last) });
  return out;
}

function linkCitations(node: MdNode): void {
  if (!node.children || SKIP.has(node.type)) return;
  const next: MdNode[] = [];
  for (const child of node.children) {
    if (child.type === "text" && child.value && CITATION.test(child.value)) {
      CITATION.lastIndex = 0;
      next.push(...splitCitations(child.value));
    } else {
      linkCitations(child);
      next.push(child);
    }
  }
  CITATION.lastIndex = 0;
  node.children = next;
}

function textOf(node: MdNode): string {
  return node.value ?? (node.children ?? []).map(textOf).join("");
}

function urlsToLinks(node: MdNode): void {
  node.children = (node.children ?? []).map((child) => {
    if (child.type === "inlineCode" && child.value && SAFE_URL.test(child.value)) {
      return { type: "link", url: child.value, children: [{ type: "text", value: child.value }] };
    }
    urlsToLinks(child);
    return child;
  });
}

function markReferences(root: MdNode): void {
  const children = root.children ?? [];
  children.forEach((node, i) => {
    if (node.type !== "heading" || textOf(node).trim().toLowerCase() !== "references") return;
    const list = children[i + 1];
    if (!list || list.type !== "list" || !list.ordered) return;
    const start = list.start ?? 1;
    (list.children ?? []).forEach((item, k) => {
      item.data = { hProperties: { id: `ref-${start + k}`, className: "reference" } };
      urlsToLinks(item);
    });
  });
}

/** The remark plugin: `remarkPlugins={[remarkCitations]}`. */
export function remarkCitations() {
  return (tree: unknown): void => {
    const root = tree as MdNode;
    markReferences(root);
    linkCitations(root);
  };
}
