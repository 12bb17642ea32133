/**
 * The lanes of a parallel step (`inspect`): each task that ran in it (a map's instance, a branch
 * of a fan-out) with its own tokens and time. They are read from what the step left: each task's
 * pending writes (its node, its map index, the tokens it added) and the records of its calls (the
 * last one's time, counted from the step's start).
 */
import type { Store } from "../store/store.js";
import type { TokenUsage } from "../state/usage.js";
import { gatheredIndex, isAddedUsage, isGatheredOutput } from "../state/map.js";

export interface Lane {
  node: string;
  /** The instance's index, for a map's instance. */
  index?: number;
  tokens: TokenUsage;
  /** From the step's start to the task's last recorded call (model, tool, git, function); unknown without one. */
  seconds?: number;
}

/** What one task of the step wrote, by channel. */
type TaskWrites = Map<string, unknown>;

/** A parallel step: the checkpoint it ran from, and when that was written. */
export interface ParallelStep {
  parentId: string;
  startedAt: string;
}

/** The lanes of each step, by the checkpoint it ran from; the records of the thread are read once. */
export async function lanesOfSteps(store: Store, threadId: string, steps: readonly ParallelStep[]): Promise<Map<string, Lane[]>> {
  const lanes = new Map<string, Lane[]>();
  if (steps.length === 0) return lanes;
  const lastCalls = await lastCallTimes(store, threadId, new Set(steps.map((step) => step.parentId)));
  for (const step of steps) lanes.set(step.parentId, await stepLanes(store, threadId, step, lastCalls.get(step.parentId)));
  return lanes;
}

/** The lanes of one step, in task order: map instances by index. */
async function stepLanes(store: Store, threadId: string, step: ParallelStep, lastCall = new Map<string, number>()): Promise<Lane[]> {
  const config = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: step.parentId } };
  const tuple = await store.saver.getTuple(config);
  const tasks = new Map<string, TaskWrites>();
  for (const [taskId, channel, value] of tuple?.pendingWrites ?? []) {
    const writes = tasks.get(taskId) ?? new Map<string, unknown>();
    writes.set(channel, value);
    tasks.set(taskId, writes);
  }
  const usageBefore = ((tuple?.checkpoint.channel_values as Record<string, unknown> | undefined)?.usage ?? {}) as Record<
    string,
    TokenUsage
  >;
  const lanes: Lane[] = [];
  for (const [taskId, writes] of tasks) {
    const node = Object.keys((writes.get("visits") ?? {}) as object)[0];
    if (node === undefined) continue;
    const output = (writes.get("outputs") as Record<string, unknown> | undefined)?.[node];
    const last = lastCall.get(`${node}:${taskId}`);
    lanes.push({
      node,
      ...(isGatheredOutput(output) && { index: gatheredIndex(output) }),
      tokens: tokensOf((writes.get("usage") as Record<string, unknown> | undefined)?.[node], usageBefore[node]),
      ...(last !== undefined && { seconds: Math.max(0, (last - Date.parse(step.startedAt)) / 1000) }),
    });
  }
  return lanes.sort((a, b) => (a.node === b.node ? (a.index ?? 0) - (b.index ?? 0) : a.node < b.node ? -1 : 1));
}

/** A task's usage write as the tokens it spent: an instance's are what it added, a node's are its new total. */
function tokensOf(write: unknown, before: TokenUsage | undefined): TokenUsage {
  if (write === undefined) return { inputTokens: 0, outputTokens: 0 };
  const usage = write as TokenUsage;
  if (isAddedUsage(write)) return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
  return { inputTokens: usage.inputTokens - (before?.inputTokens ?? 0), outputTokens: usage.outputTokens - (before?.outputTokens ?? 0) };
}

/** For each step (by the checkpoint it ran from): the time of each task's last recorded call, by its task path's first part (`node:task`). */
async function lastCallTimes(store: Store, threadId: string, parents: ReadonlySet<string>): Promise<Map<string, Map<string, number>>> {
  const times = new Map<string, Map<string, number>>();
  for (const record of await store.recordings.list(threadId)) {
    if (!parents.has(record.checkpointId)) continue;
    const task = record.taskPath.split("|")[0]!;
    const step = times.get(record.checkpointId) ?? new Map<string, number>();
    step.set(task, Math.max(step.get(task) ?? 0, Date.parse(record.createdAt)));
    times.set(record.checkpointId, step);
  }
  return times;
}
