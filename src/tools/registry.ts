import { createTwoFilesPatch } from "diff";
import type { z } from "zod";
import { redactValues } from "../runs/redact.js";
import { toolSpec } from "../models/tool-spec.js";
import type { ToolSpec } from "../models/types.js";
import { editFileTool } from "./edit-file.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import { listDirTool } from "./list-dir.js";
import { readFileTool } from "./read-file.js";
import { shellTool } from "./shell.js";
import { presentPlanTool } from "./present-plan.js";
import { completeTaskTool } from "./complete-task.js";
import { taskTool } from "./task.js";
import { todoWriteTool } from "./todo-write.js";
import { saveFindingTool } from "./save-finding.js";
import { fitToBudget } from "./truncate.js";
import { gitCommitTool } from "./git-commit.js";
import { ToolError, type ToolCallRequest, type ToolContext, type ToolDefinition, type ToolResult } from "./types.js";
import { writeFileTool } from "./write-file.js";

export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  readFileTool,
  writeFileTool,
  editFileTool,
  listDirTool,
  globTool,
  grepTool,
  shellTool,
  todoWriteTool,
  saveFindingTool,
  taskTool,
  gitCommitTool,
];

/** Tools a node gets by its mode or role, not by its `tools:` list: plan mode's present_plan, a subagent's complete_task. */
export const MODE_TOOLS: readonly ToolDefinition[] = [presentPlanTool, completeTaskTool()];

/** What the model is told about each tool. */
export function toolSpecs(tools: readonly ToolDefinition[]): ToolSpec[] {
  return tools.map((tool) =>
    tool.parameters
      ? { name: tool.name, description: tool.description, parameters: tool.parameters }
      : toolSpec(tool.name, tool.description, tool.schema),
  );
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0]!.trim();
}

function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message)).join("; ");
}

/**
 * A call checked before anything decides on it: the tool it names, with its arguments as the
 * tool's schema reads them; or the failed result of an unknown tool or invalid arguments.
 */
export function checkToolCall(
  call: Pick<ToolCallRequest, "name" | "args">,
  tools: readonly ToolDefinition[],
): { tool: ToolDefinition; args: unknown } | { failure: ToolResult } {
  const tool = tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    const available = tools.map((candidate) => candidate.name).join(", ");
    return { failure: { ok: false, errorKind: "tool_not_found", content: `unknown tool "${call.name}"; available tools: ${available}` } };
  }
  const parsed = tool.schema.safeParse(call.args);
  if (!parsed.success)
    return {
      failure: {
        ok: false,
        errorKind: "invalid_arguments",
        content: `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`,
      },
    };
  return { tool, args: parsed.data };
}

/**
 * Runs one tool call and never throws: an unknown tool, invalid arguments, a ToolError or any
 * other exception becomes a failed result of the matching kind (one line, no stack), and a long
 * result is cut to the budget with its full text saved as an artifact.
 */
export async function executeToolCall(
  call: ToolCallRequest,
  ctx: ToolContext,
  tools: readonly ToolDefinition[] = BUILTIN_TOOLS,
): Promise<ToolResult> {
  if (ctx.signal?.aborted) return { ok: false, errorKind: "failed", content: "cancelled before it started" };
  const checked = checkToolCall(call, tools);
  if ("failure" in checked) return checked.failure;
  const { tool } = checked;
  try {
    const output = await tool.run(checked.args, ctx);
    const fitted = await fitToBudget(output.content, ctx, tool.name, output.fullOutput);
    return {
      ok: true,
      ...fitted,
      ...(output.filesChanged ? { filesChanged: output.filesChanged } : {}),
      ...(output.todos ? { todos: output.todos } : {}),
      ...(output.finding ? { finding: output.finding } : {}),
      ...(output.fileStamps ? { fileStamps: output.fileStamps } : {}),
      ...(output.planApproved ? { planApproved: true } : {}),
      ...(output.submitted ? { submitted: output.submitted } : {}),
    };
  } catch (error) {
    if (error instanceof ToolError) {
      const fitted = await fitToBudget(error.message, ctx, tool.name, error.fullOutput).catch(() => ({ content: error.message }));
      return { ok: false, errorKind: error.kind, ...fitted };
    }
    return {
      ok: false,
      errorKind: "failed",
      content: `${tool.name} failed: ${firstLine(error instanceof Error ? error.message : String(error))}`,
    };
  }
}

export interface DiffOptions {
  /** Unchanged lines around each change. */
  context: number;
  /** Lines kept; the rest is said in one line. */
  max: number;
  /** What the lines cut are of (`of the diff`), in that line. */
  what?: string;
  /** Without the `---`/`+++` header: the hunks alone. */
  hunksOnly?: boolean;
  /** Values redacted from it. */
  secrets?: readonly string[];
}

/** The unified diff of two texts, cut after `max` lines with a line saying how many more there were. */
export function unifiedDiff(oldName: string, newName: string, before: string, after: string, options: DiffOptions): string {
  const patch = redactValues(
    createTwoFilesPatch(oldName, newName, before, after, undefined, undefined, { context: options.context }),
    options.secrets ?? [],
  ).split("\n");
  const start = patch.findIndex((line) => (options.hunksOnly ? line.startsWith("@@") : line.startsWith("--- ")));
  const lines = start < 0 ? [] : patch.slice(start);
  const more = lines.length - options.max;
  const cut = more > 0 ? [...lines.slice(0, options.max), `[... ${more} more lines${options.what ? ` ${options.what}` : ""}]`] : lines;
  return cut.join("\n").trimEnd();
}

/** Lines of a diff shown to the user asked about an edit; a longer one is cut, saying so. */
const DIFF_MAX_LINES = 400;
/** Lines of a new file's content shown: its head is what tells what the file is. */
const NEW_FILE_MAX_LINES = 60;
/** Texts longer than this (before and after together) are not diffed. */
const DIFF_MAX_INPUT_CHARS = 2_000_000;

/**
 * The unified diff of what a file-editing call would change, for the user asked to approve it,
 * with the run's secrets redacted; undefined for other tools, or when the call would fail anyway
 * (its own error then reaches the model).
 */
export async function previewChange(
  call: ToolCallRequest,
  ctx: ToolContext,
  tools: readonly ToolDefinition[] = BUILTIN_TOOLS,
): Promise<string | undefined> {
  const tool = tools.find((candidate) => candidate.name === call.name);
  const parsed = tool?.preview ? tool.schema.safeParse(call.args) : undefined;
  if (!tool?.preview || !parsed?.success) return undefined;
  try {
    const change = await tool.preview(parsed.data, ctx);
    const size = (change.before?.length ?? 0) + change.after.length;
    // A line diff of large texts can take long (its cost grows with size times differences).
    if (size > DIFF_MAX_INPUT_CHARS)
      return `[no diff shown: ${change.path} would go from ${change.before?.length ?? 0} to ${change.after.length} characters]`;
    const before = change.before === undefined ? "/dev/null" : `a/${change.path}`;
    // A new file: its head (the header and first lines); a change: the diff, up to its limit.
    const cut =
      change.before === undefined ? { max: NEW_FILE_MAX_LINES + 3, what: "of the new file" } : { max: DIFF_MAX_LINES, what: "of the diff" };
    return unifiedDiff(before, `b/${change.path}`, change.before ?? "", change.after, { context: 3, ...cut, secrets: ctx.secrets ?? [] });
  } catch {
    return undefined;
  }
}
