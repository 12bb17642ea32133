import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import type { JudgeNodeDefinition } from "./schema.js";
import type { JudgeResult } from "../../state/looper.js";
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
    const comparePromptFile = files.prompt(raw.compare_prompt, "compare_prompt", "judge-compare.md");
    if (promptFile === undefined || comparePromptFile === undefined) return undefined;
    return { ...common, kind: "judge", promptFile, comparePromptFile, coder: raw.coder, review: raw.review };
  },
  templates: (def) => [def.promptFile, def.comparePromptFile],
  files: (def) => [def.promptFile, def.comparePromptFile],
  create: (def, graph, ctx) => createJudgeNode(def, graph, ctx),
  // Outside a Looper nothing starts another round: a graph that ends on the Judge's `continue` did not finish its work.
  ending: (def, state) => {
    const judged = state.outputs[def.id] as JudgeResult | undefined;
    if (judged?.decision !== "continue") return undefined;
    const next = judged.nextTask.split("\n")[0]!.slice(0, 200);
    return { status: "failed", reason: `the Judge did not judge the work done and the graph ended there, without another round: ${next}` };
  },
});
