/**
 * Maps (docs/graph-format.md, "Map"): an edge that runs its target once per item of a list, the
 * instances together, each as LangGraph's `Send` with its own input.
 */
import { Send } from "@langchain/langgraph";
import { LoopgraphError } from "../errors.js";
import { getPath } from "../format/condition.js";
import type { GraphDefinition, MapEdge } from "../format/types.js";
import { asInstance } from "../runtime/call-site.js";
import type { NodeFunction } from "../runtime/node-function.js";
import type { GraphStateValue, TokenUsage } from "../state/graph-state.js";
import { addedUsage, gatheredOutput, MAP_INSTANCE_KEY, mapInstanceOf, type MapInstance } from "../state/map.js";

/**
 * The list a map runs over, in this state: the list at `over`, or for a whole number n there (a
 * count of attempts, say) the numbers 1 … n. A missing path, or any other value, is a run error.
 */
export function mapItems(edge: MapEdge, state: GraphStateValue): unknown[] {
  const items = getPath(state, edge.over);
  if (Array.isArray(items)) return items;
  if (Number.isSafeInteger(items) && (items as number) >= 0) return Array.from({ length: items as number }, (_, i) => i + 1);
  const found = items === undefined ? "is missing" : `is ${shownValue(items)}, not a list or a count`;
  throw new LoopgraphError(`the map from "${edge.from}" to "${edge.to[0]}" runs over ${edge.over}, which ${found}`);
}

/** A value as an error names it: a short scalar as it is, anything else by its type. */
function shownValue(value: unknown): string {
  if (value === null || typeof value === "object") return value === null ? "null" : "an object";
  const text = JSON.stringify(value) ?? typeof value;
  return text.length <= 40 ? text : `a ${typeof value}`;
}

/**
 * An instance's input: the parent's state with its item at `vars.<as>` and which instance it is.
 * Only the instance sees it: what the instance writes goes to the parent's channels as any write.
 */
function instanceInput(state: GraphStateValue, edge: MapEdge, item: unknown, instance: MapInstance): GraphStateValue {
  return { ...state, vars: { ...state.vars, [edge.as]: item }, [MAP_INSTANCE_KEY]: instance } as GraphStateValue;
}

/**
 * One `Send` per item. An empty list sends one instance of no items: it runs nothing, writes the
 * empty list as the node's output, and the mapped node's edges go on as after any map.
 */
export function mapSends(edge: MapEdge, state: GraphStateValue): Send[] {
  const node = edge.to[0];
  const items = mapItems(edge, state);
  const { as } = edge;
  if (items.length === 0) return [new Send(node, instanceInput(state, edge, undefined, { node, index: 0, count: 0, as }))];
  return items.map((item, index) => new Send(node, instanceInput(state, edge, item, { node, index, count: items.length, as })));
}

/** How many instances of a map may run at once: its own bound, capped by the graph's (undefined: all). */
export function mapConcurrency(edge: MapEdge, graph: GraphDefinition): number | undefined {
  const bounds = [edge.maxConcurrency, graph.limits.maxConcurrency].filter((bound): bound is number => bound !== undefined);
  return bounds.length > 0 ? Math.min(...bounds) : undefined;
}

/** Runs at most `limit` tasks at once, the others waiting in the order they came. */
export function concurrencyLimiter(limit: number | undefined): <T>(task: () => Promise<T>) => Promise<T> {
  if (limit === undefined) return (task) => task();
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiting task, so `running` counts it throughout.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/**
 * The mapped node as its instances run it: at most the map's bound at once (LangGraph starts them
 * all; the others wait here), each writing its output to its place in the gathered list.
 */
export function mappedNode(id: string, run: NodeFunction, limit: number | undefined): NodeFunction {
  const limited = concurrencyLimiter(limit);
  return async (state, config) => {
    const instance = mapInstanceOf(state);
    if (instance === undefined) throw new LoopgraphError(`node "${id}" is mapped, but ran without an item`);
    if (instance.count === 0) return { outputs: { [id]: [] } };
    const update = await limited(() => asInstance(config, id, instance.index, () => run(state, config)));
    const usage = update.usage?.[id];
    return {
      ...update,
      outputs: { ...update.outputs, [id]: gatheredOutput(instance, update.outputs?.[id] ?? null) },
      ...(usage && { usage: { ...update.usage, [id]: addedUsage(state.usage[id], usage) as unknown as TokenUsage } }),
    };
  };
}
