/**
 * The Judge over attempts: when its coder is mapped (best-of-N, graphs/best-of-n.yaml), it
 * compares the instances' results and reviews and picks the attempt whose branch goes into the
 * workspace, or asks for another round. The model decides under rules: only an attempt that
 * passed (its Coder finished, its check passed, its review is not critical) can be picked; with
 * no valid answer from the model the rules pick the best passing attempt themselves.
 */
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { z } from "zod";
import type { CoderResult } from "../coder/types.js";
import type { JudgeResult, ReviewResult } from "../../state/looper.js";
import { askForDecision, type AskModel } from "./decide.js";
import { asCoderResult, asReviewResult, formatCoder, formatReview } from "./input.js";

/** One attempt as the Judge weighs it. */
export interface Attempt {
  /** 1-based, as the model and the log name it; the instance's index is `number - 1`. */
  number: number;
  coder?: CoderResult;
  review?: ReviewResult;
}

export type CompareDecision = { decision: "pick"; attempt: number; reason: string } | { decision: "continue"; nextTask: string };

/** The attempts of a mapped coder, with their reviews (a mapped review's list, by position). */
export function readAttempts(coders: readonly unknown[], reviews: unknown): Attempt[] {
  const reviewList = Array.isArray(reviews) ? reviews : [];
  return coders.map((coder, index) => ({
    number: index + 1,
    coder: asCoderResult(coder),
    review: asReviewResult(reviewList[index]),
  }));
}

/** Why an attempt cannot be picked; undefined when it passed. */
export function attemptProblem(attempt: Attempt): string | undefined {
  if (attempt.coder?.status !== "success") return attempt.coder ? "its Coder failed" : "its Coder left no result";
  if (!attempt.review) return "it has no review";
  const check = attempt.review.checks.command;
  if (check && !check.passed) return check.error ? "its check did not run" : "its check failed";
  if (attempt.review.rating === "critical") return "its review is critical";
  return undefined;
}

const RATING_ORDER = ["normal", "warning", "critical"];

/** The passing attempt the rules prefer: the best review rating, then the first. */
function bestPassing(attempts: readonly Attempt[]): Attempt | undefined {
  const passing = attempts.filter((attempt) => attemptProblem(attempt) === undefined);
  return passing.sort((a, b) => RATING_ORDER.indexOf(a.review!.rating) - RATING_ORDER.indexOf(b.review!.rating))[0];
}

function compareSchema(count: number) {
  return z.discriminatedUnion("decision", [
    z.object({
      decision: z.literal("pick"),
      attempt: z.int().min(1, "attempt is a number from 1").max(count, `there are ${count} attempts`),
      reason: z.string().trim().min(1, "reason must not be empty"),
    }),
    z.object({ decision: z.literal("continue"), nextTask: z.string().trim().min(1, "nextTask must not be empty") }),
  ]) satisfies z.ZodType<CompareDecision>;
}

const COMPARE_FORMAT = [
  "Answer with a single JSON object and nothing else, in one of these two forms:",
  '{"decision": "pick", "attempt": <the number of the attempt to keep>, "reason": "<why this one, in one sentence>"}',
  '{"decision": "continue", "nextTask": "<the complete task for another round of attempts>"}',
].join("\n");

/** The attempts as the one text the model reads. */
export function formatAttempts(task: string, attempts: readonly Attempt[]): string {
  const parts = [`## Task\n${task}`];
  for (const attempt of attempts) {
    const coder = attempt.coder ? formatCoder(attempt.coder) : "none: the Coder left no result";
    const review = attempt.review ? formatReview(attempt.review) : "none: the Review left no result";
    const verdict = attemptProblem(attempt);
    parts.push(
      `## Attempt ${attempt.number}${verdict ? ` (cannot be picked: ${verdict})` : ""}\n### Coder result\n${coder}\n### Review result\n${review}`,
    );
  }
  return parts.join("\n\n");
}

/** The decision over the attempts: the model's under the rules, or the rules' own. */
export async function decideAttempts(
  task: string,
  attempts: readonly Attempt[],
  systemPrompt: string,
  ask: AskModel,
): Promise<JudgeResult> {
  const prompt = [new SystemMessage(`${systemPrompt.trimEnd()}\n\n${COMPARE_FORMAT}`), new HumanMessage(formatAttempts(task, attempts))];
  const answer =
    attempts.length === 0
      ? { notes: ["there is no attempt to compare"] }
      : await askForDecision(ask, prompt, compareSchema(attempts.length));
  const best = bestPassing(attempts);
  const model = answer.decision;
  if (model?.decision === "pick") {
    const picked = attempts[model.attempt - 1]!;
    const problem = attemptProblem(picked);
    if (!problem) return result(picked, model.reason, "model", answer.notes);
    const note = `guard: the model picked attempt ${picked.number}, but ${problem}`;
    if (best) return result(best, rulesReason(best), "rule", [...answer.notes, `${note}; attempt ${best.number} passed`]);
    return another(task, attempts, "rule", [...answer.notes, `${note}, and no attempt passed`]);
  }
  if (model?.decision === "continue") return { ...model, consumedPending: 0, source: "model", notes: answer.notes };
  if (best)
    return result(best, rulesReason(best), "fallback", [...answer.notes, `fallback: attempt ${best.number} is the best that passed`]);
  return another(task, attempts, "fallback", [...answer.notes, "fallback: no attempt passed"]);
}

function result(attempt: Attempt, reason: string, source: JudgeResult["source"], notes: string[]): JudgeResult {
  return {
    decision: "pick",
    attempt: attempt.number,
    index: attempt.number - 1,
    ...(attempt.coder?.branch !== undefined && { branch: attempt.coder.branch }),
    reason,
    consumedPending: 0,
    source,
    notes,
  };
}

function rulesReason(attempt: Attempt): string {
  const check = attempt.review?.checks.command ? "its check passed and " : "";
  return `attempt ${attempt.number}: ${check}its review is ${attempt.review!.rating}`;
}

/** Another round: the task again, with what each attempt got wrong. */
function another(task: string, attempts: readonly Attempt[], source: JudgeResult["source"], notes: string[]): JudgeResult {
  const wrong = attempts.map((attempt) => {
    const problem = attemptProblem(attempt) ?? "it was not picked";
    const comments = attempt.review?.comments.filter((comment) => !comment.startsWith("git_diff:")).slice(0, 3) ?? [];
    return `- attempt ${attempt.number}: ${problem}${comments.length > 0 ? ` (${comments.join("; ")})` : ""}`;
  });
  const nextTask = wrong.length > 0 ? `${task}\n\nNo attempt of the last round passed:\n${wrong.join("\n")}` : task;
  return { decision: "continue", nextTask, consumedPending: 0, source, notes };
}
