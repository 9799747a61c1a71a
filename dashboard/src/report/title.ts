// A complete report's title is shown as its heading; the server takes it from the answer's own
// "# heading" when the answer opens with one (sentient/report/build.py opening_heading), so that
// heading is not shown twice.

/** The answer without the "# heading" it opens with, when that heading is the report's title. */
export function withoutTitle(answer: string, title: string): string {
  const [first = "", ...rest] = answer.trimStart().split("\n");
  const heading = /^#\s+(.+?)\s*#*\s*$/.exec(first)?.[1];
  const body = rest.join("\n").trim();
  return heading !== undefined && heading.trim() === title && body ? body : answer;
}
