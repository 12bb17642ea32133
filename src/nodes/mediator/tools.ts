import { z } from "zod";
import { toolSpec } from "../../models/tool-spec.js";
import type { ToolSpec } from "../../models/types.js";
import type { LooperCommands } from "../../runtime/context.js";
import { dispatchLooperCommand } from "../looper/commands.js";

const task = z.string().trim().min(1).describe("The work, complete and self-contained: the Coder sees only this text");

const sendToLooperArgs = z.discriminatedUnion("command", [
  z.strictObject({ command: z.literal("start"), task }),
  z.strictObject({ command: z.literal("add_pending"), task }),
  z.strictObject({ command: z.literal("stop") }),
  z.strictObject({ command: z.literal("status") }),
]);

// A flat schema for the model: providers handle `oneOf` poorly. The discriminated union above checks the pairing.
const sendToLooperParameters = z.strictObject({
  command: z.enum(["start", "stop", "status", "add_pending"]).describe("start a loop, stop it, report its status, or add a task to it"),
  task: task.optional().describe("For start and add_pending: the work, complete and self-contained (the Coder sees only this text)"),
});

const noArgs = z.strictObject({});

export const MEDIATOR_TOOLS: ToolSpec[] = [
  toolSpec(
    "send_to_looper",
    "Hand work to the Looper, which runs rounds of Coder → Review → Judge in the background. Returns at once. " +
      "start {task}: start a loop; add_pending {task}: add work for after the current round; stop: stop the loop; status: the status block.",
    sendToLooperParameters,
  ),
  toolSpec(
    "query_looper_status",
    "The Looper's status block (state, task, round, sub-state, pending tasks). No cost: call it whenever asked how it is going.",
    noArgs,
  ),
];

export interface MediatorToolResult {
  ok: boolean;
  content: string;
}

/** Runs one tool call of the Mediator; bad arguments come back as an error result for the model, never as a throw. */
export async function runMediatorTool(name: string, args: unknown, looper: LooperCommands): Promise<MediatorToolResult> {
  if (name === "query_looper_status") return { ok: true, content: await looper.status() };
  if (name !== "send_to_looper") {
    return { ok: false, content: `unknown tool "${name}": use send_to_looper or query_looper_status` };
  }
  const parsed = sendToLooperArgs.safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message));
    return { ok: false, content: `invalid arguments for send_to_looper: ${issues.join("; ")} (start and add_pending need a task)` };
  }
  return { ok: true, content: await dispatchLooperCommand(parsed.data, looper) };
}
