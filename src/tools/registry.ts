import type { z } from "zod";
import { toolSpec } from "../models/tool-spec.js";
import type { ToolSpec } from "../models/types.js";
import { editFileTool } from "./edit-file.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import { listDirTool } from "./list-dir.js";
import { readFileTool } from "./read-file.js";
import { shellTool } from "./shell.js";
import { todoWriteTool } from "./todo-write.js";
import { fitToBudget } from "./truncate.js";
import { ToolError, type ToolCallRequest, type ToolContext, type ToolDefinition, type ToolOutput, type ToolResult } from "./types.js";
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
];

/** What the model is told about each tool. */
export function toolSpecs(tools: readonly ToolDefinition[]): ToolSpec[] {
  return tools.map((tool) => toolSpec(tool.name, tool.description, tool.schema));
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0]!.trim();
}

function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message)).join("; ");
}

async function run(tool: ToolDefinition, args: unknown, ctx: ToolContext): Promise<ToolOutput> {
  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) throw new ToolError("invalid_arguments", `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`);
  return tool.run(parsed.data, ctx);
}

/**
 * Runs one tool call and never throws: an unknown tool, invalid arguments, a ToolError or any
 * other exception becomes a failed result of the matching kind (one line, no stack), and a long
 * result is cut to the budget with its full text saved as an artifact.
 */
export async function executeToolCall(call: ToolCallRequest, ctx: ToolContext, tools: readonly ToolDefinition[] = BUILTIN_TOOLS): Promise<ToolResult> {
  if (ctx.signal?.aborted) return { ok: false, errorKind: "failed", content: "cancelled before it started" };
  const tool = tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    const available = tools.map((candidate) => candidate.name).join(", ");
    return { ok: false, errorKind: "tool_not_found", content: `unknown tool "${call.name}"; available tools: ${available}` };
  }
  try {
    const output = await run(tool, call.args, ctx);
    const fitted = await fitToBudget(output.content, ctx, tool.name, output.fullOutputFile);
    return {
      ok: true,
      ...fitted,
      ...(output.filesChanged ? { filesChanged: output.filesChanged } : {}),
      ...(output.todos ? { todos: output.todos } : {}),
    };
  } catch (error) {
    if (error instanceof ToolError) {
      const fitted = await fitToBudget(error.message, ctx, tool.name, error.fullOutputFile).catch(() => ({ content: error.message }));
      return { ok: false, errorKind: error.kind, ...fitted };
    }
    return { ok: false, errorKind: "failed", content: `${tool.name} failed: ${firstLine(error instanceof Error ? error.message : String(error))}` };
  }
}
