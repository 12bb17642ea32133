import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import type { JudgeNodeDefinition } from "./schema.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { createJudgeNode } from "./node.js";
import { judgeNodeKeys } from "./schema.js";

const judgeNode = z.strictObject({ kind: z.literal("judge"), ...nodeCommon, ...judgeNodeKeys });

/** The Judge of a Looper's round: the model decides under rules, with a rule-based fallback. */
export const judgeKind = defineNodeKind({
  kind: "judge",
  schema: judgeNode,
  nodeReferences: ["coder", "review"],
  usesModel: true,
  readsTask: true,
  resolve(raw, common, files): JudgeNodeDefinition | undefined {
    const promptFile = files.prompt(raw.prompt, "prompt", "judge.md");
    return promptFile === undefined ? undefined : { ...common, kind: "judge", promptFile, coder: raw.coder, review: raw.review };
  },
  templates: (def) => [def.promptFile],
  files: (def) => [def.promptFile],
  create: (def, graph, ctx) => createJudgeNode(def, graph, ctx),
});
