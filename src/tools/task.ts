import { z } from "zod";
import type { ToolDefinition, ToolOutput } from "./types.js";

const schema = z.strictObject({
  description: z.string().trim().min(1).max(200).describe("A few words on what the subagent is for (shown to the user)"),
  prompt: z.string().trim().min(1).describe("The whole task for the subagent: it sees nothing of your conversation, only this"),
  agent: z.string().min(1).describe("A subagent type your instructions name (default: a read-only explorer)").optional(),
});

export type TaskArgs = z.infer<typeof schema>;

/**
 * The Coder's `task` tool: hands a focused question to a subagent, a Coder of its own with a
 * fresh history and read-only tools, whose answer comes back as this call's result. The Coder
 * runs it (ToolContext.subagent): as a nested graph, every step of it checkpointed and recorded
 * on its own, so the call is `composite` (no record or snapshot of its own).
 */
export const taskTool: ToolDefinition<TaskArgs> = {
  name: "task",
  description:
    "Hand a focused, read-only investigation to a subagent (e.g. 'find where X is configured and how it is used'). It starts " +
    "fresh with only your prompt, reads the workspace, and returns a summary with its findings and the files it read. Use it " +
    "to keep long searches out of your own history.",
  effect: "read",
  composite: true,
  schema,
  run(args, ctx): Promise<ToolOutput> {
    if (!ctx.subagent) throw new Error("no subagent runner in this context");
    return ctx.subagent(args);
  },
};
