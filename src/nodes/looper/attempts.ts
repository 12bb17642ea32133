/**
 * Best-of-N rounds (a looper with `attempts`): each round's Coder phase is the coder mapped over
 * the attempts, each in its own branch worktree; the Review reviews each, the Judge compares them
 * and picks one (or asks for another round); the looper applies the pick to the workspace, and
 * when a new round begins every attempt's branch begins again from the workspace as it is then.
 */
import { ConfigError, LoopgraphError } from "../../errors.js";
import { mapsOf, type GraphDefinition } from "../../format/types.js";
import type { CoderNodeDefinition } from "../coder/definition.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { restartBranch } from "../../git/worktrees/index.js";
import { mergeIntoWorkspace } from "../merge/node.js";
import type { RunContext } from "../../runtime/context.js";
import { performEffect, performFallibleEffect } from "../../runtime/effects.js";
import type { AttemptState, JudgeResult, LooperEvent, LooperSubState, ReviewResult } from "../../state/looper.js";
import type { CoderResult } from "../coder/types.js";
import type { LooperNodeDefinition } from "./definition.js";

type Picked = Extract<JudgeResult, { decision: "pick" }>;

/**
 * A looper with attempts needs its coder mapped over them, in worktrees: else the attempts would
 * be silently one Coder in the workspace. Refused when the run starts (exit 2).
 */
export function checkAttemptsMapped(def: LooperNodeDefinition, graph: GraphDefinition): void {
  if (def.attempts === undefined) return;
  const over = `outputs.${def.id}.attempts`;
  const mapped = mapsOf(graph.edges).some((map) => map.to[0] === def.coder && map.over === over);
  const coder = graph.nodes[def.coder] as Partial<CoderNodeDefinition> | undefined;
  if (mapped && coder?.workspace === "worktree") return;
  throw new ConfigError(
    `node "${def.id}" has attempts, but its coder "${def.coder}" is not ${mapped ? "in worktrees (workspace: worktree)" : `mapped over ${over}`} in ${graph.file}: ` +
      `route to it with { when: { path: outputs.${def.id}.next, eq: ${def.coder} }, map: { over: ${over}, to: ${def.coder}, as: attempt } } (see graphs/coder-review-best-of-n.yaml)`,
  );
}

/** What a phase's outcome feeds the machine, with its line for the log. */
export interface PhaseOutcome {
  event: LooperEvent;
  summary: string;
}

/** The Coder phase over attempts: done when one attempt succeeded; a stop seen by any ends the loop. */
export function attemptsOutcome(results: readonly unknown[]): PhaseOutcome {
  const coders = results as (CoderResult | null | undefined)[];
  if (coders.some((coder) => coder?.failureKind === "stopped"))
    return { event: { type: "STOP" }, summary: "coder stopped by the stop command before its next step" };
  const states = coders.map(
    (coder, i) => `${i + 1} ${coder?.status === "success" ? "succeeded" : `failed (${coder?.failureKind ?? "no result"})`}`,
  );
  const ok = coders.some((coder) => coder?.status === "success");
  return { event: { type: "CODER_DONE", ok }, summary: `coder: ${coders.length} attempts: ${states.join(", ")}` };
}

/** The Review phase over attempts: each attempt's rating, and whether its check passed. */
export function reviewsOutcome(results: readonly unknown[]): PhaseOutcome {
  const reviews = results as (ReviewResult | null | undefined)[];
  const each = reviews.map((review, i) => {
    const check = review?.checks.command;
    return `${i + 1} ${review?.rating ?? "none"}${check ? (check.passed ? ", check passed" : ", check failed") : ""}`;
  });
  return { event: { type: "REVIEW_DONE" }, summary: `review of ${reviews.length} attempts: ${each.join("; ")}` };
}

/**
 * The Judge's pick, applied to the workspace (recorded: a recorded replay takes the result from
 * the record). Applied: the loop ends, or goes on with the messages queued meanwhile; a conflict
 * ends it with the workspace unchanged (the run fails, see looperEnding).
 */
export async function applyPick(
  ctx: RunContext,
  def: LooperNodeDefinition,
  picked: Picked,
  pending: readonly string[],
  at: { step: string; config: LangGraphRunnableConfig },
): Promise<PhaseOutcome & { conflict?: string }> {
  const branch = { threadId: ctx.threadId, node: def.coder, index: picked.index };
  const request = { kind: "git" as const, node: def.id, name: "apply_pick", args: { coder: def.coder, index: picked.index } };
  const merged = await performFallibleEffect(
    ctx,
    request,
    () => mergeIntoWorkspace(ctx, [branch], { node: def.id, ...at }),
    (message) => new LoopgraphError(`node "${def.id}" could not apply attempt ${picked.attempt}: ${message}`),
  );
  const what = `judge: picked attempt ${picked.attempt} (${picked.source}): ${picked.reason}`;
  if (merged.status === "conflict") {
    const conflict = `attempt ${picked.attempt} was picked, but its branch does not apply to the workspace (a conflict in ${merged.conflict.paths.join(", ")}): the workspace is unchanged`;
    return { event: { type: "JUDGE_TERMINATE", reason: conflict, consumedPending: 0 }, summary: `${what}; ${conflict}`, conflict };
  }
  const applied = `applied ${merged.applied.length} file${merged.applied.length === 1 ? "" : "s"} to the workspace`;
  if (pending.length === 0) {
    return {
      event: { type: "JUDGE_TERMINATE", reason: `attempt ${picked.attempt}: ${picked.reason}`, consumedPending: 0 },
      summary: `${what}; ${applied}`,
    };
  }
  // The messages queued while the attempts ran are the next round's task.
  const nextTask = pending.length === 1 ? pending[0]! : ["Requested by the user:", ...pending.map((message) => `- ${message}`)].join("\n");
  return {
    event: { type: "JUDGE_CONTINUE", nextTask, consumedPending: pending.length },
    summary: `${what}; ${applied}; pending messages start the next round`,
  };
}

/**
 * Each attempt of the round as far as it got, from the phase the loop is in and the outputs so
 * far: working while the Coders run, then each one's result, review and check, and the pick.
 */
export function attemptStates(
  count: number,
  phase: LooperSubState | undefined,
  outputs: { coders: unknown; reviews: unknown; judged: unknown },
): AttemptState[] {
  const coders = phase === "WAITING_CODER" || !Array.isArray(outputs.coders) ? [] : (outputs.coders as (CoderResult | null)[]);
  const reviews =
    phase === "WAITING_CODER" || phase === "WAITING_REVIEW" || !Array.isArray(outputs.reviews)
      ? []
      : (outputs.reviews as (ReviewResult | null)[]);
  const judged = phase === undefined ? (outputs.judged as JudgeResult | undefined) : undefined;
  return Array.from({ length: count }, (_, index): AttemptState => {
    const coder = coders[index];
    const review = reviews[index];
    const check = review?.checks.command;
    return {
      attempt: index + 1,
      coder: phase === "WAITING_CODER" ? "working" : coder?.status === "success" ? "succeeded" : "failed",
      ...(review && { review: review.rating }),
      ...(check && { check: check.passed ? ("passed" as const) : ("failed" as const) }),
      ...(judged?.decision === "pick" && judged.index === index && { picked: true as const }),
    };
  });
}

/** Each attempt's branch begins again from the workspace as it is now (recorded, as every git step of the loop). */
export async function restartAttempts(ctx: RunContext, def: LooperNodeDefinition, count: number): Promise<void> {
  const request = { kind: "git" as const, node: def.id, name: "restart_attempts", args: { coder: def.coder, count } };
  await performEffect(ctx, request, async () => {
    for (let index = 0; index < count; index++) {
      await restartBranch({ workspace: ctx.workspace, threadId: ctx.threadId, node: def.coder, index }, ctx.secrets ?? []);
    }
    return { count };
  });
}
