import type { RerunNode } from "../runtime/events.js";
import { possibleTargets } from "../engine/compile.js";
import { END_NODE, edgeSources, type GraphDefinition, type NodeDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";

/**
 * What a node does beyond calling a model, as its kind says (the Coder's file and shell tools, a
 * function node's own code), and what the nodes of a graph run inside it do.
 */
export function sideEffects(node: NodeDefinition): string[] {
  const kind = nodeKinds.of(node);
  const inline = kind.inlineGraph?.(node);
  const own = kind.sideEffects?.(node) ?? [];
  return inline ? [...new Set([...own, ...Object.values(inline.nodes).flatMap(sideEffects)])] : own;
}

/** Every node that may run from `next` on (following all branches and visit-limit fallbacks), in the order reached. */
export function rerunPlan(graph: GraphDefinition, next: readonly string[]): RerunNode[] {
  const reached: string[] = [];
  const queue = next.filter((node) => graph.nodes[node]);
  while (queue.length > 0) {
    const node = queue.shift()!;
    if (reached.includes(node)) continue;
    reached.push(node);
    for (const edge of graph.edges.filter((e) => edgeSources(e).includes(node))) {
      queue.push(...possibleTargets(edge, graph).filter((target) => target !== END_NODE));
    }
  }
  return reached.map((node) => ({ node, effects: sideEffects(graph.nodes[node]!) }));
}
