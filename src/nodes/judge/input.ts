import { combinedCoderResult, type CoderResult, type ToolLogEntry } from "../coder/types.js";
import type { ReviewResult } from "../../state/looper.js";
import type { GraphStateValue } from "../../state/graph-state.js";
import { leadOf } from "./next-task.js";

/** Everything the Judge weighs, read from the state at the moment it runs. */
export interface JudgeInput {
  /** The current round's task, as the Coder got it (with the context a previous Judge appended). */
  task: string;
  /** The loop's original task (its first round's); unknown outside a Looper, or in a loop stored before it was kept. */
  originalTask?: string;
  round: number;
  /** Unknown when the Judge runs outside a Looper. */
  maxRounds?: number;
  /** Undefined when the Coder left no result. */
  coder?: CoderResult;
  /** Undefined when the Review left no result (it failed as a whole, or the graph has none). */
  review?: ReviewResult;
  /** Every pending message queued at this moment: the Judge drains them all, in one go. */
  pending: string[];
}

/** The nodes whose outputs the Judge reads. */
export interface JudgeSources {
  judge: string;
  coder: string;
  review: string;
}

const SUMMARY_MAX_CHARS = 4_000;
const FAILED_CALLS_SHOWN = 5;
const ARGS_MAX_CHARS = 160;
const PREVIEW_MAX_CHARS = 200;

export function readJudgeInput(state: GraphStateValue, sources: JudgeSources): JudgeInput {
  const looper = state.loopState?.context;
  // Outside a Looper the thread's task does not change: it is the original one.
  const originalTask = looper ? state.loopTask || undefined : state.task;
  return {
    task: state.task,
    ...(originalTask !== undefined && { originalTask }),
    // Outside a Looper the Judge's own visit count is the round.
    round: looper?.round ?? (state.visits[sources.judge] ?? 0) + 1,
    ...(looper && { maxRounds: looper.maxRounds }),
    coder: coderOf(state.outputs[sources.coder]),
    review: asReviewResult(state.outputs[sources.review]),
    pending: [...(looper?.pending ?? [])],
  };
}

/** The Judge's input as the one text the model reads. */
export function formatJudgeInput(input: JudgeInput): string {
  // The round's own task: the context a previous Judge appended to it is in the other sections.
  const task = leadOf(input.task);
  const original =
    input.originalTask !== undefined && input.originalTask.trim() !== task.trim()
      ? [section("Original task (the loop's first round)", input.originalTask)]
      : [];
  return [
    section("Task", task),
    ...original,
    section("Round", input.maxRounds === undefined ? String(input.round) : `${input.round}/${input.maxRounds}`),
    section("Coder result", input.coder ? formatCoder(input.coder) : "none: the Coder left no result (count it as a failure)"),
    section("Review result", input.review ? formatReview(input.review) : "none: the Review left no result, the work is unverified"),
    section(
      input.pending.length > 0 ? `Pending messages (${input.pending.length}, queued by the user during the round)` : "Pending messages",
      input.pending.length > 0 ? input.pending.map((message, i) => `${i + 1}. ${message}`).join("\n") : "none",
    ),
  ].join("\n\n");
}

const section = (title: string, body: string): string => `## ${title}\n${body}`;

export function formatCoder(coder: CoderResult): string {
  const lines = [`status: ${coder.status}`];
  if (coder.status === "failure")
    lines.push(`failure: ${coder.failureKind ?? "unknown"}${coder.failureReason ? `: ${coder.failureReason}` : ""}`);
  lines.push(`files changed: ${coder.filesChanged.length > 0 ? coder.filesChanged.join(", ") : "none"}`);
  lines.push(...toolCallDigest(coder.toolCalls));
  lines.push(`summary:\n${clip(coder.summary, SUMMARY_MAX_CHARS) || "(empty)"}`);
  return lines.join("\n");
}

/** Calls per tool with their failures, then the last failed calls with what the model was told. */
function toolCallDigest(calls: readonly ToolLogEntry[]): string[] {
  if (calls.length === 0) return ["tool calls: none"];
  const perTool = new Map<string, { calls: number; failed: number }>();
  for (const call of calls) {
    const counts = perTool.get(call.name) ?? { calls: 0, failed: 0 };
    counts.calls += 1;
    if (!call.ok) counts.failed += 1;
    perTool.set(call.name, counts);
  }
  const failed = calls.filter((call) => !call.ok);
  const tools = [...perTool].map(([name, counts]) => `${name} ×${counts.calls}${counts.failed > 0 ? ` (${counts.failed} failed)` : ""}`);
  const lines = [`tool calls: ${calls.length}${failed.length > 0 ? ` (${failed.length} failed)` : ""}: ${tools.join(", ")}`];
  if (failed.length > 0) {
    const shown = failed.slice(-FAILED_CALLS_SHOWN);
    lines.push(failed.length > shown.length ? `last ${shown.length} failed calls:` : "failed calls:");
    for (const call of shown) {
      const preview = clip(call.preview.replace(/\s+/g, " ").trim(), PREVIEW_MAX_CHARS);
      lines.push(
        `- ${call.name} ${clip(JSON.stringify(call.args) ?? "", ARGS_MAX_CHARS)}: ${call.errorKind ?? "failed"}${preview ? `: ${preview}` : ""}`,
      );
    }
  }
  return lines;
}

export function formatReview(review: ReviewResult): string {
  const lines = [`rating: ${review.rating}`];
  lines.push(review.comments.length > 0 ? `comments:\n${review.comments.map((c) => `- ${c}`).join("\n")}` : "comments: none");
  const failedChecks = Object.entries(review.checks).filter(([, check]) => !check.ok);
  if (failedChecks.length > 0) {
    lines.push("failed checks:");
    for (const [name, check] of failedChecks) lines.push(`- ${name}: ${check.error ?? (check.comments.join("; ") || "failed")}`);
  }
  return lines.join("\n");
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (cut, ${text.length - max} more characters)` : text;
}

// Outputs are untyped in the state: anything without the expected shape counts as no result.

/** The Coder's result; a mapped Coder's parts (merged, and reviewed as one) as one result. */
function coderOf(output: unknown): CoderResult | undefined {
  return Array.isArray(output) ? combinedCoderResult(output.map(asCoderResult)) : asCoderResult(output);
}

export function asCoderResult(value: unknown): CoderResult | undefined {
  const status = (value as Partial<CoderResult> | undefined)?.status;
  if (status !== "success" && status !== "failure") return undefined;
  const coder = value as Partial<CoderResult>;
  return {
    ...coder,
    status,
    summary: coder.summary ?? "",
    filesChanged: coder.filesChanged ?? [],
    toolCalls: coder.toolCalls ?? [],
  } as CoderResult;
}

export function asReviewResult(value: unknown): ReviewResult | undefined {
  const review = value as Partial<ReviewResult> | undefined;
  if (review?.rating !== "normal" && review?.rating !== "warning" && review?.rating !== "critical") return undefined;
  return { ...review, rating: review.rating, comments: review.comments ?? [], checks: review.checks ?? ({} as ReviewResult["checks"]) };
}
