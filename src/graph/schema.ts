/**
 * The zod schema of the graph file format (version 1), as written in YAML (snake_case keys).
 * It checks shape and local rules; cross-references (edges, paths, loops) are checked by
 * ./semantics.ts, files by ./load.ts. The JSON Schema for editors is generated from it.
 * The nodes' schemas come from the registered node kinds (src/nodes/registry.ts).
 */
import { z } from "zod";
import { regexProblem } from "../diagnostics/patterns.js";
import { modelSpec, positiveInt } from "../format/node-schema.js";
import type { ComparisonOperator, VarReducer } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { policyRulesSchema } from "../policy/rule-file.js";
import { checkMcpServers, type McpDeclarationSource } from "../tools/mcp-servers.js";

/** Graphs declare servers as a project's file does: no variables, no way out of the sandbox. */
export const GRAPH_MCP_SOURCE: McpDeclarationSource = { trusted: false, origin: "a graph", where: "a graph" };

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
  error: (issue) => `invalid state field name "${String(issue.input)}": use letters, digits, _ and -, starting with a letter or _`,
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
  const problem = regexProblem(source);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: `matches: ${problem}` });
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

export const VAR_REDUCERS = ["append", "merge", "replace"] as const satisfies readonly VarReducer[];

/** The field type a reducer combines (replace takes any). */
const REDUCER_TYPES: Record<VarReducer, StateFieldType | undefined> = { append: "array", merge: "object", replace: undefined };

const stateField = z
  .strictObject({
    type: z.enum(STATE_FIELD_TYPES),
    default: z.unknown().optional(),
    description: z.string().optional(),
    reducer: z
      .enum(VAR_REDUCERS)
      .describe("How writes of nodes that run together combine: append (arrays), merge (objects, shallow) or replace (last write wins)")
      .optional(),
  })
  .superRefine((field, ctx) => {
    const needs = field.reducer ? REDUCER_TYPES[field.reducer] : undefined;
    if (needs && needs !== field.type) {
      ctx.addIssue({
        code: "custom",
        path: ["reducer"],
        message: `reducer ${field.reducer} needs a field of type ${needs}, but the field's type is ${field.type}`,
      });
    }
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
// Edges

/** One target, or several that run together (in the same superstep). */
const targets = z.union([z.string(), z.array(z.string())]).superRefine((to, ctx) => {
  if (Array.isArray(to) && to.length === 0) ctx.addIssue({ code: "custom", message: "an empty list of targets: name at least one node" });
});

const mapSchema = z
  .strictObject({
    over: z.string().describe("State path of the list to map over: outputs.<node>…, vars.<field>…"),
    to: z.string().describe("The node that runs once per item"),
    as: z.string().describe("The name of the item: each instance reads it at vars.<as>"),
    max_concurrency: positiveInt
      .describe("At most this many instances at once (default: all, capped by limits.max_concurrency)")
      .optional(),
  })
  .describe("A map: runs `to` once per item of the list at `over`, the instances together; their outputs gather into a list");

const branchSchema = z
  .strictObject({
    when: conditionSchema.optional(),
    to: targets.describe("Node id or END, or a list of them to run together").optional(),
    map: mapSchema.optional(),
  })
  .superRefine((branch, ctx) => {
    if (branch.to !== undefined && branch.map !== undefined)
      ctx.addIssue({ code: "custom", path: ["map"], params: { at: "key" }, message: 'a branch has either "to" or "map", not both' });
    else if (branch.to === undefined && branch.map === undefined)
      ctx.addIssue({ code: "custom", message: 'branch has no target: add "to: <node>" or "map: {...}"' });
  });

const edgeSchema = z
  .strictObject({
    from: z
      .union([z.string(), z.array(z.string())])
      .describe("Node id or START; a list of node ids makes a join: its targets run once all of them have finished"),
    to: targets.describe("Node id or END, or a list of them to run together (a static edge)").optional(),
    branches: z
      .array(branchSchema)
      .min(1)
      .describe("A conditional edge: the first branch whose `when` holds; the last branch has no `when`")
      .optional(),
    map: mapSchema.optional(),
  })
  .superRefine((edge, ctx) => {
    const forms = (["to", "branches", "map"] as const).filter((key) => edge[key] !== undefined);
    if (forms.length > 1) {
      ctx.addIssue({
        code: "custom",
        path: [forms[1]!],
        params: { at: "key" },
        message: forms.includes("map")
          ? `an edge has one of "to", "branches" or "map", not ${forms.map((form) => `"${form}"`).join(" and ")}`
          : 'an edge has either "to" or "branches", not both',
      });
    } else if (forms.length === 0) {
      ctx.addIssue({ code: "custom", message: 'edge has no target: add "to: <node>", "branches: [...]" or "map: {...}"' });
    }
    if (Array.isArray(edge.from) && edge.from.length < 2) {
      ctx.addIssue({ code: "custom", path: ["from"], message: "a join needs at least two sources: write a single source as from: <node>" });
    } else if (Array.isArray(edge.from) && forms.length === 1 && edge.to === undefined) {
      ctx.addIssue({
        code: "custom",
        path: [forms[0]!],
        params: { at: "key" },
        message: `a join (from: a list) takes "to", not "${forms[0]}": join into one node, and ${forms[0] === "map" ? "map" : "branch"} from there`,
      });
    }
  });

export type RawEdge = z.output<typeof edgeSchema>;

/** A source or target as written (one name or a list), as a list. */
export function namesOf(written: string | string[] | undefined): string[] {
  return written === undefined ? [] : Array.isArray(written) ? written : [written];
}

// ---------------------------------------------------------------------------------------------
// The whole file

export const DEFAULT_MAX_STEPS = 100;

// ---------------------------------------------------------------------------------------------
// Nodes: one schema per registered kind, joined in a discriminated union on `kind`.

/** A node as written in YAML: `kind` and the keys every node has; the rest depends on the kind. */
export type RawNode = { kind: string; description?: string; model?: string; max_visits?: number; on_limit?: string } & Record<
  string,
  unknown
>;

function nodeSchema() {
  const [first, ...rest] = nodeKinds.all().map((kind) => kind.schema);
  if (!first) throw new Error("internal: no node kinds are registered");
  return z.discriminatedUnion("kind", [first, ...rest]);
}

/** The registered kinds' names, in the order of the schema. */
export function nodeKindNames(): string[] {
  return nodeKinds.names();
}

/** A graph's MCP servers: checked as a config file's, as declared by a file that may come with a repository. */
const mcpServersSchema = z
  .record(z.string(), z.unknown())
  .superRefine((servers, ctx) => {
    for (const problem of checkMcpServers(servers, GRAPH_MCP_SOURCE, []).problems)
      ctx.addIssue({ code: "custom", path: [...problem.path], message: problem.message });
  })
  .describe(
    "MCP servers whose tools the Coder nodes get as server__tool: name → { command, args, env, timeout } (stdio, run in the OS sandbox) or { url, headers, timeout } (streamable HTTP)",
  );

const buildGraphFileSchema = () =>
  z.strictObject({
    version: z.literal(1).describe("Format version; always 1"),
    name: z.string().min(1).describe("Graph name, shown by `loopgraph graphs list`"),
    description: z.string().describe("One line on what the graph does").optional(),
    model: modelSpec.describe("Default model of the agent nodes, provider:model").optional(),
    state: z.record(fieldName, stateField).describe("User fields, stored under `vars` in the state").default({}),
    nodes: z.record(nodeId, nodeSchema()).refine((nodes) => Object.keys(nodes).length > 0, {
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
    mcp_servers: mcpServersSchema.optional(),
    limits: z
      .strictObject({
        max_steps: positiveInt.describe(`Supersteps per run (default ${DEFAULT_MAX_STEPS})`).default(DEFAULT_MAX_STEPS),
        max_concurrency: positiveInt.describe("At most this many instances of one map at once (default: no bound)").optional(),
      })
      .default({ max_steps: DEFAULT_MAX_STEPS }),
  });

export type GraphFile = Omit<z.output<ReturnType<typeof buildGraphFileSchema>>, "nodes"> & { nodes: Record<string, RawNode> };

let built: { version: number; schema: ReturnType<typeof buildGraphFileSchema> } | undefined;

/** The schema of a whole graph file, for the node kinds registered now. */
export function graphFileSchema(): ReturnType<typeof buildGraphFileSchema> {
  if (built?.version !== nodeKinds.version) built = { version: nodeKinds.version, schema: buildGraphFileSchema() };
  return built.schema;
}
