import { z } from "zod";
import type { NodeDefinition } from "../../format/types.js";

/**
 * A `judge` node's own keys in a graph file (snake_case). The graph schema joins them with
 * `kind: judge` and the keys every node has, in a strict object.
 */
export const judgeNodeKeys = {
  prompt: z.string().describe("Markdown system prompt, relative to the graph file (default: loopgraph's prompts/judge.md)").optional(),
  compare_prompt: z
    .string()
    .describe(
      "Markdown system prompt when its coder is mapped and it picks one attempt, relative to the graph file (default: loopgraph's prompts/judge-compare.md)",
    )
    .optional(),
  coder: z.string().min(1).describe('Node whose output is the Coder result the Judge reads (default "coder")').default("coder"),
  review: z.string().min(1).describe('Node whose output is the Review result the Judge reads (default "review")').default("review"),
};

/** The Judge: decides after each round whether to continue (with which task) or terminate. */
export interface JudgeNodeDefinition extends NodeDefinition {
  kind: "judge";
  /** Node whose output is the Coder result (default "coder"). */
  coder: string;
  /** Node whose output is the Review result (default "review"). */
  review: string;
  /** Absolute path of the Markdown system prompt (default: the package's prompts/judge.md). */
  promptFile: string;
  /** Absolute path of the system prompt for comparing attempts (default: the package's prompts/judge-compare.md). */
  comparePromptFile: string;
}
