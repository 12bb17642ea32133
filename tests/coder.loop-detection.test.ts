import { describe, expect, it } from "vitest";
import { callWork } from "../src/runtime/tool-call.js";
import {
  DEFAULT_LOOP_DETECTION_OPTIONS,
  EMPTY_LOOP_DETECTOR_STATE,
  canonicalJson,
  checkToolCalls,
  checkToolResult,
  loopDetectionConfigSchema,
  toLoopDetectionOptions,
  type LoopDetectionOptions,
  type LoopDetectorState,
  type LoopVerdict,
  type ToolCallLike,
} from "../src/tools/loop-detection.js";

const readFile = (path: string, extra: Record<string, unknown> = {}): ToolCallLike => ({
  name: "read_file",
  args: { path, ...extra },
});
const shell = (command: string): ToolCallLike => ({ name: "shell", args: { command } });

/**
 * Feeds model answers (each a list of tool calls) through the detector the way the Coder does,
 * round-tripping the state through JSON as a checkpoint would. Returns every verdict.
 */
function run(answers: ToolCallLike[][], options?: LoopDetectionOptions): { verdicts: LoopVerdict[]; state: LoopDetectorState } {
  let state = EMPTY_LOOP_DETECTOR_STATE;
  const verdicts: LoopVerdict[] = [];
  for (const calls of answers) {
    const check = checkToolCalls(state, calls, options);
    verdicts.push(check.verdict);
    state = JSON.parse(JSON.stringify(check.state)) as LoopDetectorState;
  }
  return { verdicts, state };
}

const statuses = (verdicts: LoopVerdict[]): string[] => verdicts.map((verdict) => verdict.status);
const oneCallPerAnswer = (calls: ToolCallLike[]): ToolCallLike[][] => calls.map((call) => [call]);
const times = <T>(count: number, item: T): T[] => Array.from({ length: count }, () => item);

describe("loop detection: the same call repeated", () => {
  it("warns on the 5th identical read_file call and fails on the 6th (the acceptance scenario)", () => {
    const { verdicts } = run(oneCallPerAnswer(times(6, readFile("src/app.ts"))));
    expect(statuses(verdicts)).toEqual(["ok", "ok", "ok", "ok", "warn", "fail"]);

    const warning = verdicts[4];
    expect(warning?.status === "warn" && warning.message).toMatch(/called read_file with the same arguments 5 times in a row.*Step back/);
    const failure = verdicts[5];
    expect(failure?.status === "fail" && failure.reason).toBe(
      "loop detected: called read_file with the same arguments 6 times in a row, 1 of them after a warning",
    );
  });

  it("judges a whole model answer: many identical calls in one answer warn, the next repeat fails", () => {
    const { verdicts } = run([times(3, readFile("a.ts")), times(3, readFile("a.ts")), [readFile("a.ts")]]);
    expect(statuses(verdicts)).toEqual(["ok", "warn", "fail"]);
  });

  it("compares arguments canonically: key order does not hide a repeat", () => {
    const a = { name: "read_file", args: { path: "a.ts", offset: 1, limit: 10 } };
    const b = { name: "read_file", args: { limit: 10, path: "a.ts", offset: 1 } };
    expect(statuses(run(oneCallPerAnswer([a, b, a, b, a])).verdicts)).toEqual(["ok", "ok", "ok", "ok", "warn"]);
  });

  it("does not flag near-identical calls with different arguments", () => {
    const pages = Array.from({ length: 10 }, (_, page) => readFile("big.log", { offset: page * 100, limit: 100 }));
    expect(statuses(run(oneCallPerAnswer(pages)).verdicts)).toEqual(times(10, "ok"));
  });

  it("does not flag the same arguments to different tools", () => {
    const calls = [0, 1, 2, 3, 4, 5].map((index) => ({ name: `tool_${index}`, args: { path: "a.ts" } }));
    expect(statuses(run(oneCallPerAnswer(calls)).verdicts)).toEqual(times(6, "ok"));
  });
});

describe("loop detection: a repeating window of calls", () => {
  it("warns when [read_file, shell] is repeated 3 times and fails when it goes on", () => {
    const cycle = [readFile("src/app.ts"), shell("npm test")];
    const { verdicts } = run(oneCallPerAnswer([...cycle, ...cycle, ...cycle, cycle[0]!]));
    expect(statuses(verdicts)).toEqual(["ok", "ok", "ok", "ok", "ok", "warn", "fail"]);

    const warning = verdicts[5];
    expect(warning?.status === "warn" && warning.message).toContain(
      "repeated the same sequence of 2 tool calls (read_file → shell) 3 times in a row",
    );
    const failure = verdicts[6];
    expect(failure?.status === "fail" && failure.reason).toMatch(/^loop detected: .*1 of them after a warning$/);
  });

  it("finds windows of 3 calls, in answers of several calls", () => {
    const cycle = [readFile("a.ts"), readFile("b.ts"), shell("make")];
    expect(statuses(run([cycle, cycle, cycle, cycle]).verdicts)).toEqual(["ok", "ok", "warn", "fail"]);
  });

  it("reports a repeated identical call as such, not as a window of identical calls", () => {
    const options = { ...DEFAULT_LOOP_DETECTION_OPTIONS, repeatThreshold: 10 };
    // [a, a] x 3 would reach the window threshold; the single-call threshold of 10 applies instead.
    expect(statuses(run(oneCallPerAnswer(times(9, readFile("a.ts"))), options).verdicts)).toEqual(times(9, "ok"));
  });

  it("ignores windows longer than max_window", () => {
    const cycle = [readFile("a.ts"), readFile("b.ts"), readFile("c.ts")];
    const options = { ...DEFAULT_LOOP_DETECTION_OPTIONS, maxWindow: 2 };
    expect(statuses(run([cycle, cycle, cycle, cycle], options).verdicts)).toEqual(times(4, "ok"));
  });
});

describe("loop detection: breaking out", () => {
  it("clears the warning when the agent changes course, so a later repeat starts counting afresh", () => {
    const same = readFile("a.ts");
    const { verdicts } = run(oneCallPerAnswer([...times(5, same), shell("git status"), ...times(5, same)]));
    expect(statuses(verdicts)).toEqual([...times(4, "ok"), "warn", "ok", ...times(4, "ok"), "warn"]);
  });

  it("treats an answer that only partly continues the loop as breaking out", () => {
    const same = readFile("a.ts");
    const { verdicts, state } = run([...oneCallPerAnswer(times(5, same)), [same, shell("ls")]]);
    expect(statuses(verdicts)).toEqual([...times(4, "ok"), "warn", "ok"]);
    expect(state.warning).toBeNull();
  });

  it("tolerates persist_after_warning looping calls, warning again until then", () => {
    const options = { ...DEFAULT_LOOP_DETECTION_OPTIONS, persistAfterWarning: 2 };
    const { verdicts } = run(oneCallPerAnswer(times(7, readFile("a.ts"))), options);
    expect(statuses(verdicts)).toEqual([...times(4, "ok"), "warn", "warn", "fail"]);
  });

  it("says nothing about an answer without tool calls, and does nothing when disabled", () => {
    const warned = run(oneCallPerAnswer(times(5, readFile("a.ts")))).state;
    expect(checkToolCalls(warned, [])).toEqual({ verdict: { status: "ok" }, state: warned });

    const disabled = { ...DEFAULT_LOOP_DETECTION_OPTIONS, enabled: false };
    expect(statuses(run(oneCallPerAnswer(times(8, readFile("a.ts"))), disabled).verdicts)).toEqual(times(8, "ok"));
  });
});

describe("loop detection state", () => {
  it("stays small: a bounded tail of calls with argument digests, not the arguments", () => {
    const bigWrite = { name: "write_file", args: { path: "a.ts", contents: "x".repeat(100_000) } };
    const calls = Array.from({ length: 40 }, (_, index) => (index % 2 ? bigWrite : readFile(`f${index}.ts`)));
    const { state } = run(oneCallPerAnswer(calls));
    // max(repeat_threshold 5, max_window 5 x window_repeat_threshold 3) calls
    expect(state.recentCalls).toHaveLength(15);
    expect(JSON.stringify(state).length).toBeLessThan(2_000);
  });

  it("never mutates the state it is given", () => {
    const state: LoopDetectorState = { recentCalls: [], warning: null };
    const frozen = JSON.stringify(state);
    checkToolCalls(state, [readFile("a.ts")]);
    expect(JSON.stringify(state)).toBe(frozen);
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}');
  });
});

describe("loop_detection config", () => {
  it("fills in the defaults", () => {
    expect(loopDetectionConfigSchema.parse({})).toEqual({
      enabled: true,
      repeat_threshold: 5,
      max_window: 5,
      window_repeat_threshold: 3,
      persist_after_warning: 1,
      read_streak: 5,
      read_streak_after_write: 10,
      repeated_errors: 3,
    });
    expect(DEFAULT_LOOP_DETECTION_OPTIONS).toEqual({
      enabled: true,
      repeatThreshold: 5,
      maxWindow: 5,
      windowRepeatThreshold: 3,
      persistAfterWarning: 1,
      readStreak: 5,
      readStreakAfterWrite: 10,
      repeatedErrors: 3,
    });
  });

  it("maps snake_case keys to the detector's options", () => {
    const config = loopDetectionConfigSchema.parse({
      repeat_threshold: 3,
      max_window: 1,
      persist_after_warning: 2,
      read_streak: 0,
      read_streak_after_write: 3,
      repeated_errors: 4,
    });
    expect(toLoopDetectionOptions(config)).toEqual({
      enabled: true,
      repeatThreshold: 3,
      maxWindow: 1,
      windowRepeatThreshold: 3,
      persistAfterWarning: 2,
      readStreak: 0,
      readStreakAfterWrite: 3,
      repeatedErrors: 4,
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ["unknown key", { repeat_treshold: 5 }],
    ["camelCase key", { repeatThreshold: 5 }],
    ["threshold below 2", { repeat_threshold: 1 }],
    ["fractional threshold", { window_repeat_threshold: 2.5 }],
    ["window of 0", { max_window: 0 }],
    ["window above 10", { max_window: 11 }],
    ["no tolerance after the warning", { persist_after_warning: 0 }],
    ["string instead of number", { repeat_threshold: "5" }],
  ])("rejects %s", (_, config) => {
    expect(loopDetectionConfigSchema.safeParse(config).success).toBe(false);
  });
});

describe("anti-patterns judged on results", () => {
  const ok = { ok: true, content: "fine" };
  const error = (content: string) => ({ ok: false, errorKind: "failed", content });

  it("warns after a streak of reads without a change or a command, and again after as many more", () => {
    let state = EMPTY_LOOP_DETECTOR_STATE;
    const warnings: number[] = [];
    for (let i = 1; i <= 17; i++) {
      // A plan update and a failed call that never ran neither continue nor end the streak.
      const work = i === 5 ? "other" : "read";
      const check = checkToolResult(state, { name: work === "read" ? "glob" : "todo_write", work }, ok, {
        ...DEFAULT_LOOP_DETECTION_OPTIONS,
        readStreak: 8,
      });
      state = check.state;
      if (check.warning) warnings.push(i);
    }
    expect(warnings).toEqual([9, 17]);
    expect(
      checkToolResult(state, { name: "glob", work: "read" }, ok, { ...DEFAULT_LOOP_DETECTION_OPTIONS, readStreak: 8 }).warning,
    ).toBeUndefined();
    const changed = checkToolResult(state, { name: "shell", work: "change" }, ok).state;
    expect(changed.readStreak).toBe(0);
    expect(
      checkToolResult(state, { name: "glob", work: "read" }, ok, { ...DEFAULT_LOOP_DETECTION_OPTIONS, readStreak: 0 }).warning,
    ).toBeUndefined();
  });

  it("warns after 5 reads in a row before anything was written (create now), after 10 once something was (the task may be done)", () => {
    const streak = (state: typeof EMPTY_LOOP_DETECTOR_STATE, count: number) => {
      const warnings: [number, string][] = [];
      for (let i = 1; i <= count; i++) {
        const check = checkToolResult(state, { name: "read_file", work: "read" }, ok);
        state = check.state;
        if (check.warning) warnings.push([i, check.warning]);
      }
      return { state, warnings };
    };
    const before = streak(EMPTY_LOOP_DETECTOR_STATE, 10);
    expect(before.warnings.map(([i]) => i)).toEqual([5, 10]);
    expect(before.warnings[0]![1]).toMatch(
      /^Note: that makes 5 reads, searches and listings in a row, and nothing written yet\. Stop reading and create now/,
    );
    // A command resets the streak but writes nothing: the limit stays 5.
    const ran = checkToolResult(before.state, { name: "shell", work: "change" }, ok).state;
    expect(streak(ran, 5).warnings.map(([i]) => i)).toEqual([5]);
    // A write that changed a file: from now on the limit is 10.
    const written = checkToolResult(before.state, { name: "write_file", work: "change" }, { ...ok, filesChanged: ["a.txt"] }).state;
    expect(written).toMatchObject({ readStreak: 0, wrote: true });
    const after = streak(written, 20);
    expect(after.warnings.map(([i]) => i)).toEqual([10, 20]);
    expect(after.warnings[0]![1]).toMatch(
      /^Note: that makes 10 reads, searches and listings in a row since your last change\. The task may be done: stop over-verifying/,
    );
    // A write that failed changed nothing.
    const failed = checkToolResult(before.state, { name: "edit_file", work: "change" }, error("no match")).state;
    expect(failed.wrote).toBeUndefined();
  });

  it("a call that did not run (refused by the mode, blocked, rejected, invalid) neither continues nor ends the streak; one that ran counts by its effect", () => {
    for (const errorKind of ["not_allowed", "blocked", "rejected", "invalid_arguments", "tool_not_found"] as const)
      expect(callWork("write_file", { errorKind })).toBe("other");
    expect(callWork("write_file", {})).toBe("change");
    expect(callWork("shell", { errorKind: "failed" })).toBe("change");
    expect(callWork("grep", {})).toBe("read");
    expect(callWork("todo_write", {})).toBe("other");
  });

  it("ends the turn on the same error three times in a row; a different error or a success starts afresh", () => {
    const run = (results: { name: string; result: { ok: boolean; errorKind?: string; content: string } }[]) => {
      let state = EMPTY_LOOP_DETECTOR_STATE;
      return results.map(({ name, result }) => {
        const check = checkToolResult(state, { name, work: "change" }, result);
        state = check.state;
        return check.failure;
      });
    };
    const same = { name: "shell", result: error("exit code: 1\nnpm ERR! missing script: tset") };
    expect(run([same, same, same])).toEqual([undefined, undefined, "the same error 3 times in a row from shell (failed: exit code: 1)"]);
    expect(run([same, same, { name: "shell", result: error("other") }, same, same]).every((failure) => failure === undefined)).toBe(true);
    expect(run([same, same, { name: "shell", result: ok }, same, same]).every((failure) => failure === undefined)).toBe(true);
    // The same text from another tool is another error.
    expect(run([same, same, { name: "grep", result: same.result }]).at(-1)).toBeUndefined();
  });
});
