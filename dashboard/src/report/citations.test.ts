import { describe, expect, it } from "vitest";
import { referenceId, remarkCitations, safeUrl, splitCitations } from "./citations";

describe("safeUrl", () => {
  it("keeps http(s) and anchors", () => {
    expect(safeUrl("https://example.org/a")).toBe("https://example.org/a");
    expect(safeUrl("#ref-2")).toBe("#ref-2");
  });
  it("drops script and data URLs", () => {
    expect(safeUrl("javascript:alert(1)")).toBeNull();
    expect(safeUrl(" JAVASCRIPT:alert(1)")).toBeNull();
    expect(safeUrl("data:text/html,<script>")).toBeNull();
    expect(safeUrl("file:///etc/passwd")).toBeNull();
  });
});

describe("splitCitations", () => {
  it("turns [n] and [1, 2] into links", () => {
    const parts = splitCitations("A [1] and B [2, 3].");
    const links = parts.filter((p) => p.type === "link").map((p) => p.url);
    expect(links).toEqual(["#ref-1", "#ref-2", "#ref-3"]);
    const text = parts.map((p) => p.value ?? p.children?.[0]?.value).join("");
    expect(text).toBe("A [1] and B [2, 3].");
  });
  it("leaves text without citations alone", () => {
    expect(splitCitations("plain")).toEqual([{ type: "text", value: "plain" }]);
  });
  it("points the links at the ids of a prefixed reference list", () => {
    const links = splitCitations("See [2].", "root.0-").filter((p) => p.type === "link");
    expect(links.map((p) => p.url)).toEqual(["#root.0-ref-2"]);
    expect(referenceId(2, "root.0-")).toBe("root.0-ref-2");
  });
});

describe("remarkCitations", () => {
  it("links citations in text but not in code or links", () => {
    const tree = {
      type: "root",
      children: [
        {
          type: "paragraph",
          children: [
            { type: "text", value: "Lists grow [1]. " },
            { type: "inlineCode", value: "xs[1]" },
            { type: "link", url: "https://example.org", children: [{ type: "text", value: "[3]" }] },
          ],
        },
      ],
    };
    remarkCitations({ prefix: "p-" })(tree);
    const paragraph = tree.children[0]!.children as { type: string; url?: string; value?: string }[];
    expect(paragraph.filter((n) => n.type === "link").map((n) => n.url)).toEqual(["#p-ref-1", "https://example.org"]);
    expect(paragraph.find((n) => n.type === "inlineCode")?.value).toBe("xs[1]");
  });
});
