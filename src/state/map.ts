import type { TokenUsage } from "./usage.js";

/**
 * The state side of a map (docs/graph-format.md, "Map"): which instance a node's input belongs
 * to, and how the instances' outputs gather into one list in item order.
 */

/**
 * How an instance of a mapped node is named wherever it shows (a scripted response's `node`, its
 * records, events, approvals, lanes): `coder[1]`; a node that runs as no instance by its own name.
 */
export function instanceName(node: string, index?: number): string {
  return index === undefined ? node : `${node}[${index}]`;
}

/** One instance of a mapped node: its item's position in the list, and how many items there are. */
export interface MapInstance {
  node: string;
  index: number;
  count: number;
  /** The item's name: the instance reads it at `vars.<as>`. */
  as: string;
}

/**
 * The key of an instance's input that says which instance it is. Not a state channel: it is in
 * the input LangGraph's `Send` gives the instance, never in the parent's state.
 */
export const MAP_INSTANCE_KEY = "mapInstance";

/** The instance a node's input belongs to, if the node runs as an instance of a map. */
export function mapInstanceOf(input: object): MapInstance | undefined {
  const instance = (input as Record<string, unknown>)[MAP_INSTANCE_KEY];
  return typeof instance === "object" && instance !== null ? (instance as MapInstance) : undefined;
}

/** The marker of an instance's output write (stored with a superstep's pending writes, so a plain string). */
const GATHER = "__loopgraph_gather__";

/**
 * An instance's write of its node's output: its value and its place in the list. The instances
 * of one map all run in one superstep, whose writes LangGraph applies to a channel together, in
 * task order: the reducer puts each at its index (item order, whatever order they finished in).
 */
export interface GatheredOutput {
  [GATHER]: { index: number; count: number };
  value: unknown;
}

export function gatheredOutput(instance: MapInstance, value: unknown): GatheredOutput {
  return { [GATHER]: { index: instance.index, count: instance.count }, value };
}

/** Which instance wrote a gathered output: its index in the map's list. */
export function gatheredIndex(write: GatheredOutput): number {
  return write[GATHER].index;
}

/**
 * A list being gathered, between the writes of one superstep: the slots filled so far. Once all
 * are, the output is the plain list (so a stored state, and a replayed one, holds only lists).
 */
interface Gathering {
  [GATHER]: "gathering";
  items: unknown[];
  filled: boolean[];
}

export const isGatheredOutput = (value: unknown): value is GatheredOutput =>
  typeof value === "object" && value !== null && typeof (value as Record<string, unknown>)[GATHER] === "object";

const isGathering = (value: unknown): value is Gathering =>
  typeof value === "object" && value !== null && (value as Record<string, unknown>)[GATHER] === "gathering";

/** `earlier` with one more instance's output placed: a new gathering when `earlier` is the output of another step. */
function gather(earlier: unknown, write: GatheredOutput): unknown {
  const { index, count } = write[GATHER];
  const gathering: Gathering =
    isGathering(earlier) && earlier.items.length === count
      ? { ...earlier, items: [...earlier.items], filled: [...earlier.filled] }
      : { [GATHER]: "gathering", items: new Array<unknown>(count).fill(null), filled: new Array<boolean>(count).fill(false) };
  gathering.items[index] = write.value;
  gathering.filled[index] = true;
  return gathering.filled.every(Boolean) ? gathering.items : gathering;
}

/** Each node's latest output, by keyed overwrite; a map instance's output is placed in its map's list. */
export const mergeOutputs = (left: Record<string, unknown>, right: Record<string, unknown>): Record<string, unknown> => {
  const merged = { ...left };
  for (const [node, value] of Object.entries(right)) merged[node] = isGatheredOutput(value) ? gather(left[node], value) : value;
  return merged;
};

/** The marker of an instance's token usage write: the tokens its calls added, not the node's new total. */
const ADDED = "__loopgraph_added_usage__";

/** An instance's usage write: the tokens of its own calls, which the reducer adds to the node's total. */
export interface AddedUsage extends TokenUsage {
  [ADDED]: true;
}

/**
 * An instance writes its node's usage as the tokens it added, since its instances all started
 * from one total: as totals, the last would win and the others' tokens be lost.
 */
export function addedUsage(before: TokenUsage | undefined, after: TokenUsage): AddedUsage {
  return {
    [ADDED]: true,
    inputTokens: after.inputTokens - (before?.inputTokens ?? 0),
    outputTokens: after.outputTokens - (before?.outputTokens ?? 0),
  };
}

export const isAddedUsage = (value: unknown): value is AddedUsage =>
  typeof value === "object" && value !== null && (value as Record<string, unknown>)[ADDED] === true;

/** Each node's token total, by keyed overwrite; an instance's added tokens are added to it. */
export const mergeUsage = <T extends TokenUsage>(left: Record<string, T>, right: Record<string, T | AddedUsage>): Record<string, T> => {
  const merged = { ...left };
  for (const [node, value] of Object.entries(right)) {
    if (!isAddedUsage(value)) merged[node] = value;
    else {
      const total = left[node];
      merged[node] = {
        ...total,
        inputTokens: (total?.inputTokens ?? 0) + value.inputTokens,
        outputTokens: (total?.outputTokens ?? 0) + value.outputTokens,
      } as T;
    }
  }
  return merged;
};

/**
 * Which visit of node `id` this run of it is: the next, or for instance i of a map, the (i + 1)-th
 * of its step (the instances count one visit each), so ids built from it stay distinct.
 */
export function visitNumber(state: { visits: Record<string, number> }, id: string): number {
  return (state.visits[id] ?? 0) + 1 + (mapInstanceOf(state)?.index ?? 0);
}

/** The item of the instance a node's input belongs to (at `vars.<as>`), as text: a string as it is, any other value as JSON. */
export function mapItemText(input: { vars: Record<string, unknown> }, instance: MapInstance): string {
  const item = input.vars[instance.as];
  return typeof item === "string" ? item : JSON.stringify(item ?? null);
}
