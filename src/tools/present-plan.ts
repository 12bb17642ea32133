import { z } from "zod";
import type { ToolDefinition } from "./types.js";

const schema = z.strictObject({
  plan: z
    .string()
    .trim()
    .min(1)
    .describe("The plan, in Markdown: what you found, the changes you will make (files, steps), how you will check them"),
});

/**
 * Plan mode's way out: the Coder presents its plan, which the user approves (or rejects, with a
 * reason) like a tool call; once approved, the Coder goes on in agent mode with the plan in its
 * history. Its effect `plan` asks in every approval mode (and is denied in `deny`).
 */
export const presentPlanTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "present_plan",
  description:
    "Plan mode: present your plan to the user for approval once you have read enough. Until it is approved you can only read; " +
    "once approved you may use every tool to carry it out. If it is rejected, the reason tells you what to change.",
  effect: "plan",
  schema,
  approvalDetails: ({ plan }) => plan,
  async run() {
    return { content: "The user approved your plan. Carry it out now: every tool is available.", planApproved: true };
  },
};
