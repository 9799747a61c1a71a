import { describe, expect, it } from "vitest";
import { changedOptions, profileOptions } from "./projectOptions";

const general = { name: "general_agent", description: "", settings: { max_depth: 1, review: "none" } };

describe("new-project options", () => {
  it("start from the profile's own values and the server's defaults", () => {
    expect(profileOptions(general)).toEqual({ max_depth: 1, review: "none", language: "", model: "", offline: false });
  });

  it("send nothing the user left as the profile has it", () => {
    expect(changedOptions({}, profileOptions(general))).toEqual({});
    expect(changedOptions({ max_depth: 1, offline: false, model: "  ", language: "" }, profileOptions(general))).toEqual(
      {},
    );
  });

  it("send what the user changed", () => {
    expect(
      changedOptions(
        { max_depth: 3, review: "root", language: " de ", model: "scripted", offline: true },
        profileOptions(general),
      ),
    ).toEqual({ max_depth: 3, review: "root", language: "de", model: "scripted", offline: true });
  });
});
