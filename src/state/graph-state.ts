import { Annotation, messagesStateReducer } from "@langchain/langgraph";
import type { BaseMessage } from "@langchain/core/messages";
import type { LooperSnapshot } from "./looper.js";
import type { PolicyRule } from "./rules.js";
import { mergeOutputs, mergeUsage } from "./map.js";
import type { TokenUsage } from "./usage.js";

export { totalUsage, type TokenUsage } from "./usage.js";

/**
 * Every reducer here is an idempotent merge (keyed overwrite, union, or merge-by-id), so a
 * subgraph that hands back its whole state, or a replayed write, never double-counts.
 * Nodes therefore write absolute values (e.g. `visits: {draft: 3}`), not increments.
 */
const mergeRecords = <T>(left: Record<string, T>, right: Record<string, T>): Record<string, T> => ({
  ...left,
  ...right,
});

/**
 * A node's write of one `vars` field whose `state:` declares `reducer: append` or `merge`: the
 * items to append, or the keys to set, rather than the field's new value.
 *
 * Why the write says how it combines, rather than a `vars` reducer built per graph: the channel
 * keeps one static reducer (one annotation for every graph and subgraph, checkpoints unchanged),
 * and a plain value must go on replacing, as every other write is an idempotent merge: a subgraph
 * hands back its whole state, and `replay --from` writes a whole recorded state, whose values
 * already hold every append. Only a node's own write is a delta, and it says so; `replace` (and a
 * field without a reducer) is a plain value, the last write of a superstep winning (LangGraph
 * applies a superstep's writes in the order of its tasks: by node id).
 */
export interface CombinedWrite {
  [COMBINE]: "append" | "merge";
  value: unknown;
}

/** The key that marks a CombinedWrite (stored with a superstep's pending writes, so a plain string). */
const COMBINE = "__loopgraph_combine__";

export function combinedWrite(reducer: CombinedWrite[typeof COMBINE], value: unknown): CombinedWrite {
  return { [COMBINE]: reducer, value };
}

function isCombinedWrite(value: unknown): value is CombinedWrite {
  return typeof value === "object" && value !== null && COMBINE in value;
}

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** Keyed overwrite, except for combined writes: appended to the field's list, or merged into its object. */
export const mergeVars = (left: Record<string, unknown>, right: Record<string, unknown>): Record<string, unknown> => {
  const merged = { ...left };
  for (const [field, value] of Object.entries(right)) {
    if (!isCombinedWrite(value)) merged[field] = value;
    else if (value[COMBINE] === "append")
      merged[field] = [...(Array.isArray(left[field]) ? left[field] : []), ...(value.value as unknown[])];
    else merged[field] = { ...asRecord(left[field]), ...asRecord(value.value) };
  }
  return merged;
};

/**
 * The scripted responses one script has given, per group: a response's `node`, or
 * `SCRIPTED_ANY_NODE` for the responses without one. A call always takes the first unused
 * response of its node's group or of the shared group, so each group is used from its start
 * and a count says which of its responses are used (docs/scripted-model.md).
 */
export type ScriptedCounts = Record<string, number>;

/** The group of the scripted responses that name no `node`. */
export const SCRIPTED_ANY_NODE = "*";

/**
 * A script's consumption as stored: counts, or, in a thread stored before the counts, the
 * sorted list of the response indices used (the scripted model reads it as counts; the next
 * write of the script's counts replaces it).
 */
export type ScriptedConsumed = ScriptedCounts | number[];

const unionSorted = (left: number[], right: number[]): number[] => [...new Set([...left, ...right])].sort((a, b) => a - b);

/** Per group, the larger count: both writers' responses stay used (a union, as the counts are prefixes). */
const mergeCounts = (left: ScriptedCounts, right: ScriptedCounts): ScriptedCounts => {
  const merged = { ...left };
  for (const [group, count] of Object.entries(right)) merged[group] = Math.max(merged[group] ?? 0, count);
  return merged;
};

/**
 * Scripted consumption per model spec, merged by union: counts by the larger count per group.
 * Counts written over a stored list replace it (they were computed from it, so they include it).
 */
export const mergeConsumed = (
  left: Record<string, ScriptedConsumed>,
  right: Record<string, ScriptedConsumed>,
): Record<string, ScriptedConsumed> => {
  const merged = { ...left };
  for (const [model, consumed] of Object.entries(right)) {
    const known = merged[model];
    if (known === undefined) merged[model] = consumed;
    else if (Array.isArray(known) && Array.isArray(consumed)) merged[model] = unionSorted(known, consumed);
    else if (!Array.isArray(known) && !Array.isArray(consumed)) merged[model] = mergeCounts(known, consumed);
    else merged[model] = consumed;
  }
  return merged;
};

/** Rules are compared whole, so adding the same "always" rule twice keeps one. */
export const mergeRules = (left: PolicyRule[], right: PolicyRule[]): PolicyRule[] => {
  const known = new Set(left.map((rule) => JSON.stringify(rule)));
  return [...left, ...right.filter((rule) => !known.has(JSON.stringify(rule)))];
};

export const GraphState = Annotation.Root({
  task: Annotation<string>({ reducer: (_, next) => next, default: () => "" }),
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  /** Each node's latest output: text, or the parsed structured output (a mapped node's: the list of its instances'). */
  outputs: Annotation<Record<string, unknown>>({ reducer: mergeOutputs, default: () => ({}) }),
  /** User-declared fields (the graph file's `state:`); writes of fields with a reducer combine (see CombinedWrite). */
  vars: Annotation<Record<string, unknown>>({ reducer: mergeVars, default: () => ({}) }),
  /** How many times each node has run in this thread. */
  visits: Annotation<Record<string, number>>({ reducer: mergeRecords, default: () => ({}) }),
  /** Cumulative token usage per node (a map's instances add theirs). */
  usage: Annotation<Record<string, TokenUsage>>({ reducer: mergeUsage, default: () => ({}) }),
  /** Scripted responses consumed, per model spec: part of the state so a resumed run never replays one. */
  scripted: Annotation<Record<string, ScriptedConsumed>>({ reducer: mergeConsumed, default: () => ({}) }),
  /** Policy rules the user added by answering "always" to an approval: they hold for the whole thread. */
  sessionRules: Annotation<PolicyRule[]>({ reducer: mergeRules, default: () => [] }),
  /**
   * The current (or last) loop's original task, its first round's: written only when a loop
   * starts, so stored once per loop. The Judge hands it on with every next task.
   */
  loopTask: Annotation<string>({ reducer: (_, next) => next, default: () => "" }),
  /** The Looper's lifecycle machine (state value and context), advanced by the looper node. */
  loopState: Annotation<LooperSnapshot | undefined>({ reducer: (_, next) => next, default: () => undefined }),
  /** Id of the last inbox command consumed: written in the same checkpoint as the command's effect. */
  inboxCursor: Annotation<number>({ reducer: (left, right) => Math.max(left, right), default: () => 0 }),
  /** Workspace snapshot taken when the current round began: the Review diffs against it. */
  roundBaseline: Annotation<string | undefined>({ reducer: (_, next) => next, default: () => undefined }),
});

export type GraphStateValue = typeof GraphState.State;

/** The state's channel names: LangGraph forbids node ids equal to them. */
export const STATE_CHANNELS: readonly string[] = Object.keys(GraphState.spec);
