import { describe, expect, it } from "vitest";
import { safeUrl, splitCitations } from "./citations";

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
});
