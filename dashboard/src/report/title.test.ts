import { describe, expect, it } from "vitest";
import { withoutTitle } from "./title";

describe("withoutTitle", () => {
  it("drops the opening heading that is the title", () => {
    expect(withoutTitle("# Lists and tuples\n\nLists change [1].", "Lists and tuples")).toBe("Lists change [1].");
  });
  it("keeps a heading that is not the title, and an answer that is only a heading", () => {
    expect(withoutTitle("# Other\n\nText.", "Lists")).toBe("# Other\n\nText.");
    expect(withoutTitle("# Lists", "Lists")).toBe("# Lists");
    expect(withoutTitle("Plain answer.", "Plain answer.")).toBe("Plain answer.");
  });
});
