import { GraphRecursionError, isGraphDrained } from "@langchain/langgraph";
import { CancelledError, cancelledByUser, ExitCode, LimitError, LoopgraphError } from "../errors.js";
import { END_NODE, type GraphDefinition } from "../format/types.js";
import { looperKind } from "../nodes/looper/kind.js";
import { nodeKinds } from "../nodes/registry.js";
import { isConnectionLost, storeWentAway } from "../store/postgres/outage.js";
import { storeStop } from "../store/store.js";
import type { RunEnding } from "../runtime/node-kind.js";
import { nodesOfKind } from "../runtime/node-kind.js";
import type { GraphStateValue } from "../state/graph-state.js";
import type { RunStatus } from "../state/thread.js";
import { chooseTargets, followVisitLimits, type RunnableGraph } from "./compile.js";
import type { RunOutcome } from "./run-types.js";

/** The exit code of each way a run ends (docs/exit-codes.md). */
export const EXIT_CODES: Record<RunStatus, number> = {
  finished: ExitCode.Finished,
  failed: ExitCode.Failed,
  paused: ExitCode.Paused,
  limited: ExitCode.Limit,
  interrupted: ExitCode.Interrupted,
};

type Config = Parameters<RunnableGraph["getState"]>[0];
type Settled = Omit<RunOutcome, "state">;

/** The `visits` channel of a root checkpoint of the thread, read without decoding the rest of its state. */
export type VisitsReader = (checkpointId: string) => Promise<Record<string, number> | undefined>;

/**
 * How a run that stopped without an error stands: paused (an approval, a breakpoint), or, when
 * the graph has ended, finished unless the node that ran last says the work was not done (see
 * `runEnding`); with the state it stands in. The state is decoded once: the parent checkpoint's
 * visit counts (what ran last) are read alone, by `readVisits` (a long thread's state takes
 * tens of megabytes decoded).
 */
export async function settledOutcome(
  compiled: RunnableGraph,
  config: Config,
  graph: GraphDefinition,
  threadId: string,
  readVisits: VisitsReader,
): Promise<Settled & { state: GraphStateValue }> {
  const snapshot = await compiled.getState(config);
  const state = snapshot.values as GraphStateValue;
  const visitsNow = state.visits ?? {};
  const visitsBefore = async (): Promise<Record<string, number>> => {
    const parentId = snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parentId === undefined) return {};
    const narrow = await readVisits(parentId);
    if (narrow) return narrow;
    const parent = await compiled.getState(snapshot.parentConfig!);
    return (parent.values as GraphStateValue).visits ?? {};
  };
  const settle = (settled: Settled) => ({ ...settled, state });
  if (snapshot.next.length === 0) {
    const ending = runEnding(graph, state, ranLast(visitsNow, await visitsBefore()));
    if (!ending) return settle({ threadId, status: "finished", exitCode: ExitCode.Finished, ended: true });
    return settle({ threadId, status: ending.status, exitCode: EXIT_CODES[ending.status], error: ending.reason, ended: true });
  }
  // Branches of one step may each ask (a map's instances, a fan-out): every question is listed, answered by its id.
  // A task that finished since it asked (answered by its own id) keeps its old question in the store: it asks nothing now.
  const pending = snapshot.tasks.flatMap((task) =>
    (task.result !== undefined ? [] : (task.interrupts ?? [])).map((asked) => ({
      id: asked.id ?? "",
      node: task.name,
      value: asked.value as unknown,
    })),
  );
  if (pending.length > 0) {
    const [first] = pending;
    const several = pending.length > 1 ? { pending } : {};
    return settle({
      threadId,
      status: "paused",
      exitCode: ExitCode.Paused,
      pause: { reason: "input", node: first!.node, value: first!.value, ...several },
    });
  }
  const before = snapshot.next.find((node) => graph.breakpoints.before.includes(node));
  if (before)
    return settle({ threadId, status: "paused", exitCode: ExitCode.Paused, pause: { reason: "breakpoint", node: before, when: "before" } });
  // Paused after a node: the breakpoint node is the one whose visit count rose in the last step.
  const ran = ranLast(visitsNow, await visitsBefore());
  const after = graph.breakpoints.after.find((node) => ran.includes(node));
  return settle({ threadId, status: "paused", exitCode: ExitCode.Paused, pause: { reason: "breakpoint", node: after, when: "after" } });
}

/** The nodes that ran in a step: those whose visit count rose. */
function ranLast(now: Record<string, number>, before: Record<string, number>): string[] {
  return Object.keys(now).filter((node) => (now[node] ?? 0) > (before[node] ?? 0));
}

/**
 * Why a graph that ended after `ran` did not finish its work, if it did not: the last node says
 * so (`NodeKind.ending`: the Looper's round limit, a stop, a Judge that ended the loop after a
 * failed Coder), or an edge out of it led to END only because a node's `max_visits` was used up.
 */
export function runEnding(graph: GraphDefinition, state: GraphStateValue, ran: readonly string[]): RunEnding | undefined {
  for (const id of ran) {
    const node = graph.nodes[id];
    const ending = node && nodeKinds.of(node).ending?.(node as never, state);
    if (ending) return ending;
  }
  for (const id of ran) {
    // A join's target has no visit limit (../graph/semantics.ts), so only a node's own edges can end the run so.
    for (const edge of graph.edges.filter((e) => e.kind !== "join" && e.from === id)) {
      const exhausted = chooseTargets(edge, state)
        .filter((target) => target !== END_NODE)
        .map((target) => followVisitLimits(target, graph, state).exhausted)
        .find((node) => node !== undefined);
      if (exhausted === undefined) continue;
      const limit = graph.nodes[exhausted]!.maxVisits;
      return {
        status: "limited",
        reason: `node "${exhausted}" reached its max_visits (${limit}) and the run ended before the work was judged done: raise max_visits in ${graph.file}, or give on_limit a node that handles it`,
      };
    }
  }
  return undefined;
}

/** Supersteps a Looper round takes: each phase (Coder, Review, Judge), each followed by the looper. */
const STEPS_PER_ROUND = 6;

/**
 * The run's step limit: `limits.max_steps`, raised when a looper's round limit (`--max-rounds`, else
 * its `max_rounds`) needs more, to 6 steps per round plus one per node of the graph.
 */
export function stepLimit(graph: GraphDefinition, maxRounds?: number): number {
  const rounds = Math.max(0, ...nodesOfKind(graph, looperKind).map((looper) => maxRounds ?? looper.maxRounds));
  const needed = rounds > 0 ? rounds * STEPS_PER_ROUND + Object.keys(graph.nodes).length : 0;
  return Math.max(graph.limits.maxSteps, needed);
}

/**
 * A run whose store stopped it (see `storeStop`: locked by another program beyond the busy
 * timeout, or its disk full, when a checkpoint, a recording or the snapshot log was written): it
 * stops, interrupted, at its last checkpoint, and `resume` continues from there.
 */
function storeStoppedOutcome(stop: { what: string; when: string }, threadId: string): Settled {
  return {
    threadId,
    status: "interrupted",
    exitCode: ExitCode.Interrupted,
    error: `${stop.what}: the run stopped at its last checkpoint; continue it with \`loopgraph resume ${threadId}\` ${stop.when}`,
  };
}

/**
 * A run whose PostgreSQL store went away (the server stopped or restarts): as a lock, it stops,
 * interrupted, at its last checkpoint, and `resume` continues from there once the server is back.
 */
function storeLostOutcome(path: string, threadId: string, error: unknown): Settled {
  return { threadId, status: "interrupted", exitCode: ExitCode.Interrupted, error: storeWentAway(path, threadId, error), storeLost: true };
}

/** How a run ends that the store stopped (locked beyond the timeout, its disk full, or its server gone away); undefined for any other error. */
export function storeStopOutcome(error: unknown, path: string, threadId: string, env: NodeJS.ProcessEnv): Settled | undefined {
  if (isConnectionLost(error)) return storeLostOutcome(path, threadId, error);
  const stop = storeStop(path, error, env);
  return stop && storeStoppedOutcome(stop, threadId);
}

/** Whether `error`, or an error it wraps, is the user's cancellation. */
function isCancellation(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth++) {
    if (current instanceof CancelledError) return true;
  }
  return false;
}

/**
 * How a run that threw ends: interrupted when drained, or when the user aborted its step in
 * flight (`signal`, however the error reached here: LangGraph and the nodes may wrap it);
 * limited by a step limit; else failed with the error's first line.
 */
export function failureOutcome(error: unknown, graph: GraphDefinition, threadId: string, limit: number, signal?: AbortSignal): Settled {
  if (isGraphDrained(error) || cancelledByUser(signal) || isCancellation(error)) {
    return { threadId, status: "interrupted", exitCode: ExitCode.Interrupted };
  }
  if (error instanceof GraphRecursionError) {
    return {
      threadId,
      status: "limited",
      exitCode: ExitCode.Limit,
      error:
        limit > graph.limits.maxSteps
          ? `the run reached its step limit (${limit}, raised from limits.max_steps for the round limit) of ${graph.file}: resume it for ${limit} more steps, or raise limits.max_steps`
          : `the run reached limits.max_steps (${graph.limits.maxSteps}) of ${graph.file}: resume it for ${limit} more steps, raise limits.max_steps, or bound the loop with max_visits`,
    };
  }
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
  if (error instanceof LimitError || (error instanceof LoopgraphError && error.exitCode === ExitCode.Limit)) {
    return { threadId, status: "limited", exitCode: ExitCode.Limit, error: message };
  }
  const exitCode = error instanceof LoopgraphError ? error.exitCode : ExitCode.Failed;
  return { threadId, status: "failed", exitCode, error: message };
}
