import type { CoderFailureKind } from "../coder/types.js";
import type { ReviewResult } from "../../state/looper.js";
import type { JudgeInput } from "./input.js";

/** What the Judge decides, from the model or from the rules. */
export type JudgeDecision = { decision: "continue"; nextTask: string } | { decision: "terminate"; reason: string };

export interface RuleDecision {
  decision: JudgeDecision;
  /** The rule that applied, for the notes. */
  why: string;
}

export interface GuardedDecision {
  decision: JudgeDecision;
  /** One note per guard that changed the model's decision; empty when it stands as the model gave it. */
  notes: string[];
}

/**
 * Coder failures that another round cannot fix: the model rejected the request itself, the
 * model has nothing left to answer with, or the user cancelled the turn. Everything else
 * (rate limit, timeout, server, network, step limit, loop detected) may go better next time.
 */
const UNFIXABLE_FAILURES: ReadonlySet<CoderFailureKind> = new Set(["model_bad_request", "model_exhausted", "cancelled", "stopped"]);

/** The model's decision under the rules: overridden where a rule imposes one, and never dropping a pending message. */
export function guardDecision(input: JudgeInput, proposed: JudgeDecision): GuardedDecision {
  const imposed = imposedDecision(input);
  if (imposed && imposed.decision.decision !== proposed.decision) {
    return {
      decision: imposed.decision,
      notes: [`guard: ${imposed.why}, so the loop must ${imposed.decision.decision}; the model said ${quoteDecision(proposed)}`],
    };
  }
  if (proposed.decision === "continue") {
    const missing = input.pending.filter((message) => !mentions(proposed.nextTask, message));
    if (missing.length === 0) return { decision: proposed, notes: [] };
    return {
      decision: { decision: "continue", nextTask: `${proposed.nextTask}\n\n${bulleted("Also requested by the user:", missing)}` },
      notes: [`guard: the model's next task left out ${count(missing.length, "pending message")}, appended verbatim`],
    };
  }
  if (input.pending.length === 0) return { decision: proposed, notes: [] };
  return {
    decision: { decision: "terminate", reason: withUnstartedPending(proposed.reason, input.pending) },
    notes: [`guard: the loop ends with ${count(input.pending.length, "pending message")} not started, listed in the reason`],
  };
}

/** The decision without a model: what the rules impose, else the retry rule for a failed Coder. */
export function ruleDecision(input: JudgeInput): RuleDecision {
  const imposed = imposedDecision(input);
  if (imposed) return imposed;
  const { coder, review, pending, task } = input;
  if (coder?.status !== "success") {
    const failure = coder ? `${coder.failureKind ?? "unknown"}${coder.failureReason ? `: ${coder.failureReason}` : ""}` : "no result";
    if (coder?.failureKind && UNFIXABLE_FAILURES.has(coder.failureKind)) {
      return {
        decision: { decision: "terminate", reason: withUnstartedPending(`the Coder failed (${failure}), which another round cannot fix`, pending) },
        why: `the Coder failed with ${coder.failureKind}, which a retry cannot fix`,
      };
    }
    const retryTask = `${task}\n\nThe previous round failed (${failure}). Pick up from the current state of the workspace and change the approach where it failed.`;
    return {
      decision: { decision: "continue", nextTask: composeNextTask({ task: retryTask, comments: review?.comments ?? [], pending }) },
      why: `the Coder failed (${coder?.failureKind ?? "no result"}), which a new round may fix`,
    };
  }
  return {
    decision: { decision: "terminate", reason: "the Coder finished but the Review left no result: the work is unverified" },
    why: "the Coder succeeded, no review result is available and nothing is pending",
  };
}

/**
 * What the rules decide whatever the model says; undefined where the model's judgement is
 * needed. A failed Coder comes first: then the model weighs whether a retry is worth it, even
 * when the review (of a failed turn) is critical.
 */
function imposedDecision(input: JudgeInput): RuleDecision | undefined {
  const { coder, review, pending, task } = input;
  if (coder?.status !== "success") return undefined;
  const comments = review?.comments ?? [];
  if (review?.rating === "critical") {
    return { decision: { decision: "continue", nextTask: composeNextTask({ task, comments, pending }) }, why: "the review rated the work critical" };
  }
  if (pending.length > 0) {
    return {
      decision: { decision: "continue", nextTask: composeNextTask({ comments, pending }) },
      why: `the Coder succeeded and ${count(pending.length, "pending message")} ${pending.length === 1 ? "waits" : "wait"}`,
    };
  }
  if (review) {
    return {
      decision: { decision: "terminate", reason: doneReason(review) },
      why: `the review passed (${review.rating}) and nothing is pending`,
    };
  }
  return undefined;
}

/** A next task that carries the review's comments and every pending message verbatim. */
export function composeNextTask({ task, comments, pending }: { task?: string; comments: readonly string[]; pending: readonly string[] }): string {
  if (!task && comments.length === 0 && pending.length === 1) return pending[0]!;
  const parts = task ? [task] : [];
  if (comments.length > 0) parts.push(bulleted("Review comments to address:", comments));
  if (pending.length > 0) parts.push(bulleted(parts.length > 0 ? "Also requested by the user:" : "Requested by the user:", pending));
  return parts.join("\n\n");
}

function doneReason(review: ReviewResult): string {
  const comments = review.comments.length > 0 ? `: ${review.comments.join("; ")}` : "";
  return `done: the review passed (${review.rating})${comments}`;
}

function withUnstartedPending(reason: string, pending: readonly string[]): string {
  if (pending.length === 0) return reason;
  return `${reason}; pending messages not started: ${pending.map((message) => JSON.stringify(message)).join(", ")}`;
}

/** Whether `text` contains `message`, ignoring case and runs of whitespace. */
function mentions(text: string, message: string): boolean {
  const normalise = (value: string) => value.toLowerCase().replace(/\s+/g, " ").trim();
  return normalise(text).includes(normalise(message));
}

function quoteDecision(decision: JudgeDecision): string {
  const detail = decision.decision === "continue" ? decision.nextTask : decision.reason;
  const oneLine = detail.replace(/\s+/g, " ");
  return `${decision.decision} (${JSON.stringify(oneLine.length > 120 ? `${oneLine.slice(0, 120)}…` : oneLine)})`;
}

const bulleted = (heading: string, items: readonly string[]): string => [heading, ...items.map((item) => `- ${item}`)].join("\n");

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;
