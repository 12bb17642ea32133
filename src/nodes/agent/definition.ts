import type { NodeDefinition, OutputSchema } from "../../format/types.js";

export interface AgentNodeDefinition extends NodeDefinition {
  kind: "agent";
  /** Absolute path of the Markdown system prompt. */
  promptFile: string;
  /** Structured output: the model must answer with JSON matching this schema. */
  schema?: OutputSchema;
  /** Whether the thread's message history is sent to the model (default true). */
  history: boolean;
}
