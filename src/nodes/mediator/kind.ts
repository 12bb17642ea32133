import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import type { MediatorNodeDefinition } from "./definition.js";
import { defineNodeKind, nodesOfKind } from "../../runtime/node-kind.js";
import { looperKind } from "../looper/kind.js";
import { createMediatorNode } from "./node.js";

const mediatorNode = z.strictObject({
  kind: z.literal("mediator"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file (default: loopgraph's prompts/mediator.md)").optional(),
  loop: z
    .string()
    .describe("Graph file the Looper runs (it must have a looper node), relative to this one; it runs as the linked thread <thread>.loop"),
});

/** The Mediator: answers the user and hands work to its Looper, which runs `loop` as a linked thread. */
export const mediatorKind = defineNodeKind({
  kind: "mediator",
  schema: mediatorNode,
  usesModel: true,
  async resolve(raw, common, files): Promise<MediatorNodeDefinition | undefined> {
    const promptFile = files.prompt(raw.prompt, "prompt", "mediator.md");
    const loop = await files.graph(raw.loop, "loop", "loop graph file");
    if (loop && nodesOfKind(loop, looperKind).length === 0) {
      files.issue("loop", `the loop graph ${raw.loop} has no looper node: point loop at a graph like coder-review.yaml`);
      return undefined;
    }
    return promptFile === undefined || loop === undefined ? undefined : { ...common, kind: "mediator", promptFile, loop };
  },
  linkedGraphs: (def) => [def.loop],
  templates: (def) => [def.promptFile],
  files: (def) => [def.promptFile],
  create: (def, graph, ctx) => createMediatorNode(def, graph, ctx),
});
