import type { CoderFailureKind } from "../coder/types.js";
import type { ReviewResult } from "../../state/looper.js";
import type { JudgeInput } from "./input.js";
import { leadOf, withTaskContext } from "./next-task.js";

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
    // The model's task comes first; the context (the queued messages included) follows it.
    const decision: JudgeDecision = { decision: "continue", nextTask: composeNextTask(input, proposed.nextTask) };
    const missing = input.pending.filter((message) => !mentions(proposed.nextTask, message));
    if (missing.length === 0) return { decision, notes: [] };
    return {
      decision,
      notes: [`guard: the model's next task left out ${count(missing.length, "pending message")}, listed verbatim after it`],
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
        decision: {
          decision: "terminate",
          reason: withUnstartedPending(`the Coder failed (${failure}), which another round cannot fix`, pending),
        },
        why: `the Coder failed with ${coder.failureKind}, which a retry cannot fix`,
      };
    }
    const retryTask = `${leadOf(task)}\n\nThe previous round failed (${failure}). Pick up from the current state of the workspace and change the approach where it failed.`;
    return {
      decision: { decision: "continue", nextTask: composeNextTask(input, retryTask) },
      why: `the Coder failed (${coder?.failureKind ?? "no result"}), which a new round may fix`,
    };
  }
  if (review) {
    // Only an incomplete review gets here: a complete one imposes its decision.
    return {
      decision: {
        decision: "terminate",
        reason: `the Coder finished but the review was incomplete (${failedChecks(review).join(" and ")} failed): the work is only partly verified`,
      },
      why: "the Coder succeeded, the review is incomplete and nothing is pending",
    };
  }
  return {
    decision: { decision: "terminate", reason: "the Coder finished but the Review left no result: the work is unverified" },
    why: "the Coder succeeded, no review result is available and nothing is pending",
  };
}

/** The checks of a review that failed (did not judge); a review with any is incomplete, not a pass. */
function failedChecks(review: ReviewResult): string[] {
  return Object.entries(review.checks)
    .filter(([, check]) => !check.ok)
    .map(([name]) => name);
}

/**
 * What the rules decide whatever the model says; undefined where the model's judgement is
 * needed. A failed Coder comes first: then the model weighs whether a retry is worth it, even
 * when the review (of a failed turn) is critical.
 */
function imposedDecision(input: JudgeInput): RuleDecision | undefined {
  const { coder, review, pending, task } = input;
  if (coder?.status !== "success") return undefined;
  if (review?.rating === "critical") {
    // The round's own task again (without the context it carried), with this round's context.
    return {
      decision: { decision: "continue", nextTask: composeNextTask(input, leadOf(task)) },
      why: "the review rated the work critical",
    };
  }
  if (pending.length > 0) {
    const lead = pending.length === 1 ? pending[0]! : bulleted("Requested by the user:", pending);
    return {
      decision: { decision: "continue", nextTask: composeNextTask(input, lead, { queuedInLead: true }) },
      why: `the Coder succeeded and ${count(pending.length, "pending message")} ${pending.length === 1 ? "waits" : "wait"}`,
    };
  }
  // A review whose check failed could not judge: it is no pass, the model weighs it (issue 13).
  if (review && failedChecks(review).length === 0) {
    return {
      decision: { decision: "terminate", reason: doneReason(review) },
      why: `the review passed (${review.rating}) and nothing is pending`,
    };
  }
  return undefined;
}

/**
 * A next task as one readable text: `lead` first (the model's next task, or the rules'), then the
 * context the Coder needs under its headings: the loop's original task, what the round just judged
 * did, the review's substantive comments (not the diff stat), and every queued message verbatim
 * (unless the lead is made of them).
 */
export function composeNextTask(input: JudgeInput, lead: string, { queuedInLead = false }: { queuedInLead?: boolean } = {}): string {
  return withTaskContext(lead, {
    ...(input.originalTask !== undefined && { originalTask: input.originalTask }),
    round: input.round,
    ...(input.coder && { coder: input.coder }),
    ...(input.review && { review: input.review }),
    queued: queuedInLead ? [] : input.pending,
  });
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
