import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { isMap, isNode, isScalar, LineCounter, parseDocument, stringify, type Document } from "yaml";
import { z } from "zod";
import { ConfigError, ModelError } from "../errors.js";
import { sleep } from "./retry.js";
import { estimateInputTokens, estimateOutputTokens } from "./tokens.js";
import { SCRIPTED_ANY_NODE, type ScriptedConsumed, type ScriptedCounts } from "../state/graph-state.js";
import { toolCallsFromRaw } from "./tool-arguments.js";
import type { ChatModel, ModelCallOptions, ModelCallResult, ScriptedInstance } from "./types.js";
import { instanceName } from "../state/map.js";
import { readRegularText } from "../diagnostics/regular-file.js";
import { mustCompile } from "../diagnostics/patterns.js";

const ScriptedToolCallSchema = z.strictObject({
  name: z.string().min(1),
  /** A mapping, or the raw argument text as a model would send it (which may not be valid JSON). */
  args: z.union([z.record(z.string(), z.unknown()), z.string()]).default({}),
});

const ScriptedResponseSchema = z.strictObject({
  node: z.string().min(1).optional(),
  /** Only a call in a run whose task matches this regular expression may take the response. */
  task: z.string().min(1).superRefine(mustCompile).optional(),
  delay_ms: z.number().int().nonnegative().optional(),
  /** Answer only once this file exists (relative to the script's folder): a test or a demo holds the run at a step. */
  wait_for: z.string().min(1).optional(),
  content: z.string().default(""),
  tool_calls: z.array(ScriptedToolCallSchema).optional(),
});

const ScriptSchema = z.strictObject({ responses: z.array(ScriptedResponseSchema) });

/** One scripted answer, as in the file (docs/scripted-model.md). */
export type ScriptedResponse = z.input<typeof ScriptedResponseSchema>;
type ParsedResponse = z.output<typeof ScriptedResponseSchema>;

/** Loads `file` (relative to `cwd`) now, so a broken script fails before the run starts. */
export function loadScriptedModel(file: string, cwd: string): ChatModel {
  const path = resolve(cwd, file);
  let text: string;
  try {
    text = readRegularText(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new ConfigError(`cannot read scripted model file ${file}: ${reason} (looked for ${path})`);
  }
  return new ScriptedModel(`scripted:${path}`, file, parseScript(text, file), dirname(path));
}

/** Parses and validates a script; problems are one-line ConfigErrors `file:line:col: where: what`. */
export function parseScript(text: string, file: string): ParsedResponse[] {
  // A script in JSON (which YAML reads too: generated scripts often are) is parsed natively: a long
  // one takes a YAML document of tens of megabytes otherwise. Anything wrong is reported from the
  // YAML reading below, with its position.
  if (text.trimStart().startsWith("{")) {
    const fast = ScriptSchema.safeParse(parseJson(text));
    if (fast.success) return fast.data.responses;
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const syntaxError = doc.errors[0];
  if (syntaxError) {
    const position = syntaxError.linePos?.[0];
    const where = position ? `${file}:${position.line}:${position.col}` : file;
    const message = syntaxError.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
    throw new ConfigError(`${where}: ${message}`);
  }
  const result = ScriptSchema.safeParse(doc.toJS(), { reportInput: true });
  if (result.success) return result.data.responses;

  // A misspelt key also makes the real one "required": the unknown-key message is the more telling.
  const [first, ...others] = result.error.issues.toSorted(
    (a, b) => Number(b.code === "unrecognized_keys") - Number(a.code === "unrecognized_keys"),
  );
  const problem = describeIssue(first!);
  const position = locate(doc, lineCounter, problem);
  const more = others.length > 0 ? ` (and ${others.length} more problem${others.length > 1 ? "s" : ""})` : "";
  throw new ConfigError(`${file}${position}: ${problem.text}${more}`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Writes responses in the scripted file format; `parseScript` reads them back unchanged. */
export function formatScript(responses: readonly ScriptedResponse[]): string {
  const entries = responses.map(({ node, task, delay_ms, wait_for, content, tool_calls }) => ({
    ...(node !== undefined && { node }),
    ...(task !== undefined && { task }),
    ...(delay_ms !== undefined && { delay_ms }),
    ...(wait_for !== undefined && { wait_for }),
    ...((content || !tool_calls?.length) && { content: content ?? "" }),
    ...(tool_calls && tool_calls.length > 0 && { tool_calls: tool_calls.map(({ name, args }) => ({ name, args: args ?? {} })) }),
  }));
  const header = "# loopgraph scripted model: responses are consumed in order; `node` restricts which node may take one.\n";
  return header + stringify({ responses: entries }, { lineWidth: 0 });
}

/** A recorded model answer as a scripted response for `node`. */
export function responseFromMessage(node: string, message: AIMessage): ScriptedResponse {
  const toolCalls = [
    ...(message.tool_calls ?? []).map(({ name, args }) => ({ name, args })),
    // An invalid call keeps its raw text, so the script makes the same invalid call.
    ...(message.invalid_tool_calls ?? []).map(({ name, args }) => ({ name: name ?? "", args: args ?? "" })),
  ];
  return {
    node,
    content: message.text,
    ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
  };
}

/** Response indices by group (a response's `node`, or `SCRIPTED_ANY_NODE`), in file order. */
type Groups = Map<string, number[]>;

/** Which response a call takes: the group, and the place in it. */
interface ScriptedChoice {
  group: string;
  position: number;
}

/** How often a `wait_for` response looks for its file. */
const WAIT_POLL_MS = 50;

/**
 * Answers from the script. Stateless: which responses are used is the caller's state
 * (`options.consumed`, counts per group), so a resumed run continues with the next unused one.
 */
class ScriptedModel implements ChatModel {
  /** Each group's response indices in file order: a response's `node`, or `SCRIPTED_ANY_NODE`. */
  private readonly groups: Groups;
  /** The responses with a `task`, by index: their patterns. */
  private readonly taskPatterns = new Map<number, RegExp>();
  /** The groups of a run's task: the responses its task may take (all of them in a script without `task`). */
  private readonly groupsByTask = new Map<string, Groups>();

  constructor(
    readonly spec: string,
    private readonly file: string,
    private readonly responses: readonly ParsedResponse[],
    /** The script's folder: `wait_for` paths are relative to it. */
    private readonly folder: string,
  ) {
    responses.forEach((response, index) => {
      if (response.task !== undefined) this.taskPatterns.set(index, new RegExp(response.task));
    });
    this.groups = this.grouped(() => true);
  }

  private grouped(eligible: (index: number) => boolean): Groups {
    const groups: Groups = new Map();
    this.responses.forEach((response, index) => {
      if (!eligible(index)) return;
      const group = response.node ?? SCRIPTED_ANY_NODE;
      const indices = groups.get(group) ?? [];
      indices.push(index);
      groups.set(group, indices);
    });
    return groups;
  }

  /**
   * The groups as a run with `task` sees them: without the responses whose `task` does not match
   * it. A run's task never changes, so its counts always refer to the same groups.
   */
  private groupsFor(task = ""): Groups {
    if (this.taskPatterns.size === 0) return this.groups;
    let groups = this.groupsByTask.get(task);
    if (!groups) {
      groups = this.grouped((index) => this.taskPatterns.get(index)?.test(task) ?? true);
      this.groupsByTask.set(task, groups);
    }
    return groups;
  }

  /**
   * Counts per group; a stored list of indices (a thread of an earlier version) is read as the
   * number of each group's responses used from its start.
   */
  private countsOf(groups: Groups, consumed: Readonly<ScriptedConsumed> | undefined): ScriptedCounts {
    if (consumed === undefined) return {};
    if (!Array.isArray(consumed)) return { ...(consumed as ScriptedCounts) };
    const used = new Set(consumed as readonly number[]);
    const counts: ScriptedCounts = {};
    for (const [group, indices] of groups) {
      let count = 0;
      while (count < indices.length && used.has(indices[count]!)) count++;
      if (count > 0) counts[group] = count;
    }
    return counts;
  }

  /** The first unused response of the caller's group or of the shared one, whichever comes first in the file. */
  private nodeChoice(groups: Groups, node: string, counts: ScriptedCounts): ScriptedChoice | undefined {
    const own = groups.get(node)?.[counts[node] ?? 0];
    const shared = groups.get(SCRIPTED_ANY_NODE)?.[counts[SCRIPTED_ANY_NODE] ?? 0];
    if (own === undefined && shared === undefined) return undefined;
    const group = shared === undefined || (own !== undefined && own < shared) ? node : SCRIPTED_ANY_NODE;
    return { group, position: counts[group] ?? 0 };
  }

  /**
   * An instance of a map: its own responses (`node: "coder[2]"`) in order, if the script has any;
   * else the node's group (or the shared one) split among the instances, instance i of n taking
   * the positions i, i + n, i + 2n … counted from where the group stood when the map began. So
   * instances running together never take the same response, whichever calls first.
   */
  private instanceChoice(groups: Groups, node: string, instance: ScriptedInstance, counts: ScriptedCounts): ScriptedChoice {
    const own = instanceName(node, instance.index);
    if (groups.has(own)) return { group: own, position: counts[own] ?? 0 };
    const group = groups.has(node) ? node : SCRIPTED_ANY_NODE;
    const start = this.countsOf(groups, instance.consumedAtStart)[group] ?? 0;
    let position = start + instance.index;
    while (position < (counts[group] ?? 0)) position += instance.count;
    return { group, position };
  }

  async call(messages: BaseMessage[], options: ModelCallOptions): Promise<ModelCallResult> {
    options.signal?.throwIfAborted();
    const groups = this.groupsFor(options.task);
    const counts = this.countsOf(groups, options.consumed);
    const choice = options.instance
      ? this.instanceChoice(groups, options.node, options.instance, counts)
      : this.nodeChoice(groups, options.node, counts);
    const index = choice === undefined ? undefined : groups.get(choice.group)?.[choice.position];
    const response = index === undefined ? undefined : this.responses[index];
    if (choice === undefined || index === undefined || !response) {
      let used = 0;
      let eligible = 0;
      for (const [group, indices] of groups) {
        used += Math.min(counts[group] ?? 0, indices.length);
        eligible += indices.length;
      }
      const caller = instanceName(options.node, options.instance?.index);
      const forTask = eligible < this.responses.length ? ` for this run's task (${eligible} of its ${this.responses.length} match it)` : "";
      throw new ModelError(
        `scripted model exhausted: no response left for node "${caller}" in ${this.file}${forTask} (${used} of ${eligible} used)`,
        "exhausted",
      );
    }

    if (response.wait_for !== undefined) {
      const gate = resolve(this.folder, response.wait_for);
      while (!existsSync(gate)) await sleep(WAIT_POLL_MS, options.signal);
    }
    if (response.delay_ms) await sleep(response.delay_ms, options.signal);
    for (const piece of streamPieces(response.content)) options.onToken?.(piece);
    for (const [j, call] of (response.tool_calls ?? []).entries()) options.onToolCallStart?.(call.name, j);

    // Arguments given as text are read as a model's would be: text that is not one JSON object makes an invalid call.
    const calls = (response.tool_calls ?? []).map(({ name, args }, j) => ({
      id: `call_${index}_${j}`,
      name,
      args: typeof args === "string" ? args : JSON.stringify(args),
    }));
    const message = new AIMessage({ id: `scripted-${index}`, content: response.content, ...toolCallsFromRaw(calls) });
    const usage = { inputTokens: estimateInputTokens(messages, options.tools), outputTokens: estimateOutputTokens(message) };
    message.usage_metadata = {
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      total_tokens: usage.inputTokens + usage.outputTokens,
    };
    // The group's count covers every response up to this one (an instance may leave others' gaps behind it).
    const count = Math.max(counts[choice.group] ?? 0, choice.position + 1);
    return { message, usage, scriptedIndex: index, scriptedConsumed: { ...counts, [choice.group]: count } };
  }
}

/** Splits text into a few word-aligned pieces that join back to it exactly. */
function streamPieces(text: string, wordsPerPiece = 4): string[] {
  const words = text.split(/(?<=\s)(?=\S)/);
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerPiece) pieces.push(words.slice(i, i + wordsPerPiece).join(""));
  return pieces.filter((piece) => piece.length > 0);
}

type Path = readonly PropertyKey[];

/** Keys allowed at each depth of the file, for "unknown key" messages. */
const KEYS_BY_DEPTH: Record<number, string[]> = {
  0: Object.keys(ScriptSchema.shape),
  2: Object.keys(ScriptedResponseSchema.shape),
  4: Object.keys(ScriptedToolCallSchema.shape),
};

const TYPE_NAMES: Record<string, string> = {
  array: "a list",
  object: "a mapping",
  record: "a mapping",
  string: "a string",
  number: "a number",
  int: "a whole number",
};

interface Problem {
  text: string;
  /** Where in the document: the node at `at`, or the key `key` of the mapping at `at`. */
  at: Path;
  key?: string;
}

function describeIssue(issue: z.core.$ZodIssue): Problem {
  const { path } = issue;
  const subject = subjectOf(path);
  if (issue.code === "invalid_type") {
    if (path.length === 0) return { at: path, text: 'expected a mapping with a "responses" list' };
    if (issue.input === undefined) return { at: path.slice(0, -1), text: `${subject} is required` };
    const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
    return { at: path, text: `${subject} must be ${expected} (got ${describeValue(issue.input)})` };
  }
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.map((k) => `"${k}"`).join(", ");
    const allowed = KEYS_BY_DEPTH[path.length];
    const text = `unknown key${issue.keys.length > 1 ? "s" : ""} ${names}${allowed ? ` (allowed: ${allowed.join(", ")})` : ""}`;
    return { at: path, key: issue.keys[0], text: path.length > 0 ? `${formatPath(path)}: ${text}` : text };
  }
  // Only tool call args are a union: a mapping, or the raw argument text.
  if (issue.code === "invalid_union") {
    return { at: path, text: `${subject} must be a mapping or a string (got ${describeValue(issue.input)})` };
  }
  if (issue.code === "too_small" && issue.origin === "string") return { at: path, text: `${subject} must not be empty` };
  if (issue.code === "too_small") return { at: path, text: `${subject} must be at least ${issue.minimum}` };
  return { at: path, text: `${subject}: ${issue.message}` };
}

/** `responses[2].tool_calls[0]: name` for a key, `responses[2]` for a list item. */
function subjectOf(path: Path): string {
  const key = path.at(-1);
  const parent = path.slice(0, -1);
  if (typeof key === "number" || parent.length === 0) return formatPath(path);
  return `${formatPath(parent)}: ${String(key)}`;
}

function formatPath(path: Path): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join("");
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a mapping" : typeof value;
}

/** `:line:col` of the problem's key, or else of the deepest node on its path that exists. */
function locate(doc: Document, lineCounter: LineCounter, { at, key }: Problem): string {
  const position = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `:${line}:${col}`;
  };
  const container: unknown = doc.getIn(at, true);
  const keyNode = isMap(container) ? container.items.find((pair) => isScalar(pair.key) && pair.key.value === key)?.key : undefined;
  if (isScalar(keyNode) && keyNode.range) return position(keyNode.range[0]);
  for (let length = at.length; length >= 0; length--) {
    const node: unknown = doc.getIn(at.slice(0, length), true);
    if (isNode(node) && node.range) return position(node.range[0]);
  }
  return "";
}
