/**
 * The zod schema of the graph file format (version 1), as written in YAML (snake_case keys).
 * It checks shape and local rules; cross-references (edges, paths, loops) are checked by
 * ./validate.ts, files by ./load.ts. The JSON Schema for editors is generated from it.
 */
import { z } from "zod";
import { ConfigError } from "../errors.js";
import { parseModelSpec } from "../models/spec.js";
import { loopDetectionConfigSchema } from "../tools/loop-detection.js";
import { judgeNodeKeys } from "../nodes/judge/schema.js";
import { policyRulesSchema } from "../policy/rule-file.js";
import { reviewNodeSchema } from "../nodes/review/schema.js";
import { TOOL_NAMES } from "../tools/types.js";
import type { ComparisonOperator, OutputSchema } from "../format/types.js";

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const RESERVED_NODE_IDS: readonly string[] = ["START", "END"];

export const COMPARISON_OPERATORS = [
  "eq",
  "ne",
  "in",
  "not_in",
  "gt",
  "gte",
  "lt",
  "lte",
  "exists",
  "contains",
  "matches",
] as const satisfies readonly ComparisonOperator[];

export const COMBINATORS = ["all", "any", "not"] as const;

const positiveInt = z.int().positive();

const modelSpec = z
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

const nodeId = z
  .string()
  // The lookahead keeps START/END out of node ids in the generated JSON Schema too.
  .regex(/^(?!(?:START|END)$)[A-Za-z_][A-Za-z0-9_-]*$/, {
    error: (issue) =>
      RESERVED_NODE_IDS.includes(String(issue.input))
        ? `node id "${String(issue.input)}" is reserved: START and END are built in, rename this node`
        : `invalid node id "${String(issue.input)}": use letters, digits, _ and -, starting with a letter or _`,
  });

const fieldName = z.string().regex(NAME_PATTERN, {
  error: (issue) =>
    `invalid state field name "${String(issue.input)}": use letters, digits, _ and -, starting with a letter or _`,
});

// ---------------------------------------------------------------------------------------------
// Conditions

/** A condition as written in YAML: a comparison `{ path, <operator>: value }` or a combinator. */
export type RawCondition = { path?: string } & { [Op in ComparisonOperator]?: unknown } & {
  all?: RawCondition[];
  any?: RawCondition[];
  not?: RawCondition;
};

const regexSource = z.string().superRefine((source, ctx) => {
  try {
    new RegExp(source);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: `matches: ${(error as Error).message}` });
  }
});

const operatorShape = {
  eq: z.unknown().optional(),
  ne: z.unknown().optional(),
  in: z.array(z.unknown()).optional(),
  not_in: z.array(z.unknown()).optional(),
  gt: z.number().optional(),
  gte: z.number().optional(),
  lt: z.number().optional(),
  lte: z.number().optional(),
  exists: z.boolean().optional(),
  contains: z.unknown().optional(),
  matches: regexSource.optional(),
} satisfies Record<ComparisonOperator, z.ZodType>;

export const conditionSchema: z.ZodType<RawCondition> = z
  .strictObject({
    path: z.string().describe("State path: task, outputs.<node>…, vars.<field>…, visits.<node> or messages…").optional(),
    ...operatorShape,
    get all() {
      return z.array(conditionSchema).min(1).optional();
    },
    get any() {
      return z.array(conditionSchema).min(1).optional();
    },
    get not() {
      return conditionSchema.optional();
    },
  })
  .superRefine(checkConditionForm)
  .meta({
    id: "condition",
    description: "A comparison { path, <one operator>: value }, or a combinator { all: [...] }, { any: [...] }, { not: ... }",
  });

function checkConditionForm(condition: RawCondition, ctx: z.RefinementCtx): void {
  const keys = [...COMPARISON_OPERATORS, ...COMBINATORS].filter((key) => key in condition);
  const [first, second] = keys;
  if (first === undefined) {
    ctx.addIssue({
      code: "custom",
      message:
        condition.path === undefined
          ? "empty condition: use { path: <state path>, eq: <value> } or all/any/not"
          : `condition on "${condition.path}" has no operator: add one of ${COMPARISON_OPERATORS.join(", ")}`,
    });
    return;
  }
  if (second !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: [second],
      params: { at: "key" },
      message: `condition has ${keys.length} operators (${keys.join(", ")}): use exactly one, and combine conditions with all/any`,
    });
    return;
  }
  const isCombinator = (COMBINATORS as readonly string[]).includes(first);
  if (isCombinator && condition.path !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["path"],
      params: { at: "key" },
      message: `"path" cannot be combined with "${first}": put the comparison inside ${first}`,
    });
  } else if (!isCombinator && condition.path === undefined) {
    ctx.addIssue({
      code: "custom",
      message: `operator "${first}" needs a path, e.g. { path: outputs.<node>.<field>, ${first}: ... }`,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Structured output schema of agent nodes (a JSON-Schema subset)

const OUTPUT_SCHEMA_TYPES = ["object", "string", "number", "integer", "boolean", "array"] as const;

const outputSchema: z.ZodType<OutputSchema> = z
  .strictObject({
    type: z.enum(OUTPUT_SCHEMA_TYPES),
    get properties() {
      return outputSchemaProperties;
    },
    required: z.array(z.string()).optional(),
    get items() {
      return outputSchema.optional();
    },
    enum: z.array(z.union([z.string(), z.number(), z.boolean()])).min(1).optional(),
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

// ---------------------------------------------------------------------------------------------
// State fields

export const STATE_FIELD_TYPES = ["string", "number", "boolean", "object", "array"] as const;
export type StateFieldType = (typeof STATE_FIELD_TYPES)[number];

/** The JSON type of a value, in the vocabulary of `state:` field types. */
function jsonTypeOf(value: unknown): StateFieldType | "null" | "other" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const type = typeof value;
  return (STATE_FIELD_TYPES as readonly string[]).includes(type) ? (type as StateFieldType) : "other";
}

const JSON_TYPE_NAMES: Record<ReturnType<typeof jsonTypeOf>, string> = {
  string: "a string",
  number: "a number",
  boolean: "a boolean",
  object: "an object",
  array: "an array",
  null: "null",
  other: "not a JSON value",
};

const stateField = z
  .strictObject({
    type: z.enum(STATE_FIELD_TYPES),
    default: z.unknown().optional(),
    description: z.string().optional(),
  })
  .superRefine((field, ctx) => {
    if (field.default === undefined) return;
    const actual = jsonTypeOf(field.default);
    if (actual !== field.type) {
      ctx.addIssue({
        code: "custom",
        path: ["default"],
        message: `default ${JSON.stringify(field.default)} is ${JSON_TYPE_NAMES[actual]}, but the field's type is ${field.type}`,
      });
    }
  });

// ---------------------------------------------------------------------------------------------
// Nodes: one schema per kind, joined in a discriminated union on `kind`.
// To add a kind: add its schema to `nodeSchema` and its resolver in ./load.ts.

const nodeCommon = {
  description: z.string().optional(),
  model: modelSpec.optional(),
  max_visits: positiveInt.describe("Loop bound: the node runs at most this many times per run").optional(),
  on_limit: z
    .string()
    .describe("Where edges into this node go once max_visits is used up: a node id or END (default END)")
    .optional(),
};

const agentNode = z.strictObject({
  kind: z.literal("agent"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file"),
  schema: outputSchema.describe("Structured output: the model answers with JSON matching this schema").optional(),
  history: z.boolean().describe("Send the thread's message history to the model (default true)").default(true),
});

const functionNode = z.strictObject({
  kind: z.literal("function"),
  ...nodeCommon,
  module: z
    .string()
    .regex(/\.(ts|js|mjs)$/, { error: "function module must be a .ts, .js or .mjs file" })
    .describe("Module relative to the graph file"),
  export: z.string().describe('Exported function name (default "default")').default("default"),
});

const subgraphNode = z.strictObject({
  kind: z.literal("subgraph"),
  ...nodeCommon,
  graph: z.string().describe("Graph file relative to this one"),
});

const coderNode = z.strictObject({
  kind: z.literal("coder"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file (default: loopgraph's prompts/coder.md)").optional(),
  max_steps: positiveInt.describe("Model calls per Coder turn before it stops with a step-limit failure (default 25)").default(25),
  tools: z
    .array(z.enum(TOOL_NAMES))
    .min(1)
    .describe("Tools the Coder may use (default: all)")
    .optional(),
  loop_detection: loopDetectionConfigSchema.describe("Repeated tool calls: warn, then fail").default(loopDetectionConfigSchema.parse({})),
  compression: z
    .strictObject({
      budget_tokens: positiveInt.describe("Summarise older turns once the history passes this many tokens (default 60000)").default(60_000),
      keep_recent_turns: positiveInt.describe("Latest turns always kept verbatim (default 3)").default(3),
    })
    .default({ budget_tokens: 60_000, keep_recent_turns: 3 }),
  result_budget_chars: positiveInt
    .describe("Tool results longer than this are cut to head and tail; the full text is saved as an artifact (default 30000)")
    .default(30_000),
});

const looperNode = z.strictObject({
  kind: z.literal("looper"),
  ...nodeCommon,
  max_rounds: positiveInt.describe("Rounds before the loop ends with \"round limit\" (default 5)").default(5),
  coder: z.string().describe('Node id of the Coder phase (default "coder")').default("coder"),
  review: z.string().describe('Node id of the Review phase (default "review")').default("review"),
  judge: z.string().describe('Node id of the Judge phase (default "judge")').default("judge"),
});

const mediatorNode = z.strictObject({
  kind: z.literal("mediator"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file (default: loopgraph's prompts/mediator.md)").optional(),
  loop: z
    .string()
    .describe("Graph file the Looper runs (it must have a looper node), relative to this one; it runs as the linked thread <thread>.loop"),
});

const judgeNode = z.strictObject({ kind: z.literal("judge"), ...nodeCommon, ...judgeNodeKeys });

const reviewNode = z.strictObject({ kind: z.literal("review"), ...nodeCommon, ...reviewNodeSchema.shape });

const nodeSchema = z.discriminatedUnion("kind", [agentNode, functionNode, subgraphNode, coderNode, looperNode, reviewNode, judgeNode, mediatorNode]);
export type RawNode = z.output<typeof nodeSchema>;
export type NodeKind = RawNode["kind"];
export const NODE_KINDS: readonly NodeKind[] = nodeSchema.options.map((option) => option.shape.kind.value);

// ---------------------------------------------------------------------------------------------
// Edges

const branchSchema = z.strictObject({
  when: conditionSchema.optional(),
  to: z.string().describe("Node id or END"),
});

const edgeSchema = z
  .strictObject({
    from: z.string().describe("Node id or START"),
    to: z.string().describe("Node id or END (a static edge)").optional(),
    branches: z
      .array(branchSchema)
      .min(1)
      .describe("A conditional edge: the first branch whose `when` holds; the last branch has no `when`")
      .optional(),
  })
  .superRefine((edge, ctx) => {
    if (edge.to !== undefined && edge.branches !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["branches"],
        params: { at: "key" },
        message: 'an edge has either "to" or "branches", not both',
      });
    } else if (edge.to === undefined && edge.branches === undefined) {
      ctx.addIssue({ code: "custom", message: 'edge has no target: add "to: <node>" or "branches: [...]"' });
    }
  });

export type RawEdge = z.output<typeof edgeSchema>;

// ---------------------------------------------------------------------------------------------
// The whole file

export const DEFAULT_MAX_STEPS = 100;

export const graphFileSchema = z.strictObject({
  version: z.literal(1).describe("Format version; always 1"),
  name: z.string().min(1).describe("Graph name, shown by `loopgraph graphs list`"),
  description: z.string().describe("One line on what the graph does").optional(),
  model: modelSpec.describe("Default model of the agent nodes, provider:model").optional(),
  state: z
    .record(fieldName, stateField)
    .describe("User fields, stored under `vars` in the state")
    .default({}),
  nodes: z.record(nodeId, nodeSchema).refine((nodes) => Object.keys(nodes).length > 0, {
    error: "nodes is empty: declare at least one node",
  }),
  edges: z.array(edgeSchema),
  breakpoints: z
    .strictObject({
      before: z.array(z.string()).describe("Interrupt before these nodes").default([]),
      after: z.array(z.string()).describe("Interrupt after these nodes").default([]),
    })
    .default({ before: [], after: [] }),
  policy: policyRulesSchema.describe("Policy rules for the tool calls of this graph's nodes").optional(),
  limits: z
    .strictObject({
      max_steps: positiveInt.describe(`Supersteps per run (default ${DEFAULT_MAX_STEPS})`).default(DEFAULT_MAX_STEPS),
    })
    .default({ max_steps: DEFAULT_MAX_STEPS }),
});

export type GraphFile = z.output<typeof graphFileSchema>;
