import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { createReviewNode } from "./node.js";
import { resolveReviewNode, reviewNodeSchema } from "./schema.js";

const reviewNode = z.strictObject({ kind: z.literal("review"), ...nodeCommon, ...reviewNodeSchema.shape });

/** The Review: three checks in parallel over the Coder's result and the workspace's real diff. */
export const reviewKind = defineNodeKind({
  kind: "review",
  schema: reviewNode,
  nodeReferences: ["coder", "merge"],
  usesModel: true,
  readsTask: true,
  resolve: (raw, common, files) => resolveReviewNode(raw, common, (key, relative, defaultName) => files.prompt(relative, key, defaultName)),
  files: (def) => [def.specsPrompt, def.taskLogPrompt],
  create: (def, graph, ctx) => createReviewNode(def, graph, ctx),
});
