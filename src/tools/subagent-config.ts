/**
 * Subagent types declared in a config file, for every Coder of the runs it applies to (a graph's
 * coder node declares its own under `subagents:`, which win over these of the same name):
 *
 *     subagents:
 *       reviewer:
 *         description: reads a diff's files and says what could break
 *         prompt: prompts/reviewer.md          # from the file's folder; a project's stays inside the project
 *         tools: [read_file, grep, glob]       # default: read_file, list_dir, glob, grep
 *         max_steps: 10                        # default 15
 *         model: openai:gpt-4o-mini            # default: its Coder's
 *         output:                              # the JSON Schema of its result (default: summary, findings, files_touched)
 *           type: object
 *           properties: { risk: { type: string, enum: [low, high] }, reasons: { type: array, items: { type: string } } }
 *           required: [risk, reasons]
 *
 * Checked by hand here (the config is read by every command, and must stay light); an output
 * schema is checked whole when a run starts. A subagent never gets a tool its Coder lacks.
 */
import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Problem } from "../diagnostics/yaml-file.js";
import { mappingEntry } from "../diagnostics/yaml-file.js";
import { TOOL_NAMES } from "./types.js";
import { isInside } from "./workspace-paths.js";

/** A subagent type's name: what a task call's `agent` names, and the end of its node's id. */
export const SUBAGENT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
export const SUBAGENT_NAME_RULE = "a subagent's name is lower-case letters, digits, _ and - (at most 32)";
/**
 * The tools a subagent may be given: any built-in one but task (a subagent starts no subagents),
 * save_finding (the thread's findings are its Coder's) and git_commit (a commit is the Coder's,
 * where the user can be asked; a subagent cannot ask).
 */
export const SUBAGENT_TOOLS = TOOL_NAMES.filter((name) => name !== "task" && name !== "save_finding" && name !== "git_commit");
/** Model calls a subagent makes before it must answer, unless its type says otherwise. */
export const SUBAGENT_MAX_STEPS = 15;

/** The tools of a subagent whose type names none, and of the default one. */
export const SUBAGENT_READ_TOOLS = ["read_file", "list_dir", "glob", "grep"] as const;

/** A subagent type: a Coder of its own that a task call runs. What it leaves out, its Coder's defaults fill in. */
export interface SubagentType {
  /** One line on what it is for (the Coder is told). */
  description?: string;
  /** Absolute path of its system prompt (default: the package's prompts/subagent.md). */
  promptFile?: string;
  /** Its tools (default: SUBAGENT_READ_TOOLS); never `task`, never one its Coder lacks. */
  tools?: string[];
  /** Model calls before it must answer (default SUBAGENT_MAX_STEPS, at most its Coder's). */
  maxSteps?: number;
  /** Its model (default: its Coder's). */
  model?: string;
  /** The JSON Schema of its result (default: summary, findings, files_touched). */
  output?: Record<string, unknown>;
}

/** A subagent type as a config file declares it. */
export interface DeclaredSubagent extends SubagentType {
  name: string;
  /** The file it was declared in. */
  origin: string;
}

const SUBAGENT_KEYS = ["description", "prompt", "tools", "max_steps", "model", "output"];

/**
 * Checks `subagents:` (name → { description, prompt, tools, max_steps, model, output }) of the
 * config file in `dir`; returns the types, or the problems. `project`: the file came with the
 * repository, so its prompt files must be inside the project. `modelProblem` checks a model spec.
 */
export function checkSubagents(
  value: unknown,
  source: { origin: string; dir: string; project: boolean },
  modelProblem: (spec: string) => string | undefined,
): { subagents: DeclaredSubagent[]; problems: Problem[] } {
  const shape = "subagents must be a mapping of names to { description, prompt, tools, max_steps, model, output }";
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return { subagents: [], problems: [{ path: ["subagents"], at: "value", message: shape }] };
  const subagents: DeclaredSubagent[] = [];
  const problems: Problem[] = [];
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const path = ["subagents", name];
    if (!SUBAGENT_NAME.test(name)) problems.push({ path, at: "key", message: SUBAGENT_NAME_RULE });
    const entry = mappingEntry(raw, path, problems, SUBAGENT_KEYS, {
      name: "a subagent type",
      notMapping: "a subagent type is a mapping: { description, prompt, tools, max_steps, model, output }",
    });
    if (!entry) continue;
    const { fields, bad } = entry;
    const { description, prompt, tools, max_steps: maxSteps, model, output } = fields;
    if (description !== undefined && (typeof description !== "string" || description.trim() === ""))
      bad("description", "description must be one line on what it is for");
    let promptFile: string | undefined;
    if (prompt !== undefined) {
      if (typeof prompt !== "string" || prompt.trim() === "")
        bad("prompt", "prompt must be the path of its Markdown system prompt, from this file's folder");
      else {
        promptFile = resolve(source.dir, prompt);
        const problem = promptProblem(promptFile, source);
        if (problem) bad("prompt", problem);
      }
    }
    if (
      tools !== undefined &&
      (!Array.isArray(tools) ||
        tools.length === 0 ||
        !tools.every((tool) => (SUBAGENT_TOOLS as readonly string[]).includes(tool as string)))
    ) {
      bad("tools", `tools must be a list of ${SUBAGENT_TOOLS.join(", ")} (a subagent starts no subagents)`);
    }
    if (maxSteps !== undefined && (typeof maxSteps !== "number" || !Number.isInteger(maxSteps) || maxSteps < 1 || maxSteps > 1000))
      bad("max_steps", "max_steps must be a whole number from 1 to 1000");
    if (model !== undefined) {
      const problem = typeof model === "string" ? modelProblem(model) : "model must be provider:model, e.g. openai:gpt-4o-mini";
      if (problem) bad("model", problem);
    }
    if (
      output !== undefined &&
      (output === null || typeof output !== "object" || Array.isArray(output) || (output as Record<string, unknown>).type !== "object")
    ) {
      bad(
        "output",
        "output must be the JSON Schema of an object, e.g. { type: object, properties: { answer: { type: string } }, required: [answer] }",
      );
    }
    if (!entry.clean()) continue;
    subagents.push({
      name,
      ...(description !== undefined && { description: (description as string).trim() }),
      ...(promptFile !== undefined && { promptFile }),
      ...(tools !== undefined && { tools: tools as string[] }),
      ...(maxSteps !== undefined && { maxSteps: maxSteps as number }),
      ...(model !== undefined && { model: model as string }),
      ...(output !== undefined && { output: output as Record<string, unknown> }),
      origin: source.origin,
    });
  }
  return { subagents, problems };
}

/** Why a prompt file cannot be used: missing, not a file, or (a project's) outside the project. */
function promptProblem(file: string, source: { dir: string; project: boolean }): string | undefined {
  let real: string;
  try {
    real = realpathSync(file);
    if (!statSync(real).isFile()) return `prompt ${file} is not a file`;
  } catch {
    return `prompt file ${file} does not exist`;
  }
  if (source.project && !isInside(realpathSync(source.dir), real))
    return `a project's prompt file must be inside the project (${file} is not)`;
  return undefined;
}
