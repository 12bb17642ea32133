import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { ConfigError } from "../errors.js";
import { SourceLocator, valueAt, type DataPath } from "./positions.js";
import { closestName } from "./suggest.js";
import { readRegularText } from "./regular-file.js";

/**
 * A settings file in YAML (a policy file, a config file) checked against a zod schema: its data,
 * or a ConfigError listing every problem as `file:line:col: path: message`, sorted by position.
 */
export interface YamlFileSpec<T> {
  schema: z.ZodType<T>;
  /** The keys a mapping at `path` may have (for unknown keys: "did you mean", or the list). */
  keysAt(path: DataPath): readonly string[];
  /** What to say of an unknown key with no likely intended one; by default the keys allowed there. */
  unknownKey?(key: string, known: readonly string[], path: DataPath): string;
}

/** The text of a settings file; undefined when there is none; a ConfigError when it cannot be read. */
export function readSettingsText(file: string, what: string): string | undefined {
  try {
    return readRegularText(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    const reason = code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw new ConfigError(`cannot read ${what} ${file}: ${reason}`);
  }
}

export function parseYamlFile<T>(text: string, file: string, spec: YamlFileSpec<T>): T {
  return parseYamlChecked<T>(text, file, (data) => {
    const result = spec.schema.safeParse(data);
    return result.success ? { value: result.data as T } : { problems: schemaProblems(result.error.issues, data, spec) };
  });
}

/** What a check of a settings file's data found: its value, or its problems (located by data path). */
export type SettingsCheck<T> = { value: T; problems?: undefined } | { problems: Problem[] };

/** A settings file in YAML checked by `check` (a hand-written check loads no schema library); problems as for parseYamlFile. */
export function parseYamlChecked<T>(text: string, file: string, check: (data: unknown) => SettingsCheck<T>): T {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors
        .map((error) => {
          const { line, col } = lineCounter.linePos(error.pos[0]);
          return `${file}:${line}:${col}: YAML syntax error: ${error.message.split("\n")[0]}`;
        })
        .join("\n"),
    );
  }
  const data: unknown = doc.toJS() ?? {};
  const checked = check(data);
  if (!("problems" in checked) || checked.problems === undefined) return checked.value;
  const locator = new SourceLocator(doc, lineCounter);
  const problems = checked.problems.map((problem) => {
    const owner = problem.at === "key" ? problem.path.slice(0, -1) : problem.path;
    const where = owner.length > 0 ? `${dataPathText(owner)}: ` : "";
    return { ...locator.locate(problem.path, problem.at), text: where + problem.message };
  });
  problems.sort((a, b) => a.line - b.line || a.col - b.col);
  throw new ConfigError(problems.map((problem) => `${file}:${problem.line}:${problem.col}: ${problem.text}`).join("\n"));
}

/** An unknown key's problem: "did you mean" the likely intended one, else `otherwise`. */
export function unknownKeyProblem(path: DataPath, key: string, known: readonly string[], otherwise: string): Problem {
  const suggestion = closestName(key, known);
  return {
    path: [...path, key],
    at: "key",
    message: suggestion !== undefined ? `unknown key "${key}": did you mean "${suggestion}"?` : otherwise,
  };
}

/** One entry of a mapping in a config file (an MCP server, a hook, a subagent type), read by `mappingEntry`. */
export interface MappingEntry {
  fields: Record<string, unknown>;
  /** Reports a problem with the value of one of its keys. */
  bad(key: string, message: string): void;
  /** Whether no problem of the entry was reported since it was read (its unknown keys included). */
  clean(): boolean;
}

/**
 * `raw`, an entry at `path` of a config file, as a mapping whose keys are among `keys`: undefined,
 * reported as `notMapping`, when it is not a mapping; each unknown key reported ("did you mean"
 * the closest, else which keys `what` has).
 */
export function mappingEntry(
  raw: unknown,
  path: DataPath,
  problems: Problem[],
  keys: readonly string[],
  what: { name: string; notMapping: string },
): MappingEntry | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    problems.push({ path, at: "value", message: what.notMapping });
    return undefined;
  }
  const fields = raw as Record<string, unknown>;
  const before = problems.length;
  for (const key of Object.keys(fields)) {
    if (!keys.includes(key)) problems.push(unknownKeyProblem(path, key, keys, `unknown key "${key}": ${what.name} has ${keys.join(", ")}`));
  }
  return {
    fields,
    bad: (key, message) => void problems.push({ path: [...path, key], at: "value", message }),
    clean: () => problems.length === before,
  };
}

/** `rules[2].pattern`. */
export function dataPathText(path: DataPath): string {
  return path.reduce<string>(
    (text, segment) => (typeof segment === "number" ? `${text}[${segment}]` : text ? `${text}.${segment}` : segment),
    "",
  );
}

export interface Problem {
  path: DataPath;
  /** Whether the problem is the key itself (an unknown key) or its value. */
  at: "key" | "value";
  message: string;
}

/**
 * A schema's issues as problems, for a check of `parseYamlChecked` that adds its own (files the
 * settings name, say): one problem per unknown key; a missing key is not reported when an unknown
 * key next to it is its typo (`decison` for `decision`).
 */
export function schemaProblems<T>(issues: readonly z.core.$ZodIssue[], data: unknown, spec: Omit<YamlFileSpec<T>, "schema">): Problem[] {
  const located = issues.map((issue) => ({
    issue,
    path: issue.path.map((segment) => (typeof segment === "number" ? segment : String(segment))),
  }));
  const problems: Problem[] = [];
  const typoTargets = new Set<string>();
  for (const { issue, path } of located) {
    if (issue.code !== "unrecognized_keys") continue;
    const known = spec.keysAt(path);
    for (const key of issue.keys) {
      const suggestion = closestName(key, known);
      const message =
        suggestion !== undefined
          ? `unknown key "${key}": did you mean "${suggestion}"?`
          : (spec.unknownKey?.(key, known, path) ?? `unknown key "${key}": use ${known.map((name) => `"${name}"`).join(", ")}`);
      problems.push({ path: [...path, key], at: "key", message });
      if (suggestion) typoTargets.add(dataPathText([...path, suggestion]));
    }
  }
  for (const { issue, path } of located) {
    if (issue.code === "unrecognized_keys") continue;
    if (valueAt(data, path) === undefined && typoTargets.has(dataPathText(path))) continue;
    problems.push({ path, at: "value", message: issue.message });
  }
  return problems;
}
