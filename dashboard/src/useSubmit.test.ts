import { describe, expect, it } from "vitest";
import { type SubmitTarget, submit } from "./useSubmit";

function recorder(): { target: SubmitTarget; seen: string[] } {
  const seen: string[] = [];
  return { seen, target: { busy: (b) => seen.push(`busy ${b}`), error: (e) => seen.push(`error ${e}`) } };
}

describe("submit", () => {
  it("is busy while the action runs and clears the last error as it starts", async () => {
    const { target, seen } = recorder();
    let during: string[] = [];
    await submit(async () => {
      during = [...seen];
    }, target);
    expect(during).toEqual(["busy true", "error null"]);
    expect(seen).toEqual(["busy true", "error null", "busy false"]);
  });

  it("keeps the text of a failure and is no longer busy", async () => {
    const { target, seen } = recorder();
    await submit(() => Promise.reject(new Error("409: the project is running")), target);
    expect(seen).toEqual(["busy true", "error null", "error 409: the project is running", "busy false"]);
  });

  it("keeps what was thrown when it is not an Error", async () => {
    const { target, seen } = recorder();
    await submit(() => Promise.reject("offline"), target);
    expect(seen).toContain("error offline");
  });
});
