import { z } from "zod";
import { graphFileSchema } from "./schema.js";

/** The JSON Schema of a file format's zod schema, for editor completion (`# yaml-language-server: $schema=…`). */
export function fileJsonSchema(schema: z.ZodType, title: string, description: string): Record<string, unknown> {
  const json = z.toJSONSchema(schema, {
    // Draft 7 has the widest editor support; "input" because defaulted keys are optional to write.
    target: "draft-7",
    io: "input",
  });
  return { ...json, title, description };
}

/** A JSON Schema as its committed file holds it, byte for byte. */
export const renderJsonSchema = (schema: Record<string, unknown>): string => `${JSON.stringify(schema, null, 2)}\n`;

/** The JSON Schema of graph files. */
export function graphJsonSchema(): Record<string, unknown> {
  return fileJsonSchema(graphFileSchema(), "loopgraph graph file", "A loopgraph workflow graph (format version 1)");
}

/** The committed `schema/graph.schema.json`, byte for byte. */
export function renderGraphJsonSchema(): string {
  return renderJsonSchema(graphJsonSchema());
}
