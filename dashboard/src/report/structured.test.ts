import { describe, expect, it } from "vitest";
import { structuredMarkdown } from "./structured";

describe("structuredMarkdown", () => {
  it("is the JSON in a code block and the citations of each field", () => {
    const text = structuredMarkdown({
      value: { name: "Ada", tags: ["x"] },
      citations: { "/name": [1], "/tags/0": [1, 2] },
      references: [],
    });
    expect(text).toBe(
      '```json\n{\n  "name": "Ada",\n  "tags": [\n    "x"\n  ]\n}\n```\n\nCitations per field:\n\n- `/name` [1]\n- `/tags/0` [1, 2]',
    );
  });

  it("keeps a pointer with backticks a code span, and lists nothing when no field cites", () => {
    expect(structuredMarkdown({ value: { "a`b": "c" }, citations: { "/a`b": [3] }, references: [] })).toContain("- ``/a`b`` [3]");
    expect(structuredMarkdown({ value: 7, citations: {}, references: [] })).toBe("```json\n7\n```");
  });
});
