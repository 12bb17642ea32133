import { basename } from "node:path";
import type { RerunNode } from "../runtime/events.js";
import { possibleTargets } from "../engine/compile.js";
import { END_NODE, type GraphDefinition, type NodeDefinition } from "../format/types.js";
import { BUILTIN_TOOLS } from "../tools/registry.js";
import type { ToolEffect } from "../tools/types.js";

const TOOL_EFFECTS: Partial<Record<ToolEffect, string>> = { edit: "writes files", execute: "runs shell" };

/**
 * What a node does beyond calling a model: the Coder's file and shell tools, a function node's
 * own code, and those of a subgraph's nodes. Review runs git read-only; agents, the Judge and
 * the Looper have no side effects.
 */
export function sideEffects(node: NodeDefinition): string[] {
  switch (node.kind) {
    case "coder": {
      const effects = BUILTIN_TOOLS.filter((tool) => node.tools.includes(tool.name)).map((tool) => TOOL_EFFECTS[tool.effect]);
      return [...new Set(effects.filter((effect) => effect !== undefined))];
    }
    case "function":
      return [`runs ${basename(node.module)}:${node.exportName}`];
    case "subgraph":
      return [...new Set(Object.values(node.graph.nodes).flatMap(sideEffects))];
    default:
      return [];
  }
}

/** Every node that may run from `next` on (following all branches and visit-limit fallbacks), in the order reached. */
export function rerunPlan(graph: GraphDefinition, next: readonly string[]): RerunNode[] {
  const reached: string[] = [];
  const queue = next.filter((node) => graph.nodes[node]);
  while (queue.length > 0) {
    const node = queue.shift()!;
    if (reached.includes(node)) continue;
    reached.push(node);
    for (const edge of graph.edges.filter((e) => e.from === node)) {
      queue.push(...possibleTargets(edge, graph).filter((target) => target !== END_NODE));
    }
  }
  return reached.map((node) => ({ node, effects: sideEffects(graph.nodes[node]!) }));
}
