import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it, vi } from "vitest";
import { countInputTokens, countTokens, tokenizerStats, tokensAtMost } from "../src/models/tokens.js";

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

describe("countInputTokens: counts kept per message, the encoder loaded on first exact count", () => {
  const turn = (i: number): BaseMessage[] => [
    new AIMessage({
      content: `step ${i}`,
      id: `ai-${i}`,
      tool_calls: [{ id: `c${i}`, name: "shell", args: { command: `make test-${i}` } }],
    }),
    new ToolMessage({
      content: `output of step ${i}\n${"ok line of a log\n".repeat(200)}`,
      tool_call_id: `c${i}`,
      name: "shell",
      id: `tool-${i}`,
    }),
  ];

  it("a history within the bound is never counted exactly: no encoder is loaded", async () => {
    // A fresh module instance, as in a new process.
    vi.resetModules();
    const fresh = await import("../src/models/tokens.js");
    const history = [new HumanMessage("the task"), ...turn(1), ...turn(2)];
    const result = fresh.overBudget(history, 100_000);
    expect(result).toMatchObject({ over: false });
    expect(fresh.tokenizerStats).toEqual({ loaded: false, encodedTexts: 0 });
    // Near the budget it counts: the same decision as the exact count, on both sides of it.
    const exact = fresh.countInputTokens(history);
    expect(fresh.tokenizerStats.loaded).toBe(true);
    expect(fresh.overBudget(history, exact)).toEqual({ over: false, tokens: exact, atMost: expect.any(Number) });
    expect(fresh.overBudget(history, exact - 1)).toEqual({ over: true, tokens: exact });
  });

  it("the estimates (the scripted model's usage) load no encoder: a quarter of the characters, with the messages' framing", async () => {
    vi.resetModules();
    const fresh = await import("../src/models/tokens.js");
    const history = [new HumanMessage("the task"), ...turn(1)];
    const input = fresh.estimateInputTokens(history);
    expect(fresh.tokenizerStats).toEqual({ loaded: false, encodedTexts: 0 });
    expect(fresh.estimateTokens("abcdefghi")).toBe(3);
    // Each message: 3 tokens of framing, its type's and its text's estimates; 3 to prime the reply.
    expect(fresh.estimateInputTokens([new HumanMessage("abcdefgh")])).toBe(3 + 3 + 2 + 2);
    expect(input).toBeGreaterThan(fresh.estimateInputTokens([new HumanMessage("the task")]));
  });

  it("the bound is never below the exact count (so a history under it is under the budget)", () => {
    const texts = [
      "hello world",
      "ünïcödé ✓ 日本語のテキスト",
      "<|endoftext|>",
      "x".repeat(3000),
      `a${" b".repeat(500)}`,
      "🙂🙃".repeat(50),
    ];
    for (const text of texts) expect(tokensAtMost(text)).toBeGreaterThanOrEqual(countTokens(text));
  });

  it("counts each message once: a growing history costs only its new messages, and the total is unchanged", () => {
    const history: BaseMessage[] = [new HumanMessage("the task")];
    for (let i = 0; i < 5; i++) history.push(...turn(i));
    const total = countInputTokens(history);
    const before = tokenizerStats.encodedTexts;
    expect(countInputTokens(history)).toBe(total);
    expect(tokenizerStats.encodedTexts).toBe(before);

    history.push(...turn(5));
    const grown = countInputTokens(history);
    // The AI message's type, text, tool name and arguments; the tool message's type and text; its name.
    expect(tokenizerStats.encodedTexts - before).toBe(7);
    // The same as counting the same history, made anew, from scratch.
    expect(countInputTokens([new HumanMessage("the task"), ...[0, 1, 2, 3, 4, 5].flatMap(turn)])).toBe(grown);
  });

  it("a message whose content changes is counted again", () => {
    const message = new HumanMessage("short");
    const short = countInputTokens([message]);
    message.content = "a much longer text than the short one it replaced";
    expect(countInputTokens([message])).toBeGreaterThan(short);
  });
});

describe("countTokens: recent long texts", () => {
  it("a long text made anew with the same content (a system prompt rebuilt at every step) is not encoded again", () => {
    const prompt = () => new SystemMessage(`You are the Coder.\n${"Follow the project's rules, keep changes small.\n".repeat(40)}`);
    const first = countInputTokens([prompt()]);
    const before = tokenizerStats.encodedTexts;
    expect(countInputTokens([prompt()])).toBe(first);
    // Only the message type ("system") is encoded again.
    expect(tokenizerStats.encodedTexts - before).toBe(1);
  });
});
