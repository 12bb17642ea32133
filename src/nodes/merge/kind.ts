import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import type { MergeNodeDefinition } from "./definition.js";
import { createMergeNode, type MergeOutput } from "./node.js";

const mergeNode = z.strictObject({
  kind: z.literal("merge"),
  ...nodeCommon,
  branches: z
    .array(z.string())
    .min(1)
    .describe("Coder nodes with workspace: worktree whose branches are merged into the workspace, in this order"),
  pick: z
    .string()
    .describe("State path of the index (from 0) of the one instance of the mapped coder to apply, e.g. outputs.judge.index")
    .optional(),
});

/** Merges worktree coders' branches into the workspace; the result (applied, or the conflict) is its output. */
export const mergeKind = defineNodeKind({
  kind: "merge",
  schema: mergeNode,
  usesModel: false,
  resolve: (raw, common): MergeNodeDefinition => ({
    ...common,
    kind: "merge",
    branches: raw.branches,
    ...(raw.pick && { pick: raw.pick }),
  }),
  sideEffects: () => ["writes files"],
  create: (def, graph, ctx) => createMergeNode(def, graph, ctx),
  // A conflict is for an edge to route on: a graph that ends on it did not do its work.
  ending: (def, state) => {
    const merged = state.outputs[def.id] as MergeOutput | undefined;
    if (merged?.status !== "conflict") return undefined;
    const { branch, paths } = merged.conflict;
    return {
      status: "failed",
      reason: `node "${def.id}" could not merge ${branch} (a conflict in ${paths.join(", ")}), and the graph ended there: the workspace is unchanged, the branches are kept`,
    };
  },
});
