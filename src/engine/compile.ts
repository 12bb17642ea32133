import { END, START, StateGraph, type BaseCheckpointSaver } from "@langchain/langgraph";
import { evaluateCondition } from "../format/condition.js";
import {
  END_NODE,
  START_NODE,
  type Branch,
  type Condition,
  type EdgeDefinition,
  type GraphDefinition,
  type NodeDefinition,
} from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { instrumentNode } from "../runtime/instrument.js";
import type { NodeFunction } from "../runtime/node-function.js";
import { GraphState, type GraphStateValue } from "../state/graph-state.js";
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
      // Compiled without a checkpointer: it inherits the parent's, under its own namespace.
      const subgraph = await compileGraph(inner, ctx, undefined, options);
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

/** Where an edge leads for this state, before visit limits. */
export function chooseTarget(edge: EdgeDefinition, state: GraphStateValue): string {
  if (edge.kind === "static") return edge.to;
  const index = chooseBranch(edge.branches, state);
  return index === undefined ? END_NODE : edge.branches[index]!.to;
}

/** Every node an edge can lead to, counting visit-limit fallbacks (LangGraph needs them for routing). */
export function possibleTargets(edge: EdgeDefinition, graph: GraphDefinition): string[] {
  const direct = edge.kind === "static" ? [edge.to] : edge.branches.map((b) => b.to);
  const all = new Set<string>();
  const visit = (target: string): void => {
    if (all.has(target)) return;
    all.add(target);
    const node = graph.nodes[target];
    if (node?.maxVisits) visit(node.onLimit ?? END_NODE);
  };
  direct.forEach(visit);
  return [...all];
}

export async function compileGraph(
  graph: GraphDefinition,
  ctx: RunContext,
  checkpointer?: BaseCheckpointSaver,
  options: CompileOptions = {},
) {
  // Node names are only known at run time, so the builder is used through its untyped surface.
  const builder = new StateGraph(GraphState) as unknown as UntypedBuilder;
  for (const node of Object.values(graph.nodes)) {
    builder.addNode(node.id, instrumentNode(node.id, await buildNode(node, graph, ctx, options), ctx));
  }
  for (const edge of graph.edges) {
    const from = edge.from === START_NODE ? START : edge.from;
    const targets = possibleTargets(edge, graph);
    if (edge.kind === "static" && targets.length === 1) {
      builder.addEdge(from, toLangGraphTarget(edge.to));
      continue;
    }
    builder.addConditionalEdges(
      from,
      (state: GraphStateValue) => toLangGraphTarget(applyVisitLimits(chooseTarget(edge, state), graph, state)),
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
  addEdge(from: string, to: string): void;
  addConditionalEdges(from: string, route: (state: GraphStateValue) => string, targets: string[]): void;
  compile(options: { checkpointer?: BaseCheckpointSaver; interruptBefore: string[]; interruptAfter: string[]; name: string }): unknown;
}

/** The part of LangGraph's compiled graph the engine uses. */
export type RunnableGraph = ReturnType<StateGraph<typeof GraphState.spec>["compile"]>;
