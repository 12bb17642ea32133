import { describe, expect, it } from "vitest";
import { countTokens } from "../src/models/tokens.js";

describe("countTokens", () => {
  it("counts ordinary text with the bundled encoding", () => {
    expect(countTokens("hello world")).toBe(2);
    expect(countTokens("")).toBe(0);
  });

  it("estimates runs of 256+ characters without white space at four characters a token (BPE is quadratic on them)", () => {
    expect(countTokens("x".repeat(30_000))).toBe(7_500);
    expect(countTokens(`ok ${"ab".repeat(200)} ok`)).toBe(countTokens("ok  ok") + 100);
  });

  it("treats special-token markers in text as ordinary text", () => {
    expect(countTokens("<|endoftext|>")).toBeGreaterThan(1);
  });
});
