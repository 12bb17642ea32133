/**
 * The Review's checks, without the graph: what the model checks are shown, how the git_diff
 * check rates the workspace's diff, and how the three results merge into one ReviewResult.
 */
import type { CoderResult, ToolLogEntry } from "../coder/types.js";
import type { OutputSchema } from "../../format/types.js";
import type { CommandCheckResult, ReviewCheckResult, ReviewResult } from "../../state/looper.js";
import type { FileChange, WorkspaceChanges } from "./baseline.js";

export const CHECK_NAMES = ["specs_breakdown", "task_log", "git_diff"] as const;
export type CheckName = (typeof CHECK_NAMES)[number];
export type ModelCheckName = Exclude<CheckName, "git_diff">;

type Rating = ReviewResult["rating"];
/** Least to most severe. */
const RATINGS = ["normal", "warning", "critical"] as const satisfies readonly Rating[];

/** What a model check answers. */
export const CHECK_VERDICT_SCHEMA: OutputSchema = {
  type: "object",
  properties: {
    rating: {
      type: "string",
      enum: [...RATINGS],
      description:
        "normal: nothing to fix; warning: works but has issues worth fixing; critical: the task is not done, or something is broken or unsafe",
    },
    comments: {
      type: "array",
      items: { type: "string" },
      description: "Concrete findings, one per item: what is wrong or missing, and where. Empty when there is nothing to fix.",
    },
  },
  required: ["rating", "comments"],
};

export interface CheckVerdict {
  rating: Rating;
  comments: string[];
}

const LISTED_FILES = 20;
const LARGE_CHANGE_FILES = 50;
const LARGE_CHANGE_LINES = 3_000;
const TOOL_LOG_BUDGET_CHARS = 30_000;
const TOOL_ARGS_CHARS = 300;
const TOOL_RESULT_CHARS = 300;

/** The workspace's diff as the checks need it: small enough to keep in the checkpointed state. */
export type DiffReading =
  | { status: "read"; facts: DiffFacts }
  /** The round had no baseline: this one was taken now, for the next review. */
  | { status: "no_baseline"; baselineTaken: string }
  | { status: "failed"; error: string };

export interface DiffFacts {
  fileCount: number;
  added: number;
  removed: number;
  /** The first changed files, with their line counts. */
  files: FileChange[];
  /** Files whose added lines include merge conflict markers. */
  conflictFiles: string[];
  /** The patch as the models see it: its head and tail when it is longer than the limit. */
  patch: string;
  /** Characters of the whole patch. */
  patchChars: number;
  cut: boolean;
}

export function summariseChanges(changes: WorkspaceChanges, maxPatchChars: number): DiffFacts {
  const lines = (key: "added" | "removed") => changes.files.reduce((sum, file) => sum + (file[key] ?? 0), 0);
  return {
    fileCount: changes.files.length,
    added: lines("added"),
    removed: lines("removed"),
    files: changes.files.slice(0, LISTED_FILES),
    conflictFiles: filesWithConflictMarkers(changes.patch),
    patch: cutMiddle(changes.patch, maxPatchChars, "diff"),
    patchChars: changes.patch.length,
    cut: changes.patch.length > maxPatchChars,
  };
}

function filesWithConflictMarkers(patch: string): string[] {
  return patch.split(/^(?=diff --git )/m).flatMap((section) => {
    if (!/^\+<{7}(?: |$)/m.test(section) || !/^\+>{7}(?: |$)/m.test(section)) return [];
    // git ends a path containing a space with a tab on the `+++` line.
    const path = /^\+\+\+ b\/(.*?)\t?$/m.exec(section)?.[1];
    return path === undefined ? [] : [path];
  });
}

/**
 * The git_diff check, by rules: merge conflict markers added → critical; the Coder reports
 * changes the workspace does not show → warning; else normal. Size, a cut diff, or no change at
 * all are told in comments; whether a change was needed is for the specs_breakdown check.
 */
export function rateDiff(reading: DiffReading, coder: CoderResult | undefined, maxPatchChars: number): ReviewCheckResult {
  if (reading.status === "failed") return { ok: false, comments: [], error: reading.error };
  if (reading.status === "no_baseline") {
    return {
      ok: true,
      rating: "warning",
      comments: [
        "no workspace baseline was taken when the round began, so this round's changes are unknown; one was taken now, for the next review",
      ],
    };
  }
  const { facts } = reading;
  if (facts.fileCount === 0) {
    const claimed = coder?.filesChanged ?? [];
    if (claimed.length === 0) return { ok: true, rating: "normal", comments: ["no file in the workspace changed since the round began"] };
    const mismatch = `the Coder reports changing ${listNames(claimed)}, but no file in the workspace changed since the round began`;
    return { ok: true, rating: "warning", comments: [mismatch] };
  }

  let rating: Rating = "normal";
  const comments = [`${describeSize(facts)}: ${facts.files.map(describeFile).join(", ")}${more(facts.fileCount, facts.files.length)}`];
  if (facts.conflictFiles.length > 0) {
    rating = "critical";
    comments.push(`merge conflict markers (<<<<<<< / >>>>>>>) were added to ${listNames(facts.conflictFiles)}`);
  }
  if (facts.fileCount > LARGE_CHANGE_FILES || facts.added + facts.removed > LARGE_CHANGE_LINES) {
    comments.push("a large change: check that all of it belongs to the task");
  }
  if (facts.cut) {
    comments.push(
      `the diff (${facts.patchChars} characters) is longer than max_diff_chars (${maxPatchChars}): the model checks saw only its head and tail`,
    );
  }
  return { ok: true, rating, comments };
}

/**
 * Overall rating: the worst of the checks that ran. "critical" when the Coder failed (its work is
 * unfinished) or when no check ran (nothing was verified). Comments are prefixed by their check;
 * a failed check contributes its error.
 */
export function mergeReview(
  checks: Partial<Record<CheckName, ReviewCheckResult>> & { command?: CommandCheckResult },
  coder: CoderResult | undefined,
): ReviewResult {
  const results = Object.fromEntries(
    CHECK_NAMES.map((name) => [name, checks[name] ?? { ok: false, comments: [], error: "the check did not run" }]),
  ) as ReviewResult["checks"];
  if (checks.command) results.command = checks.command;
  const names = [...CHECK_NAMES, ...(checks.command ? (["command"] as const) : [])];
  const comments = names.flatMap((name) => {
    const result = results[name]!;
    return result.ok
      ? result.comments.map((comment) => `${name}: ${comment}`)
      : [`${name}: the check failed: ${firstLineClipped(result.error ?? "no reason given")}`];
  });
  const ratings = names.flatMap((name) => (results[name]!.ok ? (results[name]!.rating ?? []) : []));
  let rating = ratings.reduce<Rating>((worst, next) => (RATINGS.indexOf(next) > RATINGS.indexOf(worst) ? next : worst), "normal");
  const failed = names.filter((name) => !results[name]!.ok);
  if (ratings.length === 0) {
    rating = "critical";
    comments.push("review: every check failed, so nothing was verified");
  } else if (failed.length > 0) {
    // A review that could not judge is not a pass: what the failed checks would have said is unknown.
    if (RATINGS.indexOf(rating) < RATINGS.indexOf("warning")) rating = "warning";
    comments.push(
      `review incomplete: the ${failed.join(" and ")} check${failed.length > 1 ? "s" : ""} failed, so the change is only partly verified`,
    );
  }
  // A check command that did not pass (or did not run) is not a passing change, whatever the models say.
  if (checks.command && !checks.command.passed) rating = "critical";
  if (coder?.status === "failure") {
    rating = "critical";
    comments.unshift(`coder: the Coder failed (${coder.failureKind ?? "unknown"}): ${coder.failureReason ?? "no reason given"}`);
  }
  return { rating, comments, checks: results };
}

/**
 * Whether a merged review comment only describes the diff's size: the git_diff check's stat
 * ("1 file changed (+1 −0 lines): …", or that no file changed), its large-change note and its
 * cut-diff note. They tell the Judge what the diff was, and the Coder nothing to fix.
 */
export function isDiffStatComment(comment: string): boolean {
  return DIFF_STAT_COMMENTS.some((pattern) => pattern.test(comment));
}

const DIFF_STAT_COMMENTS = [
  /^git_diff: \d+ files? changed \(\+\d+ \u2212\d+ lines\)/,
  /^git_diff: no file in the workspace changed since the round began$/,
  /^git_diff: a large change: /,
  /^git_diff: the diff \(\d+ characters\) is longer than max_diff_chars/,
];

/** The specs_breakdown check's input: the task, the Coder's report, the diff. */
export function specsInput(task: string, coder: CoderResult | undefined, diff: DiffReading): string {
  return [
    section("Task", task),
    section("The Coder's report", coder ? coderReport(coder) : "None: the Coder left no result."),
    section("Changes in the workspace since the round began", diffText(diff)),
  ].join("\n\n");
}

/** The task_log check's input: the task and what the Coder did, call by call. */
export function taskLogInput(task: string, coder: CoderResult): string {
  const failed = coder.toolCalls.filter((entry) => !entry.ok).length;
  const calls = coder.toolCalls.map(describeToolCall).join("\n") || "None.";
  const plan = coder.todos.map((todo) => `- [${todo.status}] ${todo.content}`).join("\n") || "None.";
  return [
    section("Task", task),
    section("Outcome", outcome(coder)),
    section(`Tool calls (${coder.toolCalls.length}, ${failed} failed)`, cutMiddle(calls, TOOL_LOG_BUDGET_CHARS, "tool log")),
    section("The Coder's plan", plan),
    section("The Coder's closing answer", coder.summary || "(empty)"),
  ].join("\n\n");
}

function section(title: string, body: string): string {
  return `# ${title}\n\n${body}`;
}

function outcome(coder: CoderResult): string {
  const calls = `${coder.steps} model call${coder.steps === 1 ? "" : "s"}`;
  return coder.status === "success"
    ? `Finished after ${calls}.`
    : `Failed after ${calls}: ${coder.failureKind ?? "unknown"}: ${coder.failureReason ?? "no reason given"}`;
}

function coderReport(coder: CoderResult): string {
  const files = coder.filesChanged.length > 0 ? listNames(coder.filesChanged) : "none";
  return `${outcome(coder)}\nFiles it reports changing: ${files}\n\nIts closing answer:\n${coder.summary || "(empty)"}`;
}

function diffText(diff: DiffReading): string {
  const unknown = "Judge from the Coder's report, and say in a comment that the change could not be verified.";
  switch (diff.status) {
    case "failed":
      return `Unknown: the diff could not be read (${diff.error}). ${unknown}`;
    case "no_baseline":
      return `Unknown: no workspace baseline was taken when the round began. ${unknown}`;
    case "read": {
      const { facts } = diff;
      if (facts.fileCount === 0) return "None: no file in the workspace changed.";
      const files = facts.files.map((file) => `- ${describeFile(file)}`).join("\n") + more(facts.fileCount, facts.files.length);
      return `${describeSize(facts)}:\n${files}\n\n${fenced(facts.patch, "diff")}`;
    }
  }
}

function describeToolCall(entry: ToolLogEntry, index: number): string {
  const status = entry.ok ? "ok" : `FAILED${entry.errorKind ? ` (${entry.errorKind})` : ""}`;
  const result = clip(entry.preview.trim(), TOOL_RESULT_CHARS).replace(/\n/g, "\n     ");
  return `${index + 1}. [${status}] ${entry.name} ${clip(JSON.stringify(entry.args) ?? "", TOOL_ARGS_CHARS)}\n   → ${result}`;
}

function describeSize(facts: DiffFacts): string {
  return `${facts.fileCount} file${facts.fileCount === 1 ? "" : "s"} changed (+${facts.added} −${facts.removed} lines)`;
}

function describeFile(file: FileChange): string {
  return file.added === undefined ? `${file.path} (binary)` : `${file.path} (+${file.added} −${file.removed})`;
}

function listNames(names: readonly string[]): string {
  return names.slice(0, LISTED_FILES).join(", ") + more(names.length, Math.min(names.length, LISTED_FILES));
}

function more(total: number, shown: number): string {
  return total > shown ? ` and ${total - shown} more` : "";
}

function clip(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

/** `text` in a code fence longer than any backtick run inside it. */
function fenced(text: string, language: string): string {
  const longest = (text.match(/`+/g) ?? []).reduce((max, run) => Math.max(max, run.length), 2);
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text}${text.endsWith("\n") ? "" : "\n"}${fence}`;
}

/** Keeps the head and tail of a text longer than `maxChars`, cut at line starts, with a marker saying what was cut. */
export function cutMiddle(text: string, maxChars: number, what: string): string {
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  const headBreak = text.lastIndexOf("\n", half - 1);
  const headEnd = headBreak >= half / 2 ? headBreak + 1 : half;
  const tailBreak = text.indexOf("\n", text.length - half - 1);
  const tailStart = tailBreak !== -1 && tailBreak + 1 <= text.length - half / 2 ? tailBreak + 1 : text.length - half;
  const cut = text.slice(headEnd, tailStart);
  const lines = cut.split("\n").length - (cut.endsWith("\n") ? 1 : 0);
  const head = text.slice(0, headEnd);
  return (
    `${head}${head.endsWith("\n") ? "" : "\n"}` +
    `[... ${cut.length} of ${text.length} characters of the ${what} (${lines} lines) cut here: only the head and tail are shown ...]\n` +
    text.slice(tailStart)
  );
}

/** The first line of a check's error, at most 200 characters: a validation dump must not flood the review. */
function firstLineClipped(text: string): string {
  const line = text.split("\n")[0]!.trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
