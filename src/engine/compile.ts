import { END, START, StateGraph, type BaseCheckpointSaver, type Send } from "@langchain/langgraph";
import { evaluateCondition } from "../format/condition.js";
import {
  END_NODE,
  START_NODE,
  type Branch,
  type Condition,
  type EdgeDefinition,
  type GraphDefinition,
  type NodeDefinition,
  edgeTargets,
  mapsOf,
} from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { instrumentNode } from "../runtime/instrument.js";
import type { NodeFunction } from "../runtime/node-function.js";
import { GraphState, type GraphStateValue } from "../state/graph-state.js";
import { mapConcurrency, mappedNode, mapSends } from "./map.js";
import type { RunContext } from "../runtime/context.js";

export type CompiledGraph = Awaited<ReturnType<typeof compileGraph>>;

/** How a graph is compiled. */
export interface CompileOptions {
  /** Compile the graph's breakpoints, and its subgraphs' (default true); a recorded replay runs without them. */
  breakpoints?: boolean;
}

/** Builds the node function for one node of a graph file, by its kind. */
function buildNode(
  node: NodeDefinition,
  graph: GraphDefinition,
  ctx: RunContext,
  options: CompileOptions,
): Promise<NodeFunction> | NodeFunction {
  return nodeKinds.of(node).create(node, graph, ctx, {
    failureRouted: failureRouted(graph, node.id),
    async compileInline(inner) {
      // Compiled without a checkpointer: it inherits the parent's, under its own namespace. It
      // shares the parent's state, so its nodes' writes combine by the parent's fields' reducers too.
      const shared = { ...inner, state: { ...graph.state, ...inner.state } };
      const subgraph = await compileGraph(shared, ctx, undefined, options);
      return async (state, config) => (await subgraph.invoke(state, config)) as GraphStateValue;
    },
  });
}

/**
 * Whether a failure result of node `id` is taken up by the graph: another node reads it (a
 * looper, review or judge that names the node) or a conditional edge out of the node looks at
 * `outputs.<id>`. Otherwise a failure of the node fails the run.
 */
export function failureRouted(graph: GraphDefinition, id: string): boolean {
  const named = Object.values(graph.nodes).some(
    (node) =>
      node.id !== id && (nodeKinds.of(node).nodeReferences ?? []).some((key) => (node as unknown as Record<string, unknown>)[key] === id),
  );
  const output = `outputs.${id}`;
  const read = (condition: Condition): boolean =>
    "all" in condition
      ? condition.all.some(read)
      : "any" in condition
        ? condition.any.some(read)
        : "not" in condition
          ? read(condition.not)
          : condition.path === output || condition.path.startsWith(`${output}.`);
  return (
    named ||
    graph.edges.some(
      (edge) =>
        edge.from === id && edge.kind === "conditional" && edge.branches.some((branch) => branch.when !== undefined && read(branch.when)),
    )
  );
}

const toLangGraphTarget = (target: string): string => (target === END_NODE ? END : target);

/**
 * Where an edge into `target` really goes: a node whose `max_visits` is used up hands over to
 * its `on_limit` target (END by default), which may itself be exhausted.
 */
export function applyVisitLimits(target: string, graph: GraphDefinition, state: GraphStateValue): string {
  return followVisitLimits(target, graph, state).to;
}

/**
 * `applyVisitLimits`, and the node whose used-up `max_visits` sent the edge to END, if one did
 * (the run then ends by that limit).
 */
export function followVisitLimits(target: string, graph: GraphDefinition, state: GraphStateValue): { to: string; exhausted?: string } {
  const seen = new Set<string>();
  let current = target;
  let exhausted: string | undefined;
  while (current !== END_NODE && !seen.has(current)) {
    seen.add(current);
    const node = graph.nodes[current];
    if (!node?.maxVisits || (state.visits[current] ?? 0) < node.maxVisits) return { to: current };
    exhausted = current;
    current = node.onLimit ?? END_NODE;
  }
  return { to: END_NODE, ...(exhausted !== undefined ? { exhausted } : {}) };
}

/** Index of the first branch of a conditional edge whose `when` holds (undefined: none, the run ends). */
export function chooseBranch(branches: readonly Branch[], state: GraphStateValue): number | undefined {
  const index = branches.findIndex((branch) => !branch.when || evaluateCondition(branch.when, state));
  return index < 0 ? undefined : index;
}

/** Where an edge leads for this state, before visit limits: the first matching branch's targets (END when none matches). */
export function chooseTargets(edge: EdgeDefinition, state: GraphStateValue): string[] {
  if (edge.kind !== "conditional") return edge.to;
  const index = chooseBranch(edge.branches, state);
  return index === undefined ? [END_NODE] : edge.branches[index]!.to;
}

/**
 * Where an edge goes for this state, as the compiled graph routes: each chosen target after
 * visit limits, once; END only when no node runs (beside nodes that run, it ends nothing).
 */
export function routeTargets(edge: EdgeDefinition, graph: GraphDefinition, state: GraphStateValue): string[] {
  const targets = new Set(chooseTargets(edge, state).map((target) => applyVisitLimits(target, graph, state)));
  const nodes = [...targets].filter((target) => target !== END_NODE);
  return nodes.length > 0 ? nodes : [END_NODE];
}

/** The instances a conditional edge sends when the branch it takes maps (LangGraph's Sends from a conditional edge); else undefined. */
function chosenMap(edge: EdgeDefinition, state: GraphStateValue): Send[] | undefined {
  if (edge.kind !== "conditional") return undefined;
  const branch = edge.branches[chooseBranch(edge.branches, state) ?? -1];
  if (!branch?.map) return undefined;
  return mapSends({ kind: "map", from: edge.from, to: [branch.to[0]!], ...branch.map }, state);
}

/** Every node an edge can lead to, counting visit-limit fallbacks (LangGraph needs them for routing). */
export function possibleTargets(edge: EdgeDefinition, graph: GraphDefinition): string[] {
  const all = new Set<string>();
  const visit = (target: string): void => {
    if (all.has(target)) return;
    all.add(target);
    const node = graph.nodes[target];
    if (node?.maxVisits) visit(node.onLimit ?? END_NODE);
  };
  edgeTargets(edge).forEach(visit);
  return [...all];
}

/**
 * The edges as LangGraph gets them: a node's static edges as one (their targets run together),
 * so that a node routes once. (A node has static edges or one conditional edge: ../graph/semantics.ts.)
 */
function combineStaticEdges(edges: readonly EdgeDefinition[]): EdgeDefinition[] {
  const combined: EdgeDefinition[] = [];
  const staticFrom = new Map<string, { kind: "static"; from: string; to: string[] }>();
  for (const edge of edges) {
    if (edge.kind !== "static") {
      combined.push(edge);
      continue;
    }
    const earlier = staticFrom.get(edge.from);
    if (earlier) earlier.to = [...new Set([...earlier.to, ...edge.to])];
    else {
      const copy = { ...edge, to: [...edge.to] };
      staticFrom.set(edge.from, copy);
      combined.push(copy);
    }
  }
  return combined;
}

export async function compileGraph(
  graph: GraphDefinition,
  ctx: RunContext,
  checkpointer?: BaseCheckpointSaver,
  options: CompileOptions = {},
) {
  // Node names are only known at run time, so the builder is used through its untyped surface.
  const builder = new StateGraph(GraphState) as unknown as UntypedBuilder;
  const maps = mapsOf(graph.edges);
  for (const node of Object.values(graph.nodes)) {
    const run = instrumentNode(node.id, await buildNode(node, graph, ctx, options), ctx);
    const map = maps.find((edge) => edge.to[0] === node.id);
    builder.addNode(node.id, map ? mappedNode(node.id, run, mapConcurrency(map, graph)) : run);
  }
  for (const edge of combineStaticEdges(graph.edges)) {
    if (edge.kind === "map") {
      // The Sends carry each instance's input; the path map names the one node they may go to.
      builder.addConditionalEdges(edge.from === START_NODE ? START : edge.from, (state) => mapSends(edge, state), edge.to);
      continue;
    }
    if (edge.kind === "join") {
      // LangGraph's multi-source edge: the target runs once every source has finished.
      for (const to of edge.to) builder.addEdge(edge.from, toLangGraphTarget(to));
      continue;
    }
    const from = edge.from === START_NODE ? START : edge.from;
    const targets = possibleTargets(edge, graph);
    if (edge.kind === "static" && targets.length === edge.to.length) {
      for (const to of edge.to) builder.addEdge(from, toLangGraphTarget(to));
      continue;
    }
    builder.addConditionalEdges(
      from,
      (state: GraphStateValue) => chosenMap(edge, state) ?? routeTargets(edge, graph, state).map(toLangGraphTarget),
      targets.map(toLangGraphTarget),
    );
  }
  return builder.compile({
    checkpointer,
    interruptBefore: options.breakpoints === false ? [] : graph.breakpoints.before,
    interruptAfter: options.breakpoints === false ? [] : graph.breakpoints.after,
    name: graph.name,
  }) as unknown as RunnableGraph;
}

interface UntypedBuilder {
  addNode(id: string, fn: NodeFunction): void;
  addEdge(from: string | string[], to: string): void;
  addConditionalEdges(from: string, route: (state: GraphStateValue) => string[] | Send[], targets: string[]): void;
  compile(options: { checkpointer?: BaseCheckpointSaver; interruptBefore: string[]; interruptAfter: string[]; name: string }): unknown;
}

/** The part of LangGraph's compiled graph the engine uses. */
export type RunnableGraph = ReturnType<StateGraph<typeof GraphState.spec>["compile"]>;
