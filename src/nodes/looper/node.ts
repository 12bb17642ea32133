import { AIMessage } from "@langchain/core/messages";
import type { CoderResult } from "../coder/types.js";
import { describeComplexity } from "../coder/complexity.js";
import type { RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { applyLooperEvent, commandToEvent, initialLooperSnapshot, isRunning, ROUND_LIMIT, STOPPED_BY_USER, subStateOf } from "./index.js";
import type { JudgeResult, LooperEvent, LooperSnapshot, LooperSubState, ReviewResult } from "../../state/looper.js";
import { captureBaseline, GitError } from "../review/baseline.js";
import { briefTask, withMoreQueued } from "../judge/next-task.js";
import { totalUsage, type GraphStateValue, type TokenUsage } from "../../state/graph-state.js";
import type { NodeFunction, NodeUpdate } from "../../runtime/node-function.js";
import type { RunEnding } from "../../runtime/node-kind.js";
import type { LooperNodeDefinition } from "./definition.js";
import { applyPick, attemptStates, attemptsOutcome, restartAttempts, reviewsOutcome } from "./attempts.js";
import { visitNumber } from "../../state/map.js";

/** What the looper node writes to `outputs.<looper>`: the edges route on `next`. */
export interface LooperOutput {
  /** The phase node to run next, or "END" once the loop is idle. */
  next: string;
  state: "IDLE" | "RUNNING";
  subState?: LooperSubState;
  round: number;
  maxRounds: number;
  /** The phase node dispatched last, and how many times it had run then: its outcome is due when that count rises. */
  dispatched?: { node: string; visits: number };
  endReason?: string;
  /** The thread's token total (all nodes) when the current (or last) round began: the round's own tokens are counted from it. */
  roundStartUsage?: TokenUsage;
  /** Best-of-N rounds: how many Coders attempt each round's task (the graph maps the coder over it). */
  attempts?: number;
  /** The last round's picked attempt could not be applied: why (the run fails). */
  applyConflict?: string;
}

export const AUTO_PREFIX = "[AUTO]";

/**
 * One `[AUTO]` log entry: the prefix, then the text; the text's further lines are indented by the
 * prefix's width, so a multi-line entry reads as one under its prefix wherever it is printed.
 */
export function autoEntry(text: string): string {
  return `${AUTO_PREFIX} ${text.split("\n").join(`\n${" ".repeat(AUTO_PREFIX.length + 1)}`)}`;
}

/** "1 file", "2 files". */
const filesCount = (count: number): string => `${count} file${count === 1 ? "" : "s"}`;

/**
 * The Looper: hand-written logic, no model. It runs between every phase: it applies
 * the commands sent to the thread (inbox), then the outcome of the phase that just ran, to the
 * lifecycle machine, starts rounds (with a workspace baseline for the Review), and routes to the
 * next phase. Each change is logged as an `[AUTO]` message.
 */
export function createLooperNode(def: LooperNodeDefinition, ctx: RunContext): NodeFunction {
  const phaseNode: Record<LooperSubState, string> = {
    WAITING_CODER: def.coder,
    WAITING_REVIEW: def.review,
    JUDGE: def.judge,
  };
  const maxRounds = ctx.maxRounds ?? def.maxRounds;

  return async (state, config) => {
    const previous = state.outputs[def.id] as LooperOutput | undefined;
    // Kept from the loop's first step: a resume without --attempts goes on with the count it began with.
    const attempts = def.attempts === undefined ? undefined : (previous?.attempts ?? ctx.attempts ?? def.attempts);
    let snapshot: LooperSnapshot = state.loopState ?? initialLooperSnapshot(maxRounds);
    const log: string[] = [];
    // The task of a round begun in this step (the last one, should several begin).
    let roundTask: string | undefined;
    const apply = (event: LooperEvent): void => {
      const applied = applyLooperEvent(snapshot, event);
      snapshot = applied.snapshot;
      if (applied.roundTask !== undefined) roundTask = applied.roundTask;
      if (applied.message && !applied.internal) log.push(applied.message);
    };

    if (!state.loopState && state.task) apply({ type: "START", task: state.task, maxRounds });
    const cursor = state.inboxCursor;
    const readInbox = { kind: "inbox" as const, node: def.id, name: "read_inbox", args: { cursor } };
    const commands = await performEffect(ctx, readInbox, async () => ctx.readInbox(cursor));
    let outcome = phaseOutcome(state, def);
    // The phase's result is logged first (it came before the commands, which may end the loop).
    const outcomeAt = log.length;
    for (const entry of commands) apply(commandToEvent(entry.command, maxRounds));
    let applyConflict: string | undefined;
    const judgeDecided = outcome !== undefined && previous?.dispatched?.node === def.judge;
    const judged = judgeDecided ? (state.outputs[def.judge] as JudgeResult | undefined) : undefined;
    if (judged?.decision === "pick") {
      // The tasks queued up to now (those sent while the Judge compared the attempts too) decide whether the loop goes on.
      const picked = await applyPick(ctx, def, judged, snapshot.context.pending, {
        step: `${def.id}-${visitNumber(state, def.id)}`,
        config,
      });
      applyConflict = picked.conflict;
      outcome = picked;
    }
    if (outcome) {
      log.splice(outcomeAt, 0, outcome.summary);
      const decided =
        judgeDecided && applyConflict === undefined ? withTasksQueuedMeanwhile(snapshot, outcome.event) : { event: outcome.event };
      if (decided.note) log.push(decided.note);
      // Decided again: the loop stays at JUDGE, whose node runs once more. A stop command (applied
      // above) has already ended the loop; without it, the stopped Coder's STOP does.
      if (!decided.decideAgain && (decided.event.type !== "STOP" || isRunning(snapshot))) apply(decided.event);
    }

    const subState = subStateOf(snapshot);
    const usedSoFar = totalUsage(state.usage);
    // A round that was running is over: the loop ended, or the next round began.
    const before = state.loopState;
    const start = before && isRunning(before) && (!subState || roundTask !== undefined) ? previous?.roundStartUsage : undefined;
    const finished = start && {
      round: before!.context.round,
      usage: { inputTokens: usedSoFar.inputTokens - start.inputTokens, outputTokens: usedSoFar.outputTokens - start.outputTokens },
    };
    const roundStartUsage = roundTask !== undefined ? usedSoFar : previous?.roundStartUsage;
    const outputs = { coders: state.outputs[def.coder], reviews: state.outputs[def.review], judged: state.outputs[def.judge] };
    const update: NodeUpdate = {
      loopState: attempts === undefined ? snapshot : { ...snapshot, attempts: attemptStates(attempts, subState, outputs) },
    };
    if (commands.length > 0) update.inboxCursor = commands.at(-1)!.id;
    if (subState === "WAITING_CODER" && roundTask !== undefined) {
      // The one copy of the round's task: the state's `task` channel (the machine keeps none).
      if (roundTask !== state.task) update.task = roundTask;
      // A loop began: its first round's task is the original one every next task carries.
      if (snapshot.context.round === 1 && roundTask !== state.loopTask) update.loopTask = roundTask;
      update.roundBaseline = await baselineOrNote(ctx, def.id, log);
      // Every attempt of the new round begins from the workspace as it is now (a picked attempt applied).
      if (attempts !== undefined) await restartAttempts(ctx, def, attempts);
    }

    const next = subState ? phaseNode[subState] : "END";
    const output: LooperOutput = {
      next,
      state: subState ? "RUNNING" : "IDLE",
      ...(subState ? { subState } : {}),
      round: snapshot.context.round,
      maxRounds: snapshot.context.maxRounds,
      ...(subState ? { dispatched: { node: next, visits: state.visits[next] ?? 0 } } : {}),
      ...(snapshot.context.endReason ? { endReason: snapshot.context.endReason } : {}),
      ...(roundStartUsage ? { roundStartUsage } : {}),
      ...(attempts !== undefined && { attempts }),
      ...(applyConflict !== undefined && { applyConflict }),
    };
    update.outputs = { [def.id]: output };
    const entries = log.map(autoEntry);
    update.messages = entries.map(
      (content, index) => new AIMessage({ id: `${def.id}-${visitNumber(state, def.id)}-${index}`, name: def.id, content }),
    );
    for (const content of entries) ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content });
    if (finished) ctx.emit({ type: "round_finished", threadId: ctx.threadId, node: def.id, ...finished });
    return update;
  };
}

/**
 * A snapshot of the workspace for the round's Review; if git fails, the Review goes without (and
 * warns). Taking it is an effect: recorded, and read from the record in a recorded replay.
 */
async function baselineOrNote(ctx: RunContext, node: string, log: string[]): Promise<string | undefined> {
  const request = { kind: "git" as const, node, name: "git_baseline", args: {} };
  const taken = await performEffect(ctx, request, async (): Promise<{ baseline?: string; error?: string }> => {
    try {
      return { baseline: await captureBaseline(ctx.workspace, ctx.secrets) };
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      return { error: error.message };
    }
  });
  if (taken.error !== undefined) log.push(`no workspace snapshot for this round (${taken.error}): the review cannot diff it`);
  return taken.baseline;
}

interface JudgedWithQueue {
  event: LooperEvent;
  /** A line for the log on the tasks queued meanwhile. */
  note?: string;
  /** The Judge runs again (the loop stays at JUDGE); the event is not applied. */
  decideAgain?: true;
}

/**
 * A Judge's decision with the tasks queued while it decided (sent during its model call, or while
 * a killed process ran it), which it did not see: it read the queue when it started and took in
 * the first `consumedPending` of it. A decision to end the loop is made again, with them; one to
 * go on takes them into the next round, listed after its task (as the rules list what the model
 * left out). At the round limit no round follows: they stay queued, listed in the "loop ended" line.
 */
function withTasksQueuedMeanwhile(snapshot: LooperSnapshot, event: LooperEvent): JudgedWithQueue {
  const goesOn = event.type === "JUDGE_CONTINUE" && snapshot.context.round < snapshot.context.maxRounds;
  // A stop (applied with the commands) ended the loop: nothing is left to decide.
  if ((event.type !== "JUDGE_TERMINATE" && !goesOn) || subStateOf(snapshot) !== "JUDGE") return { event };
  const unseen = snapshot.context.pending.slice(event.consumedPending);
  if (unseen.length === 0) return { event };
  const queued = `${unseen.length} task${unseen.length === 1 ? "" : "s"} queued while the judge decided (${unseen.map((task) => JSON.stringify(clip(task))).join(", ")})`;
  if (event.type === "JUDGE_TERMINATE")
    return { event, note: `${queued}: the judge decides again with ${unseen.length === 1 ? "it" : "them"}`, decideAgain: true };
  if (event.type !== "JUDGE_CONTINUE") return { event };
  return {
    event: { ...event, nextTask: withMoreQueued(event.nextTask, unseen), consumedPending: snapshot.context.pending.length },
    note: `${queued}: taken into the next round`,
  };
}

const clip = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * The machine event for the phase dispatched last, once that phase has run, with a line for the
 * log (coder status, review rating, judge decision and its reason); undefined before.
 */
function phaseOutcome(state: GraphStateValue, def: LooperNodeDefinition): { event: LooperEvent; summary: string } | undefined {
  const previous = state.outputs[def.id] as LooperOutput | undefined;
  const dispatched = previous?.dispatched;
  if (!dispatched || (state.visits[dispatched.node] ?? 0) <= dispatched.visits) return undefined;
  const result = state.outputs[dispatched.node];
  switch (dispatched.node) {
    case def.coder: {
      if (Array.isArray(result)) return attemptsOutcome(result);
      const coder = result as CoderResult | undefined;
      // The Coder saw a stop command between its steps: the loop ends now, with no Judge.
      if (coder?.failureKind === "stopped")
        return { event: { type: "STOP" }, summary: "coder stopped by the stop command before its next step" };
      const ok = coder?.status === "success";
      const task = coder?.complexity ? ` (${describeComplexity(coder.complexity)})` : "";
      const summary = ok
        ? `coder succeeded${task}: ${filesCount(coder.filesChanged.length)} changed`
        : `coder failed${coder?.failureKind ? ` (${coder.failureKind})` : ""}${task}: ${clip(coder?.failureReason ?? "no result")}`;
      return { event: { type: "CODER_DONE", ok }, summary };
    }
    case def.review: {
      if (Array.isArray(result)) return reviewsOutcome(result);
      const review = result as ReviewResult | undefined;
      const comments = review?.comments.length ? `: ${clip(review.comments.join("; "))}` : "";
      return { event: { type: "REVIEW_DONE" }, summary: `review rating: ${review?.rating ?? "none"}${comments}` };
    }
    case def.judge: {
      const judged = result as JudgeResult;
      return judged.decision === "continue"
        ? {
            event: { type: "JUDGE_CONTINUE", nextTask: judged.nextTask, consumedPending: judged.consumedPending },
            summary: `judge: continue (${judged.source}): ${clip(briefTask(judged.nextTask))}`,
          }
        : {
            event: { type: "JUDGE_TERMINATE", reason: judged.reason, consumedPending: judged.consumedPending },
            summary: `judge: terminate (${judged.source}): ${clip(judged.reason)}`,
          };
    }
    default:
      return undefined;
  }
}

/**
 * How a run ends when the graph ended after the looper (its loop went idle): by the round limit
 * (limited), by a stop from the user (interrupted), or by the Judge after a round whose Coder
 * failed (failed: the work was not done); undefined when the Judge ended it after a Coder that
 * succeeded, or no loop ran.
 */
export function looperEnding(def: LooperNodeDefinition, state: GraphStateValue): RunEnding | undefined {
  const output = state.outputs[def.id] as LooperOutput | undefined;
  if (output?.state !== "IDLE" || output.endReason === undefined) return undefined;
  if (output.endReason === ROUND_LIMIT) {
    return {
      status: "limited",
      reason: `the loop reached its round limit (${output.round} of ${output.maxRounds} rounds) before the Judge judged the work done`,
    };
  }
  if (output.endReason === STOPPED_BY_USER) return { status: "interrupted", reason: "the loop was stopped by the user (stop command)" };
  if (output.applyConflict !== undefined) return { status: "failed", reason: output.applyConflict };
  // Attempts: the Judge ends the loop only by a pick, which it can make only of one that succeeded.
  if (Array.isArray(state.outputs[def.coder])) return undefined;
  const coder = state.outputs[def.coder] as CoderResult | undefined;
  if (coder && coder.status !== "success")
    return { status: "failed", reason: `the Judge ended the loop after the Coder failed: ${output.endReason}` };
  return undefined;
}
