import { z } from "zod";
import type { ToolSpec } from "./types.js";

/** A tool as the model is told about it: its arguments' zod schema as a JSON Schema (of the input, without `$schema`). */
export function toolSpec(name: string, description: string, schema: z.ZodType): ToolSpec {
  const { $schema: _, ...parameters } = z.toJSONSchema(schema, { io: "input" });
  return { name, description, parameters };
}
