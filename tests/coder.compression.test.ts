import { describe, expect, it, vi } from "vitest";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { messagesStateReducer } from "@langchain/langgraph";
import { SUMMARY_MARKER, compressHistory, compressionUpdate, type CompressionOptions } from "../src/nodes/coder/compression.js";
import { countInputTokens } from "../src/models/tokens.js";

const TASK = "Add a --verbose flag to the CLI and test it";

/** One turn: an AI message calling read_file on each path, and a tool result per call. */
function turn(index: number, paths: string[]): BaseMessage[] {
  const calls = paths.map((path, call) => ({ id: `call-${index}-${call}`, name: "read_file", args: { path }, type: "tool_call" as const }));
  return [
    new AIMessage({ id: `ai-${index}`, content: `Step ${index}: reading ${paths.join(", ")}`, tool_calls: calls }),
    ...calls.map(
      (call) =>
        new ToolMessage({
          id: `result-${call.id}`,
          tool_call_id: call.id,
          name: call.name,
          content: `contents of ${String(call.args.path)}\n${"const line = 1;\n".repeat(40)}`,
        }),
    ),
  ];
}

/** System prompt, task, then `turnCount` turns; the second one has two parallel tool calls. */
function history(turnCount: number): BaseMessage[] {
  const turns = Array.from({ length: turnCount }, (_, index) =>
    turn(index, index === 1 ? [`src/file${index}.ts`, "src/extra.ts"] : [`src/file${index}.ts`]),
  );
  return [
    new SystemMessage({ id: "system", content: "You are the Coder." }),
    new HumanMessage({ id: "task", content: TASK }),
    ...turns.flat(),
  ];
}

function options(overrides: Partial<CompressionOptions> = {}): CompressionOptions {
  return {
    budgetTokens: 500,
    filesChanged: ["src/cli.ts", "tests/cli.test.ts"],
    summarise: async () => "Read the CLI sources; the flag parser is in src/cli.ts.",
    ...overrides,
  };
}

const ids = (messages: readonly BaseMessage[]): (string | undefined)[] => messages.map((message) => message.id);

/** Every tool result answers a call of an earlier AI message, and every call has its result. */
function expectNoOrphanToolMessages(messages: readonly BaseMessage[]): void {
  const called = new Set<string>();
  const answered = new Set<string>();
  for (const message of messages) {
    if (message instanceof AIMessage) for (const call of message.tool_calls ?? []) called.add(call.id!);
    if (message instanceof ToolMessage) {
      expect(called.has(message.tool_call_id), `orphan tool result ${message.tool_call_id}`).toBe(true);
      answered.add(message.tool_call_id);
    }
  }
  expect([...called].filter((id) => !answered.has(id))).toEqual([]);
}

describe("compressHistory", () => {
  it("summarises the older turns and keeps system, task and the latest turns verbatim", async () => {
    const messages = history(6);
    const summarise = vi.fn(async (older: BaseMessage[]) => `Summary of ${older.length} messages: read the CLI sources.`);
    const result = await compressHistory(messages, options({ summarise }));
    if (!result.compressed) throw new Error(result.reason);

    // Turns 0-2 (3 AI messages + 4 tool results) go to summarise, exactly and in order.
    expect(summarise).toHaveBeenCalledTimes(1);
    const older = summarise.mock.calls[0]![0];
    expect(ids(older)).toEqual(ids(messages.slice(2, 9)));
    expect(ids(older)).toEqual(["ai-0", "result-call-0-0", "ai-1", "result-call-1-0", "result-call-1-1", "ai-2", "result-call-2-0"]);
    expect(result.removedCount).toBe(7);

    const [system, task, summary, ...recent] = result.messages;
    expect(system).toBe(messages[0]);
    expect(task).toBe(messages[1]);
    expect(recent).toEqual(messages.slice(9));
    expect(ids(recent)).toEqual(["ai-3", "result-call-3-0", "ai-4", "result-call-4-0", "ai-5", "result-call-5-0"]);
    recent.forEach((message, index) => expect(message).toBe(messages[9 + index]));

    expect(summary).toBeInstanceOf(HumanMessage);
    expect(summary!.text.startsWith(`${SUMMARY_MARKER}\nSummary of 7 messages: read the CLI sources.`)).toBe(true);
    expect(summary!.text).toContain("Files changed so far: src/cli.ts, tests/cli.test.ts");

    expectNoOrphanToolMessages(result.messages);
    expect(result.tokensBefore).toBe(countInputTokens(messages));
    expect(result.tokensAfter).toBe(countInputTokens(result.messages));
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
  });

  it("never splits a turn with parallel tool calls from its results", async () => {
    const messages = history(4);
    // Keeping 3 turns cuts right before turn 1, whose AI message has two tool calls.
    const result = await compressHistory(messages, options());
    if (!result.compressed) throw new Error(result.reason);
    expect(ids(result.messages.slice(3))).toEqual(ids(messages.slice(4)));
    expect(result.messages[3]!.id).toBe("ai-1");
    expectNoOrphanToolMessages(result.messages);
  });

  it("keeps the number of recent turns asked for and the system messages among the older turns", async () => {
    const note = new SystemMessage({ id: "note", content: "Approval mode changed to auto-edit." });
    const messages = [...history(5).slice(0, 5), note, ...history(5).slice(5)];
    const summarise = vi.fn(async (_older: BaseMessage[]) => "short summary");
    const result = await compressHistory(messages, options({ keepRecentTurns: 1, summarise }));
    if (!result.compressed) throw new Error(result.reason);

    expect(ids(summarise.mock.calls[0]![0])).not.toContain("note");
    expect(ids(result.messages).slice(0, 3)).toEqual(["system", "task", "note"]);
    expect(ids(result.messages.slice(4))).toEqual(["ai-4", "result-call-4-0"]);
    expect(result.messages[3]!.text).toContain("Files changed so far:");
  });

  it("lists no files changed as none", async () => {
    const result = await compressHistory(history(6), options({ filesChanged: [] }));
    if (!result.compressed) throw new Error(result.reason);
    expect(result.messages[2]!.text).toContain("Files changed so far: none");
  });

  it("does nothing within the budget", async () => {
    const messages = history(6);
    const summarise = vi.fn(async () => "unused");
    const result = await compressHistory(messages, options({ budgetTokens: countInputTokens(messages), summarise }));
    expect(result).toEqual({ compressed: false, reason: expect.stringMatching(/within the budget/) });
    expect(summarise).not.toHaveBeenCalled();
  });

  it("does nothing when there are no turns older than the ones kept", async () => {
    const summarise = vi.fn(async () => "unused");
    const result = await compressHistory(history(3), options({ budgetTokens: 10, summarise }));
    expect(result).toEqual({ compressed: false, reason: "nothing to summarise: no turns before the latest 3" });
    expect(summarise).not.toHaveBeenCalled();
  });

  it("rejects a summary that does not shrink the history", async () => {
    const result = await compressHistory(history(6), options({ summarise: async () => "very long summary ".repeat(2_000) }));
    expect(result).toEqual({ compressed: false, reason: expect.stringMatching(/does not shrink the history \(\d+ → \d+ tokens\)/) });
  });

  it("rejects an empty summary", async () => {
    const result = await compressHistory(history(6), options({ summarise: async () => "  \n" }));
    expect(result).toEqual({ compressed: false, reason: "the summary is empty" });
  });

  it("rejects a keepRecentTurns below 1", async () => {
    await expect(compressHistory(history(6), options({ keepRecentTurns: 0 }))).rejects.toThrow(RangeError);
  });
});

describe("compressionUpdate", () => {
  it("makes messagesStateReducer hold exactly the compressed history, in order", async () => {
    const messages = history(6);
    const state = messagesStateReducer([], messages);
    const result = await compressHistory(state, options());
    if (!result.compressed) throw new Error(result.reason);

    const next = messagesStateReducer(state, compressionUpdate(result.messages));
    expect(next).toHaveLength(result.messages.length);
    expect(ids(next).slice(0, 2)).toEqual(["system", "task"]);
    expect(next[2]!.text.startsWith(SUMMARY_MARKER)).toBe(true);
    expect(next[2]!.id).toEqual(expect.any(String));
    expect(ids(next.slice(3))).toEqual(ids(messages.slice(9)));
    expect(next.map((message) => message.text)).toEqual(result.messages.map((message) => message.text));

    // Later writes append after the compressed history as usual.
    const after = messagesStateReducer(next, [new HumanMessage({ id: "later", content: "next" })]);
    expect(ids(after).at(-1)).toBe("later");
    expect(after).toHaveLength(next.length + 1);
  });
});
