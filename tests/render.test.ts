/** The human renderer of `run`/`resume`: readable, attributable progress (threads, totals, tool results, spinner). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { describeTotals, formatTokens, humanRenderer, type HumanRendererOptions } from "../src/cli/render.js";
import type { RunEvent } from "../src/runtime/events.js";

const COLOURS = /\x1b\[[0-9;]*m/g;

/** A fake output stream (a TTY when asked) and what was written to it, colours removed. */
function output(tty = false) {
  let text = "";
  const out = { isTTY: tty, write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WritableStream;
  return { out, text: () => text.replace(COLOURS, "") };
}

function render(events: RunEvent[], options: HumanRendererOptions = {}) {
  const { out, text } = output();
  const sink = humanRenderer(out, options);
  for (const event of events) sink(event);
  sink.close();
  return { text: text(), sink };
}

const started = (threadId: string, graph: string): RunEvent => ({
  type: "run_started",
  threadId,
  graph,
  task: "",
  resumed: false,
  sandbox: "bubblewrap",
});

describe("humanRenderer", () => {
  afterEach(() => vi.useRealTimers());

  it("draws a subagent's tool calls inside its Coder's, marked as nested", () => {
    const { text } = render([
      { type: "node_started", threadId: "t", node: "coder", visit: 1 },
      { type: "tool_call", threadId: "t", node: "coder", id: "1", name: "task", args: { description: "find" } },
      { type: "tool_call", threadId: "t", node: "coder-task", id: "2", name: "grep", args: { pattern: "port" } },
      {
        type: "tool_result",
        threadId: "t",
        node: "coder-task",
        id: "2",
        name: "grep",
        ok: true,
        result: "1 matching line in 1 file\nsrc/a.ts:1:port",
      },
      { type: "tool_result", threadId: "t", node: "coder", id: "1", name: "task", ok: true, result: "Subagent done" },
    ]);
    expect(text.split("\n")).toEqual([
      "● coder",
      '  ⚙ task {"description":"find"}',
      '  │ ⚙ grep {"pattern":"port"}',
      "  │ ↳ 1 matching line in 1 file",
      "    │ src/a.ts:1:port",
      "  ↳ Subagent done",
      "",
    ]);
  });

  it("labels the loop thread's lines with its role and repeats a node's header when output comes back to its thread: two threads never share a header or a line", () => {
    const { text } = render([
      started("mon", "monitor"),
      { type: "node_started", threadId: "mon", node: "mediator", visit: 1 },
      { type: "message", threadId: "mon", node: "mediator", delta: "I'll hand this " },
      started("mon.loop", "coder-review"),
      { type: "node_started", threadId: "mon.loop", node: "coder", visit: 1 },
      { type: "message", threadId: "mon.loop", node: "coder", delta: "I'll write " },
      { type: "message", threadId: "mon", node: "mediator", delta: "to the Looper." },
      { type: "message", threadId: "mon.loop", node: "coder", delta: "the function." },
      { type: "node_finished", threadId: "mon", node: "mediator", durationMs: 100, usage: { inputTokens: 1000, outputTokens: 50 } },
      { type: "tool_call", threadId: "mon.loop", node: "coder", id: "1", name: "shell", args: { command: "ls" } },
      { type: "node_finished", threadId: "mon.loop", node: "coder", durationMs: 900, usage: { inputTokens: 11_300, outputTokens: 1150 } },
    ]);
    expect(text.split("\n")).toEqual([
      "▶ running monitor  thread mon",
      "  sandbox: bubblewrap",
      "● mediator",
      "  I'll hand this ",
      "[loop] ▶ running coder-review  thread mon.loop",
      "[loop]   sandbox: bubblewrap",
      "[loop] ● coder",
      "[loop]   I'll write ",
      "● mediator (continued)",
      "  to the Looper.",
      "[loop] ● coder (continued)",
      "[loop]   the function.",
      "✓ mediator (0.1s, 1000→50 tokens)",
      "[loop] ● coder (continued)",
      '[loop]   ⚙ shell {"command":"ls"}',
      "[loop] ✓ coder (0.9s, 11300→1150 tokens)",
      "",
    ]);
  });

  it("sums the tokens of every node of every thread for the end line", () => {
    const { sink } = render([
      { type: "node_finished", threadId: "t", node: "a", durationMs: 1, usage: { inputTokens: 1000, outputTokens: 50 } },
      { type: "node_finished", threadId: "t", node: "b", durationMs: 1 },
      { type: "node_finished", threadId: "t.loop", node: "c", durationMs: 1, usage: { inputTokens: 11_300, outputTokens: 1150 } },
    ]);
    expect(sink.usage()).toEqual({ inputTokens: 12_300, outputTokens: 1200 });
    expect(describeTotals({ usage: sink.usage(), elapsedMs: 8400 })).toBe("12.3k tokens in, 1.2k out, 8.4 s");
    expect(describeTotals({ elapsedMs: 500 })).toBe("0.5 s");
    expect(render([]).sink.usage()).toBeUndefined();
    expect([formatTokens(950), formatTokens(2_500_000)]).toEqual(["950", "2.5M"]);
  });

  it("adds each loop round's tokens, from round_finished events, to the end line: the last ten when there are more", () => {
    const round = (n: number, inputTokens: number, outputTokens: number) =>
      ({ type: "round_finished", threadId: "t.loop", node: "looper", round: n, usage: { inputTokens, outputTokens } }) as const;
    const { sink, text } = render([round(1, 10_000, 1000), round(2, 2300, 200)]);
    expect(text).toBe("");
    expect(sink.rounds()).toEqual([
      { round: 1, usage: { inputTokens: 10_000, outputTokens: 1000 } },
      { round: 2, usage: { inputTokens: 2300, outputTokens: 200 } },
    ]);
    expect(describeTotals({ usage: { inputTokens: 12_300, outputTokens: 1200 }, rounds: sink.rounds(), elapsedMs: 8400 })).toBe(
      "12.3k tokens in, 1.2k out, 8.4 s; round 1: 10.0k in, 1.0k out · round 2: 2.3k in, 200 out",
    );
    const many = render(Array.from({ length: 12 }, (_, i) => round(i + 1, 100, 10))).sink.rounds();
    expect(describeTotals({ rounds: many, elapsedMs: 1000 })).toMatch(
      /^1\.0 s; … round 3: 100 in, 10 out · .* · round 12: 100 in, 10 out$/,
    );
  });

  it("shows a tool result whole up to five lines, a shell's output as its last lines, a failed call named, all printable", () => {
    const shell = ["exit code: 1", "--- stdout ---", ...Array.from({ length: 8 }, (_, i) => `line ${i + 1}`), "\x1b[31mboom"].join("\n");
    const { text } = render([
      {
        type: "tool_result",
        threadId: "t",
        node: "mediator",
        id: "1",
        name: "looper_status",
        ok: true,
        result: "[Looper status]\nstate: RUNNING\nround: 1/5\n",
      },
      { type: "tool_result", threadId: "t", node: "coder", id: "2", name: "shell", ok: false, result: shell },
      { type: "tool_result", threadId: "t", node: "coder", id: "3", name: "read_file", ok: true, result: "1\n2\n3\n4\n5\n6\n7" },
      {
        type: "tool_result",
        threadId: "t",
        node: "coder",
        id: "4",
        name: "write_file",
        ok: false,
        result: "Blocked by policy: .env",
        notRun: "blocked",
      },
    ]);
    expect(text).toContain("  ↳ ✗ write_file not run (blocked): Blocked by policy: .env\n");
    expect(text).toContain("  ↳ [Looper status]\n    state: RUNNING\n    round: 1/5\n");
    expect(text).toContain("  ↳ ✗ shell: … 6 earlier lines\n    line 5\n    line 6\n    line 7\n    line 8\n    \\x1b[31mboom\n");
    expect(text).toContain("  ↳ 1\n    2\n    3\n    4\n    5\n    … 2 more lines\n");
    expect(text).not.toContain("\x1b");
  });

  it("shows a compression as a line of its own, not glued to the streamed answer", () => {
    const { text } = render([
      { type: "message", threadId: "t", node: "coder", delta: "partial" },
      { type: "compression", threadId: "t", node: "coder", removedMessages: 12, tokensBefore: 8100, tokensAfter: 2300 },
      { type: "message", threadId: "t", node: "coder", delta: "answer" },
    ]);
    expect(text).toBe("  partial\n  ⇣ history compressed: 12 earlier messages replaced by a summary (8.1k → 2.3k tokens)\n  answer\n");
  });

  it("describes an approval wait in words, not as JSON", () => {
    const { text } = render([
      {
        type: "interrupt",
        threadId: "t",
        reason: "input",
        node: "coder",
        value: { kind: "approval", node: "coder", tool: "shell", args: { command: "rm -rf build" }, callId: "c1", reason: "deletes files" },
      },
      { type: "interrupt", threadId: "t", reason: "input", node: "ask", value: { question: "which?" } },
    ]);
    expect(text).toContain("⏸ waiting for approval: coder wants to run shell: rm -rf build (deletes files)\n");
    expect(text).toContain('⏸ waiting for input in ask: {"question":"which?"}\n');
  });

  it("draws a spinner with the elapsed time in place on a TTY while a node works, and clears it before the next line", () => {
    vi.useFakeTimers();
    const { out, text } = output(true);
    const sink = humanRenderer(out);
    sink({ type: "node_started", threadId: "t", node: "coder", visit: 1 });
    vi.advanceTimersByTime(6000);
    expect(text()).toMatch(/\r\x1b\[2K {2}… coder: thinking 6s$/);
    sink({ type: "tool_call", threadId: "t", node: "coder", id: "1", name: "shell", args: { command: "make" } });
    expect(text()).toMatch(/thinking 6s\r\x1b\[2K {2}⚙ shell \{"command":"make"\}\n$/);
    vi.advanceTimersByTime(2000);
    expect(text()).toMatch(/… coder: running shell 2s$/);
    // While the terminal asks a question, the spinner stays away.
    sink.pauseSpinner();
    const paused = text();
    expect(paused).toMatch(/running shell 2s\r\x1b\[2K$/);
    vi.advanceTimersByTime(3000);
    expect(text()).toBe(paused);
    sink.resumeSpinner();
    sink({ type: "node_finished", threadId: "t", node: "coder", durationMs: 5 });
    const done = text();
    vi.advanceTimersByTime(5000);
    // No node works: no spinner.
    expect(text()).toBe(done);

    // Two threads at work: the spinner names the node of the latest event's thread, and its role.
    sink({ type: "node_started", threadId: "t", node: "mediator", visit: 1 });
    sink({ type: "node_started", threadId: "t.loop", node: "coder", visit: 2 });
    vi.advanceTimersByTime(3000);
    expect(text()).toMatch(/\r\x1b\[2K\[loop\] {3}… coder: thinking 3s$/);
    sink({ type: "message", threadId: "t", node: "mediator", content: "Started." });
    vi.advanceTimersByTime(2000);
    expect(text()).toMatch(/\r\x1b\[2K {2}… mediator: thinking 2s$/);
    sink.close();
  });

  it("on a TTY, shows a running command's last five lines in place, erased before the result; the spinner says which call the model is writing", () => {
    vi.useFakeTimers();
    const { out, text } = output(true);
    const sink = humanRenderer(out);
    sink({ type: "node_started", threadId: "t", node: "coder", visit: 1 });
    sink({ type: "tool_call_started", threadId: "t", node: "coder", name: "shell", index: 0 });
    vi.advanceTimersByTime(2000);
    expect(text()).toMatch(/… coder: writing a call of shell 2s$/);
    sink({ type: "tool_call", threadId: "t", node: "coder", id: "1", name: "shell", args: { command: "make" } });
    const emitOutput = (chunk: string): void =>
      sink({ type: "tool_output", threadId: "t", node: "coder", id: "1", name: "shell", stream: "stdout", text: chunk });
    emitOutput("line 1\nline 2\nhalf");
    expect(text()).toMatch(/ {4}│ line 1\n {4}│ line 2\n {4}│ half\n$/);
    emitOutput(" done\nline 4\nline 5\nline 6\nline 7\x1b[2J\n");
    // The region is redrawn in place: up over the three lines shown, cleared, then the last five.
    expect(text()).toMatch(/\x1b\[3A\r\x1b\[J {4}│ half done\n {4}│ line 4\n {4}│ line 5\n {4}│ line 6\n {4}│ line 7\\x1b\[2J\n$/);
    sink({ type: "tool_result", threadId: "t", node: "coder", id: "1", name: "shell", ok: true, result: "exit code: 0\nline 7" });
    expect(text()).toMatch(/│ line 7\\x1b\[2J\n\x1b\[5A\r\x1b\[J {2}↳ exit code: 0\n {4}line 7\n$/);
    sink.close();
    // Piped output shows no live lines: the result is enough.
    const piped = output(false);
    const plain = humanRenderer(piped.out);
    plain({ type: "tool_output", threadId: "t", node: "coder", id: "1", name: "shell", stream: "stdout", text: "line 1\n" });
    plain.close();
    expect(piped.text()).toBe("");
  });

  it("never draws a spinner in piped output", () => {
    vi.useFakeTimers();
    const { out, text } = output(false);
    const sink = humanRenderer(out);
    sink({ type: "node_started", threadId: "t", node: "coder", visit: 1 });
    vi.advanceTimersByTime(10_000);
    sink({ type: "node_finished", threadId: "t", node: "coder", durationMs: 5 });
    sink.close();
    expect(text()).toBe("● coder\n✓ coder (0.0s)\n");
  });
});
