/** Checks parsed graph data against the zod schema, rewording its issues to say what to fix. */
import { z } from "zod";
import { valueAt, type DataPath, type PathIssue } from "../diagnostics/positions.js";
import { COMBINATORS, COMPARISON_OPERATORS, conditionSchema, graphFileSchema, nodeKindNames, type GraphFile } from "./schema.js";
import { closestName, unknownName } from "../diagnostics/suggest.js";

export type ShapeCheck = { ok: true; graph: GraphFile } | { ok: false; issues: PathIssue[] };

export function checkShape(data: unknown): ShapeCheck {
  const result = graphFileSchema().safeParse(data, { reportInput: true });
  if (result.success) return { ok: true, graph: result.data as GraphFile };
  const issues = withoutFollowOnIssues(result.error.issues, data);
  return { ok: false, issues: issues.flatMap((issue) => describeZodIssue(issue, data)) };
}

type ZodIssue = z.core.$ZodIssue;

/**
 * Drops issues caused by an unknown key in the same mapping: the object-level checks of that
 * mapping (`{path: x, equals: 1}` has "no operator" only because of the typo), and a missing
 * required key that the unknown key is a typo of (`promt` for `prompt`).
 */
function withoutFollowOnIssues(issues: ZodIssue[], data: unknown): ZodIssue[] {
  const typoTargets = new Map<string, Set<string>>();
  for (const issue of issues) {
    if (issue.code !== "unrecognized_keys") continue;
    const known = knownKeysAt(data, pathOf(issue));
    const targets = issue.keys.map((key) => closestName(key, known)).filter((key) => key !== undefined);
    typoTargets.set(pathKey(pathOf(issue)), new Set(targets));
  }
  return issues.filter((issue) => {
    const path = pathOf(issue);
    if (issue.code === "custom" && typoTargets.has(pathKey(path))) return false;
    if ((issue.code === "invalid_type" || issue.code === "invalid_value") && isMissing(data, path)) {
      const last = String(path.at(-1));
      return !typoTargets.get(pathKey(path.slice(0, -1)))?.has(last);
    }
    return true;
  });
}

function describeZodIssue(issue: ZodIssue, data: unknown): PathIssue[] {
  const path = pathOf(issue);
  const subject = subjectOf(path);
  switch (issue.code) {
    case "unrecognized_keys": {
      const inCondition = objectSchemaAt(data, path) === conditionSchema;
      const [noun, known] = inCondition ? ["operator", [...COMPARISON_OPERATORS, ...COMBINATORS]] : ["key", knownKeysAt(data, path)];
      return issue.keys.map((key) => ({ path: [...path, key], at: "key", message: unknownName(noun, key, known) }));
    }
    case "invalid_type":
    case "invalid_value":
      if (isMissing(data, path)) {
        const key = String(path.at(-1));
        const message = key === "version" ? 'missing "version": add version: 1' : `missing required key "${key}"`;
        return [{ path, message }];
      }
      if (issue.code === "invalid_value") return [{ path, message: describeInvalidValue(issue, path) }];
      return [{ path, message: `${subject} must be ${describeExpected(issue.expected)}, got ${describeValue(issue.input)}` }];
    case "invalid_union": {
      if (issue.discriminator === undefined) {
        return [{ path, message: `${subject} has an unsupported value ${describeValue(issue.input)}` }];
      }
      const kind = (issue.input as Record<string, unknown> | undefined)?.[issue.discriminator];
      return [
        {
          path,
          message:
            kind === undefined
              ? `missing "kind": use one of ${nodeKindNames().join(", ")}`
              : `unknown node kind ${describeValue(kind)}: use one of ${nodeKindNames().join(", ")}`,
        },
      ];
    }
    case "invalid_key":
      return issue.issues.map((inner) => ({ path, at: "key", message: inner.message }));
    case "too_small":
      return [{ path, message: `${subject} ${describeMinimum(issue)}` }];
    case "custom":
      return [{ path, at: issue.params?.at === "key" ? "key" : "value", message: issue.message }];
    default:
      // invalid_format and the rest carry the message written in ./schema.ts.
      return [{ path, message: issue.message }];
  }
}

function describeInvalidValue(issue: z.core.$ZodIssueInvalidValue, path: DataPath): string {
  if (pathKey(path) === "version") return `unsupported version ${describeValue(issue.input)}: use version: 1`;
  return unknownName(subjectOf(path), String(issue.input), issue.values.map(String));
}

function pathOf(issue: ZodIssue): DataPath {
  return issue.path.map((segment) => (typeof segment === "number" ? segment : String(segment)));
}

function pathKey(path: DataPath): string {
  return path.join(".");
}

/** How a message names the offending item: its key, with list indexes (`before[1]`). */
function subjectOf(path: DataPath): string {
  const lastKey = path.findLastIndex((segment) => typeof segment === "string");
  if (lastKey < 0) return "the graph file";
  return path.slice(lastKey + 1).reduce<string>((subject, index) => `${subject}[${index}]`, String(path[lastKey]));
}

function isMissing(data: unknown, path: DataPath): boolean {
  const parent = valueAt(data, path.slice(0, -1));
  return typeof parent === "object" && parent !== null && !Array.isArray(parent) && !Object.hasOwn(parent, String(path.at(-1)));
}

const EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  object: "a mapping (key: value)",
  record: "a mapping (key: value)",
  array: "a list",
};

function describeExpected(expected: string): string {
  return EXPECTED[expected] ?? expected;
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return String(value);
}

function describeMinimum(issue: z.core.$ZodIssueTooSmall): string {
  if (issue.origin === "array" || issue.origin === "string") return "must not be empty";
  return `must be ${issue.inclusive ? "at least" : "greater than"} ${issue.minimum}, got ${describeValue(issue.input)}`;
}

/** The keys allowed in the mapping at `path`. */
function knownKeysAt(data: unknown, path: DataPath): string[] {
  const schema = objectSchemaAt(data, path);
  return schema ? Object.keys(schema.shape) : [];
}

/** The object schema that checks the mapping at `path`, found by walking the schema along the data. */
function objectSchemaAt(data: unknown, path: DataPath): z.ZodObject | undefined {
  let schema = unwrapFor(graphFileSchema(), data);
  let value = data;
  for (const segment of path) {
    value = valueAt(value, [segment]);
    let next: z.core.$ZodType | undefined;
    if (schema instanceof z.ZodObject) next = schema.shape[segment];
    else if (schema instanceof z.ZodRecord) next = schema.valueType;
    else if (schema instanceof z.ZodArray) next = schema.element;
    if (!next) return undefined;
    schema = unwrapFor(next, value);
  }
  return schema instanceof z.ZodObject ? schema : undefined;
}

/** Sees through optional/default wrappers, and picks the option of a discriminated union `value` selects. */
function unwrapFor(schema: z.core.$ZodType, value: unknown): z.core.$ZodType {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) return unwrapFor(schema.unwrap(), value);
  if (schema instanceof z.ZodDiscriminatedUnion) {
    const discriminator = schema.def.discriminator;
    const selected = valueAt(value, [discriminator]);
    const option = schema.options.find(
      (candidate) => candidate instanceof z.ZodObject && valueAt(candidate.shape, [discriminator, "value"]) === selected,
    );
    return option ? unwrapFor(option, value) : schema;
  }
  return schema;
}
