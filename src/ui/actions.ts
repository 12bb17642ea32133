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
  | { kind: "rewind"; checkpoint: string; dryRun?: boolean }
  | { kind: "fork"; checkpoint: string; set?: string[] };

export interface ActionResult {
  /** The command run, as a user would type it. */
  command: string;
  /** Its exit code; undefined while it goes on in the background. */
  exitCode?: number;
  output: string;
}

/** How long a background command is watched for an early failure (a refused answer ends at once). */
const EARLY_EXIT_MS = 1_500;

/** Actions that run the thread on (a resume, a fork): in the background, owning the thread as any run. */
const RUNS_ON = new Set<Action["kind"]>(["approve", "reject", "fork"]);

/** The CLI, started with the server's store: its exit, and what it printed so far. */
function startCli(args: string[], cli: CliPlace, detached: boolean) {
  const child = spawn(cli.node, [cli.script, ...(cli.db !== undefined ? ["--db", cli.db] : []), ...args], { stdio: ["ignore", "pipe", "pipe"], detached });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  return { child, exited, output: () => output };
}

/** How the server runs the CLI: node, the CLI's script, and the store it was given. */
export interface CliPlace {
  node: string;
  script: string;
  db?: string;
}

/** The command as a user would type it. */
const typed = (args: string[]): string => `loopgraph ${args.map((arg) => (/[\s"']/.test(arg) ? JSON.stringify(arg) : arg)).join(" ")}`;

export async function runAction(action: Action, threadId: string, cli: CliPlace): Promise<ActionResult> {
  const args = argsOf(action, threadId);
  const background = RUNS_ON.has(action.kind);
  const started = startCli(args, cli, background);
  if (background) {
    const early = await Promise.race([started.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EARLY_EXIT_MS))]);
    if (early === undefined) {
      // It goes on: the page follows the thread; nothing waits for its output.
      started.child.stdout.destroy();
      started.child.stderr.destroy();
      started.child.unref();
      return { command: typed(args), output: "" };
    }
    return { command: typed(args), exitCode: early, output: started.output() };
  }
  return { command: typed(args), exitCode: await started.exited, output: started.output() };
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
    case "fork": {
      if (typeof action.checkpoint !== "string" || action.checkpoint === "") throw new ActionError("fork takes { checkpoint, set: [\"path=value\", …] }");
      const set = Array.isArray(action.set) ? action.set.filter((edit): edit is string => typeof edit === "string" && edit.trim() !== "") : [];
      return ["replay", `--from=${action.checkpoint}`, ...set.map((edit) => `--set=${edit}`), "--", threadId];
    }
    default:
      throw new ActionError(`no action "${(action as { kind: string }).kind}": use approve, reject, send, rewind or fork`);
  }
}

/** A request for an action that does not exist or lacks what it needs. */
export class ActionError extends Error {}

/** `loopgraph inspect <thread> --export-script FILE`: the thread's recorded model answers as a scripted-model file. */
export async function exportScript(threadId: string, file: string, cli: CliPlace): Promise<ActionResult> {
  const args = ["inspect", `--export-script=${file}`, "--", threadId];
  const started = startCli(args, cli, false);
  return { command: typed(args), exitCode: await started.exited, output: started.output() };
}
