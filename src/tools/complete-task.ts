import { z } from "zod";
import type { ToolDefinition } from "./types.js";

/** The tool a subagent ends its task with; a Coder never has it. */
export const COMPLETE_TASK = "complete_task";

/** A JSON Schema of an object: what a subagent's result must be (`output:` of a subagent type). */
export type OutputSchema = Record<string, unknown>;

/** The result of a subagent that declares no `output:`: its answer, the facts behind it, the files that matter. */
export const DEFAULT_SUBAGENT_OUTPUT: OutputSchema = {
  type: "object",
  properties: {
    summary: { type: "string", minLength: 1, description: "One or two sentences that answer the task" },
    findings: {
      type: "array",
      items: { type: "string", minLength: 1 },
      description: "Each fact the Coder needs, with the file and line it comes from (path:line: fact)",
    },
    files_touched: { type: "array", items: { type: "string", minLength: 1 }, description: "Workspace paths that matter to the answer" },
  },
  required: ["summary", "findings", "files_touched"],
  additionalProperties: false,
};

/**
 * What is wrong with a declared output schema (one line), or undefined: it must be a JSON Schema
 * of an object that zod can check values against.
 */
export function outputSchemaProblem(schema: unknown): string | undefined {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    return "must be a JSON Schema of an object, e.g. { type: object, properties: { answer: { type: string } }, required: [answer] }";
  const { type, properties } = schema as Record<string, unknown>;
  if (type !== "object")
    return `must have type: object (the result is one object), not ${type === undefined ? "no type" : JSON.stringify(type)}`;
  if (properties !== undefined && (properties === null || typeof properties !== "object" || Array.isArray(properties)))
    return "properties must map each field's name to its schema";
  try {
    z.fromJSONSchema(schema as z.core.JSONSchema.JSONSchema);
  } catch (error) {
    return `is not a JSON Schema loopgraph can check results against: ${error instanceof Error ? error.message.split("\n", 1)[0] : String(error)}`;
  }
  return undefined;
}

/**
 * A subagent's `complete_task`: its arguments are the result, checked against the output schema
 * before anything else (a result that does not fit goes back to the subagent as invalid
 * arguments, to try again); the one it accepts ends the subagent.
 */
export function completeTaskTool(output: OutputSchema = DEFAULT_SUBAGENT_OUTPUT): ToolDefinition<Record<string, unknown>> {
  const { $schema: _, ...parameters } = output;
  return {
    name: COMPLETE_TASK,
    description:
      "Finish your task: call this once, with your result in the shape its parameters give. It is the only way to answer: " +
      "a reply without it is not seen by the Coder.",
    effect: "state",
    schema: z.fromJSONSchema(output as z.core.JSONSchema.JSONSchema) as z.ZodType<Record<string, unknown>>,
    parameters,
    async run(result) {
      return { content: "Result handed to the Coder.", submitted: result };
    },
  };
}
