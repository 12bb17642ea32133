/**
 * The web inspector's actions: each runs the CLI command that does it, with the server's store, so
 * it does exactly what that command does and is recorded the same way. A command that goes on
 * running (`resume`) runs in the background, owning the thread as any run does; the page follows it
 * live. The others are waited for, and their output is the answer.
 */
import { spawn } from "node:child_process";

export type Action =
  | { kind: "approve" }
  | { kind: "reject"; reason?: string }
  | { kind: "send"; command: "stop" | "add"; task?: string }
  | { kind: "rewind"; checkpoint: string; dryRun?: boolean };

export interface ActionResult {
  /** The command run, as a user would type it. */
  command: string;
  /** Its exit code; undefined while it goes on in the background. */
  exitCode?: number;
  output: string;
}

/** How long a background command is watched for an early failure (a refused answer ends at once). */
const EARLY_EXIT_MS = 1_500;

export async function runAction(action: Action, threadId: string, cli: { node: string; script: string; db?: string }): Promise<ActionResult> {
  const args = argsOf(action, threadId);
  const db = cli.db !== undefined ? ["--db", cli.db] : [];
  const command = `loopgraph ${[...args].map((arg) => (/[\s"']/.test(arg) ? JSON.stringify(arg) : arg)).join(" ")}`;
  const child = spawn(cli.node, [cli.script, ...db, ...args], { stdio: ["ignore", "pipe", "pipe"], detached: action.kind === "approve" || action.kind === "reject" });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  if (!child.pid) throw new Error("the loopgraph command could not start");
  if (action.kind === "approve" || action.kind === "reject") {
    const early = await Promise.race([exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EARLY_EXIT_MS))]);
    if (early === undefined) {
      // It goes on: the page follows the thread; nothing waits for its output.
      child.stdout.destroy();
      child.stderr.destroy();
      child.unref();
      return { command, output: "" };
    }
    return { command, exitCode: early, output };
  }
  return { command, exitCode: await exited, output };
}

function argsOf(action: Action, threadId: string): string[] {
  switch (action.kind) {
    // Options first, then `--`: a value from the page is never read as an option.
    case "approve":
      return ["resume", "--approve", "--", threadId];
    case "reject":
      return ["resume", `--reject=${typeof action.reason === "string" ? action.reason : ""}`, "--", threadId];
    case "send":
      if (action.command === "stop") return ["send", "--", threadId, "stop"];
      if (action.command === "add" && typeof action.task === "string" && action.task.trim() !== "") return ["send", "--", threadId, `add: ${action.task}`];
      throw new ActionError('send takes { command: "stop" } or { command: "add", task: "…" }');
    case "rewind":
      if (typeof action.checkpoint !== "string" || action.checkpoint === "") throw new ActionError("rewind takes { checkpoint, dryRun }");
      return ["rewind", ...(action.dryRun === true ? ["--dry-run"] : []), "--json", "--", threadId, action.checkpoint];
    default:
      throw new ActionError(`no action "${(action as { kind: string }).kind}": use approve, reject, send or rewind`);
  }
}

/** A request for an action that does not exist or lacks what it needs. */
export class ActionError extends Error {}
