/**
 * The parts of the graph file's zod schema (YAML, snake_case keys) that node kinds share: each
 * kind's schema (`src/nodes/<kind>/`) spreads `nodeCommon`; the whole file's schema is assembled
 * from the registered kinds in src/graph/schema.ts.
 */
import { z } from "zod";
import { ConfigError } from "../errors.js";
import { parseModelSpec } from "../models/spec.js";
import type { OutputSchema } from "./types.js";

export const positiveInt = z.int().positive();

export const modelSpec = z
  .string()
  .describe("provider:model, e.g. openai:gpt-4o-mini or scripted:examples/demo.script.yaml")
  .superRefine((spec, ctx) => {
    try {
      parseModelSpec(spec);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      ctx.addIssue({ code: "custom", message: error.message });
    }
  });

/** The keys every node has, spread into each kind's schema. */
export const nodeCommon = {
  description: z.string().optional(),
  model: modelSpec.optional(),
  max_visits: positiveInt.describe("Loop bound: the node runs at most this many times per run").optional(),
  on_limit: z.string().describe("Where edges into this node go once max_visits is used up: a node id or END (default END)").optional(),
};

// ---------------------------------------------------------------------------------------------
// Structured output schema of agent nodes (a JSON-Schema subset)

const OUTPUT_SCHEMA_TYPES = ["object", "string", "number", "integer", "boolean", "array"] as const;

export const outputSchema: z.ZodType<OutputSchema> = z
  .strictObject({
    type: z.enum(OUTPUT_SCHEMA_TYPES),
    get properties() {
      return outputSchemaProperties;
    },
    required: z.array(z.string()).optional(),
    get items() {
      return outputSchema.optional();
    },
    enum: z
      .array(z.union([z.string(), z.number(), z.boolean()]))
      .min(1)
      .optional(),
    description: z.string().optional(),
  })
  .superRefine((schema, ctx) => {
    const misplaced = (key: string, type: string) =>
      ctx.addIssue({ code: "custom", path: [key], params: { at: "key" }, message: `"${key}" only applies to type ${type}` });
    if (schema.type !== "object") {
      if (schema.properties) misplaced("properties", "object");
      if (schema.required) misplaced("required", "object");
    }
    if (schema.type !== "array" && schema.items) misplaced("items", "array");
    schema.required?.forEach((name, index) => {
      if (!schema.properties || !(name in schema.properties)) {
        ctx.addIssue({
          code: "custom",
          path: ["required", index],
          message: `required lists "${name}", which is not declared under properties`,
        });
      }
    });
  })
  .meta({ id: "outputSchema", description: "A JSON-Schema subset: type, properties, required, items, enum, description" });

// One instance (not built inside the getter), so the JSON Schema can name it.
const outputSchemaProperties = z.record(z.string(), outputSchema).optional().meta({ id: "outputSchemaProperties" });
