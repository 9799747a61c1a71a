import { describe, expect, it } from "vitest";
import { stripBidi } from "./bidi";

describe("stripBidi", () => {
  it("removes every bidi control from nested strings and keys", () => {
    const payload = {
      goal: "Invoice \u202egpj.exe\u202c",
      nodes: [{ result: "\u2066a\u2069 \u200fb\u200e", n: 3 }],
      ["k\u202ay"]: null,
    };
    expect(stripBidi(payload)).toEqual({ goal: "Invoice gpj.exe", nodes: [{ result: "a b", n: 3 }], ky: null });
  });
  it("leaves right-to-left text itself alone", () => {
    expect(stripBidi("\u05e9\u05dc\u05d5\u05dd")).toBe("\u05e9\u05dc\u05d5\u05dd");
  });
});
