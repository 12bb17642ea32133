import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import type { GraphDefinition, NodeDefinition } from "../../format/types.js";
import { defineNodeKind } from "../../runtime/node-kind.js";

export interface SubgraphNodeDefinition extends NodeDefinition {
  kind: "subgraph";
  /** The nested graph, already loaded and validated. */
  graph: GraphDefinition;
}

const subgraphNode = z.strictObject({
  kind: z.literal("subgraph"),
  ...nodeCommon,
  graph: z.string().describe("Graph file relative to this one"),
});

/** Another graph file, run inside this node in the same thread (its checkpoints under the node's namespace). */
export const subgraphKind = defineNodeKind({
  kind: "subgraph",
  schema: subgraphNode,
  usesModel: false,
  varsWritten: () => "any",
  runsAlone: true,
  async resolve(raw, common, files): Promise<SubgraphNodeDefinition | undefined> {
    const graph = await files.graph(raw.graph, "graph", "subgraph file");
    return graph && { ...common, kind: "subgraph", graph };
  },
  inlineGraph: (def) => def.graph,
  create: (def, _graph, _ctx, build) => build.compileInline(def.graph),
});
