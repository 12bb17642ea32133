import { z } from "zod";
import { graphFileSchema } from "./schema.js";

/** The JSON Schema of graph files, for editor completion (`# yaml-language-server: $schema=…`). */
export function graphJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(graphFileSchema(), {
    // Draft 7 has the widest editor support; "input" because defaulted keys are optional to write.
    target: "draft-7",
    io: "input",
  });
  return { ...schema, title: "loopgraph graph file", description: "A loopgraph workflow graph (format version 1)" };
}

/** The committed `schema/graph.schema.json`, byte for byte. */
export function renderGraphJsonSchema(): string {
  return `${JSON.stringify(graphJsonSchema(), null, 2)}\n`;
}
