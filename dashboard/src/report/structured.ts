// The structured answer (runs with an output schema) as the Markdown the report view renders, as
// report.md lays it out: the JSON pretty-printed in a code block, then the citations of each of
// its fields, whose "[n]" link to the structured answer's own references.

import type { StructuredAnswer } from "../api/types";

/** The anchors of the structured answer's references start with this (`structured-ref-n`). */
export const STRUCTURED_PREFIX = "structured-";

/** `text` as a Markdown code span, whatever backticks it holds. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const padding = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${padding}${text}${padding}${fence}`;
}

export function structuredMarkdown(structured: StructuredAnswer): string {
  let text = "```json\n" + JSON.stringify(structured.value, null, 2) + "\n```";
  const cited = Object.entries(structured.citations);
  if (cited.length > 0) {
    text += "\n\nCitations per field:\n\n" + cited.map(([pointer, numbers]) => `- ${code(pointer)} [${numbers.join(", ")}]`).join("\n");
  }
  return text;
}
