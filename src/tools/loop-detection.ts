/**
 * Loop detection for the Coder: the same tool call repeated, or a window of calls that
 * repeats the previous window, gets a warning injected; if the loop persists the Coder fails.
 * Two more anti-patterns, judged on results (`checkToolResult`): a streak of reads, searches
 * and listings without a write or a command gets a warning (after 5 before anything was
 * written: create now; after 10 once something was: the task may be done), and the same error
 * several times in a row ends the turn (`repeated_error`).
 *
 * Pure functions over serialisable data: the detector's memory is a `LoopDetectorState` that the
 * Coder keeps in the graph state, so a crashed and resumed run judges loops exactly as before.
 */
import { createHash } from "node:crypto";
import { z } from "zod";

// ---------------------------------------------------------------------------------------------
// Configuration

/** The graph file's `loop_detection:` block of a Coder node (snake_case keys, as written in YAML). */
export const loopDetectionConfigSchema = z.strictObject({
  enabled: z.boolean().describe("Watch the Coder's tool calls for loops (default true)").default(true),
  repeat_threshold: z
    .int()
    .min(2)
    .describe("Identical consecutive tool calls (same tool, same arguments) that trigger a warning (default 5)")
    .default(5),
  max_window: z
    .int()
    .min(1)
    .max(10)
    .describe("Longest sequence of calls watched for repetition: windows of 2..max_window calls; 1 turns this off (default 5)")
    .default(5),
  window_repeat_threshold: z
    .int()
    .min(2)
    .describe("Consecutive repetitions of a window of calls that trigger a warning (default 3)")
    .default(3),
  persist_after_warning: z
    .int()
    .min(1)
    .describe("Looping calls tolerated after the warning before the Coder stops with a failure (default 1)")
    .default(1),
  read_streak: z
    .int()
    .min(0)
    .describe(
      "Reads, searches and listings in a row, before anything was written, after which the model is told to stop reading and create (again after as many more; 0: never; default 5)",
    )
    .default(5),
  read_streak_after_write: z
    .int()
    .min(0)
    .describe(
      "Reads, searches and listings in a row, once something was written, after which the model is told the task may be done and to stop over-verifying (again after as many more; 0: never; default 10)",
    )
    .default(10),
  repeated_errors: z
    .int()
    .min(0)
    .describe("The same tool error this many times in a row ends the Coder turn with a repeated_error failure (0: never; default 3)")
    .default(3),
});

export type LoopDetectionConfig = z.output<typeof loopDetectionConfigSchema>;

export interface LoopDetectionOptions {
  enabled: boolean;
  repeatThreshold: number;
  maxWindow: number;
  windowRepeatThreshold: number;
  persistAfterWarning: number;
  /** Read-only calls in a row before a warning, while nothing was written (0: off). */
  readStreak: number;
  /** Read-only calls in a row before a warning, once something was written (0: off). */
  readStreakAfterWrite: number;
  /** The same error this many times in a row ends the turn (0: off). */
  repeatedErrors: number;
}

export function toLoopDetectionOptions(config: LoopDetectionConfig): LoopDetectionOptions {
  return {
    enabled: config.enabled,
    repeatThreshold: config.repeat_threshold,
    maxWindow: config.max_window,
    windowRepeatThreshold: config.window_repeat_threshold,
    persistAfterWarning: config.persist_after_warning,
    readStreak: config.read_streak,
    readStreakAfterWrite: config.read_streak_after_write,
    repeatedErrors: config.repeated_errors,
  };
}

export const DEFAULT_LOOP_DETECTION_OPTIONS: LoopDetectionOptions = toLoopDetectionOptions(loopDetectionConfigSchema.parse({}));

// ---------------------------------------------------------------------------------------------
// State and verdicts

/** A tool call as the model made it; `AIMessage.tool_calls` entries fit. */
export interface ToolCallLike {
  name: string;
  args: unknown;
}

/** A call as remembered: a digest of the arguments keeps the state small even for write_file. */
export interface RecordedCall {
  name: string;
  argsDigest: string;
}

/** The loop that was warned about, followed while the Coder keeps repeating it. */
export interface LoopWarning {
  /** Calls in one repetition of the loop (1: the same call repeated). */
  period: number;
  /** Tool names of one repetition, in order. */
  toolNames: string[];
  /** Calls in the loop so far, including those before the warning. */
  loopLength: number;
  /** Looping calls made since the warning. */
  callsSinceWarning: number;
}

/** The detector's memory, stored in the graph state. Start each Coder turn from `EMPTY_LOOP_DETECTOR_STATE`. */
export interface LoopDetectorState {
  /** The latest calls, as many as the longest configured loop needs. */
  recentCalls: RecordedCall[];
  warning: LoopWarning | null;
  /** Reads, searches and listings since the last write or command. */
  readStreak?: number;
  /** A call of the turn changed a file: the streak's limit is then `readStreakAfterWrite`. */
  wrote?: boolean;
  /** The latest error (tool, kind and text, digested) and how many calls in a row ended with it. */
  errorRun?: { key: string; count: number };
}

export const EMPTY_LOOP_DETECTOR_STATE: LoopDetectorState = { recentCalls: [], warning: null };

export type LoopVerdict =
  | { status: "ok" }
  /** `message` is the "step back" text to inject into the conversation. */
  | { status: "warn"; message: string }
  | { status: "fail"; reason: string };

export interface LoopCheck {
  verdict: LoopVerdict;
  /** The detector state to store. */
  state: LoopDetectorState;
}

// ---------------------------------------------------------------------------------------------
// Detection

/** JSON with object keys sorted at every depth, so argument order never hides a repeat. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeysDeep(value)) ?? "null";
}

function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value === null || typeof value !== "object") return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((key) => [key, sortKeysDeep(record[key])]),
  );
}

function recordCall(call: ToolCallLike): RecordedCall {
  const argsDigest = createHash("sha256").update(canonicalJson(call.args)).digest("hex").slice(0, 16);
  return { name: call.name, argsDigest };
}

function sameCall(a: RecordedCall | undefined, b: RecordedCall | undefined): boolean {
  return a !== undefined && b !== undefined && a.name === b.name && a.argsDigest === b.argsDigest;
}

/** Length of the longest tail of `calls` in which every call equals the one `period` calls before it. */
function periodicTailLength(calls: readonly RecordedCall[], period: number): number {
  if (calls.length < period) return 0;
  let start = calls.length - period;
  while (start > 0 && sameCall(calls[start - 1], calls[start - 1 + period])) start -= 1;
  return calls.length - start;
}

/** A window that is itself a repetition of a shorter one ([A, A]) is reported as the shorter loop. */
function isRepetitionOfShorterWindow(window: readonly RecordedCall[]): boolean {
  for (let period = 1; period < window.length; period += 1) {
    if (window.length % period === 0 && periodicTailLength(window, period) === window.length) return true;
  }
  return false;
}

function thresholdFor(period: number, options: LoopDetectionOptions): number {
  return period === 1 ? options.repeatThreshold : options.windowRepeatThreshold;
}

/** The shortest loop at the end of `calls` that has reached its threshold, if any. */
function findLoop(calls: readonly RecordedCall[], options: LoopDetectionOptions): LoopWarning | null {
  for (let period = 1; period <= options.maxWindow; period += 1) {
    const window = calls.slice(-period);
    if (window.length < period || isRepetitionOfShorterWindow(window)) continue;
    const loopLength = periodicTailLength(calls, period);
    if (Math.floor(loopLength / period) >= thresholdFor(period, options)) {
      return { period, toolNames: window.map((call) => call.name), loopLength, callsSinceWarning: 0 };
    }
  }
  return null;
}

/** Whether the calls from `firstNewIndex` on all continue a loop of `period` calls. */
function continuesLoop(calls: readonly RecordedCall[], firstNewIndex: number, period: number): boolean {
  return calls.slice(firstNewIndex).every((call, offset) => sameCall(call, calls[firstNewIndex + offset - period]));
}

/** Calls to remember: enough to recognise the longest loop any threshold allows. */
function historyLimit(options: LoopDetectionOptions): number {
  return Math.max(options.repeatThreshold, options.maxWindow * options.windowRepeatThreshold);
}

function describeLoop(loop: LoopWarning): string {
  const repetitions = Math.floor(loop.loopLength / loop.period);
  if (loop.period === 1) return `called ${loop.toolNames[0]} with the same arguments ${repetitions} times in a row`;
  return `repeated the same sequence of ${loop.period} tool calls (${loop.toolNames.join(" → ")}) ${repetitions} times in a row`;
}

function warningMessage(loop: LoopWarning): string {
  return [
    `Loop warning: you have ${describeLoop(loop)}, and repeating it will not give you anything new.`,
    "Step back: re-read the task and what the earlier results told you, then change course —",
    "use what you already have, try different arguments or another tool, or finish and report what blocks you.",
    "If you keep repeating it, the task stops with a failure.",
  ].join(" ");
}

function failureReason(loop: LoopWarning): string {
  return `loop detected: ${describeLoop(loop)}, ${loop.callsSinceWarning} of them after a warning`;
}

/**
 * Judges new tool calls (one at a time, or a model answer's all at once), appended to what the
 * detector remembers.
 * A warned loop that the new calls all continue fails once `persistAfterWarning` looping calls
 * followed the warning (and is warned again until then); any call that breaks it clears the
 * warning, so a later loop starts counting afresh.
 */
export function checkToolCalls(
  state: LoopDetectorState,
  newCalls: readonly ToolCallLike[],
  options: LoopDetectionOptions = DEFAULT_LOOP_DETECTION_OPTIONS,
): LoopCheck {
  if (!options.enabled || newCalls.length === 0) return { verdict: { status: "ok" }, state };

  const calls = [...state.recentCalls, ...newCalls.map(recordCall)];
  const remember = (warning: LoopWarning | null): LoopDetectorState => ({
    ...state,
    recentCalls: calls.slice(-historyLimit(options)),
    warning,
  });

  const { warning } = state;
  if (warning && continuesLoop(calls, state.recentCalls.length, warning.period)) {
    const persisted: LoopWarning = {
      ...warning,
      loopLength: warning.loopLength + newCalls.length,
      callsSinceWarning: warning.callsSinceWarning + newCalls.length,
    };
    const verdict: LoopVerdict =
      persisted.callsSinceWarning >= options.persistAfterWarning
        ? { status: "fail", reason: failureReason(persisted) }
        : { status: "warn", message: warningMessage(persisted) };
    return { verdict, state: remember(persisted) };
  }

  const loop = findLoop(calls, options);
  if (!loop) return { verdict: { status: "ok" }, state: remember(null) };
  return { verdict: { status: "warn", message: warningMessage(loop) }, state: remember(loop) };
}

// ---------------------------------------------------------------------------------------------
// Anti-patterns judged on results

/** How a call's kind of work counts for the read streak: a read continues it, a change ends it. */
export type CallWork = "read" | "change" | "other";

export interface ResultCheck {
  state: LoopDetectorState;
  /** Said to the model after the result: it has only read for a while. */
  warning?: string;
  /** The turn must end: the same error came back too many times in a row. */
  failure?: string;
}

/** What the model is told at a streak's limit: before anything was written, and after. */
function readStreakWarning(count: number, wrote: boolean): string {
  return wrote
    ? `Note: that makes ${count} reads, searches and listings in a row since your last change. The task may be done: stop over-verifying. ` +
        "If it is done, answer with what you changed and how you checked it; if not, make the next change."
    : `Note: that makes ${count} reads, searches and listings in a row, and nothing written yet. Stop reading and create now: ` +
        "make the change with what you know (write_file or edit_file), or say what is still unclear and why.";
}

/**
 * Judges a call's result: a streak of reads without a write or command reaching the limit (and
 * every limit more) warns, the limit being `readStreak` until a call changed a file and
 * `readStreakAfterWrite` after; the same error (same tool, kind and text) `repeatedErrors` times
 * in a row fails, and any other result starts counting afresh.
 */
export function checkToolResult(
  state: LoopDetectorState,
  call: { name: string; work: CallWork },
  result: { ok: boolean; errorKind?: string; content: string; filesChanged?: readonly string[] },
  options: LoopDetectionOptions = DEFAULT_LOOP_DETECTION_OPTIONS,
): ResultCheck {
  if (!options.enabled) return { state };
  const readStreak = call.work === "read" ? (state.readStreak ?? 0) + 1 : call.work === "change" ? 0 : (state.readStreak ?? 0);
  const wrote = state.wrote === true || (call.work === "change" && (result.filesChanged?.length ?? 0) > 0);
  const key = result.ok
    ? undefined
    : createHash("sha256")
        .update(`${call.name}\0${result.errorKind ?? ""}\0${result.content}`)
        .digest("hex")
        .slice(0, 16);
  const errorRun = key === undefined ? undefined : { key, count: state.errorRun?.key === key ? state.errorRun.count + 1 : 1 };
  const next: LoopDetectorState = {
    ...state,
    readStreak,
    ...(wrote && { wrote }),
    ...(errorRun ? { errorRun } : { errorRun: undefined }),
  };
  if (errorRun && options.repeatedErrors > 0 && errorRun.count >= options.repeatedErrors) {
    const first = result.content.split("\n", 1)[0]!.slice(0, 200);
    return {
      state: next,
      failure: `the same error ${errorRun.count} times in a row from ${call.name} (${result.errorKind ?? "failed"}: ${first})`,
    };
  }
  const limit = wrote ? options.readStreakAfterWrite : options.readStreak;
  if (call.work === "read" && limit > 0 && readStreak % limit === 0) return { state: next, warning: readStreakWarning(readStreak, wrote) };
  return { state: next };
}
