import { describe, expect, it } from "vitest";
import { panIntoView } from "./view";

describe("panIntoView", () => {
  it("leaves a box that is in view where it is", () => {
    expect(panIntoView({ left: 100, top: 100, right: 340, bottom: 172 }, 800, 600)).toEqual({ dx: 0, dy: 0 });
  });

  it("pans a box hidden on the right or below back in, with a margin", () => {
    expect(panIntoView({ left: 700, top: 560, right: 940, bottom: 632 }, 800, 600, 24)).toEqual({ dx: -164, dy: -56 });
  });

  it("pans a box hidden on the left or above back in", () => {
    expect(panIntoView({ left: -50, top: -10, right: 190, bottom: 62 }, 800, 600, 24)).toEqual({ dx: 74, dy: 34 });
  });

  it("shows the top left of a box larger than the pane", () => {
    expect(panIntoView({ left: 30, top: 0, right: 530, bottom: 72 }, 300, 600, 24)).toEqual({ dx: -6, dy: 24 });
  });
});
