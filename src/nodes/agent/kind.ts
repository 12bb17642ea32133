import { z } from "zod";
import { nodeCommon, outputSchema } from "../../format/node-schema.js";
import type { AgentNodeDefinition } from "./definition.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { createAgentNode } from "./node.js";

const agentNode = z.strictObject({
  kind: z.literal("agent"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file"),
  schema: outputSchema.describe("Structured output: the model answers with JSON matching this schema").optional(),
  history: z.boolean().describe("Send the thread's message history to the model (default true)").default(true),
});

/** An LLM call with a Markdown prompt filled from the state; with `schema`, a structured answer. */
export const agentKind = defineNodeKind({
  kind: "agent",
  schema: agentNode,
  usesModel: true,
  resolve(raw, common, files): AgentNodeDefinition | undefined {
    const promptFile = files.file(raw.prompt, "prompt", "prompt file");
    return promptFile === undefined ? undefined : { ...common, kind: "agent", promptFile, schema: raw.schema, history: raw.history };
  },
  templates: (def) => [def.promptFile],
  files: (def) => [def.promptFile],
  create: (def, graph, ctx) => createAgentNode(def, graph, ctx),
});
