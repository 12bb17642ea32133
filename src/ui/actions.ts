/**
 * The web inspector's actions: each runs the CLI command that does it, with the server's store, so
 * it does exactly what that command does and is recorded the same way. A command that runs the
 * thread on (a resume, a fork) is started as from a terminal and lives on its own, owning the thread
 * as any run does, whatever becomes of the server; the page follows it live. The others are waited
 * for, and their output is the answer.
 */
import { spawn } from "node:child_process";
import { appendFileSync, closeSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export type Action =
  /** `call`: with several calls waiting, the one answered (else all of them). */
  | { kind: "approve"; call?: string }
  | { kind: "reject"; reason?: string; call?: string }
  | { kind: "resume" }
  | { kind: "send"; command: "stop" | "add"; task?: string }
  | { kind: "rewind"; checkpoint: string; dryRun?: boolean }
  | { kind: "fork"; checkpoint: string; set?: string[] };

export interface ActionResult {
  /** The command run, as a user would type it. */
  command: string;
  /** Its exit code; undefined while it goes on in the background. */
  exitCode?: number;
  output: string;
  /** The file a command that goes on in the background writes its output to. */
  log?: string;
}

/** How long a background command is watched for an early failure (a refused answer ends at once). */
const EARLY_EXIT_MS = 1_500;

/** Actions that run the thread on (a resume, a fork): in the background, owning the thread as any run. */
const RUNS_ON = new Set<Action["kind"]>(["approve", "reject", "resume", "fork"]);

/** The CLI's arguments: the server's store first, then the command's. */
const cliArgs = (args: string[], cli: CliPlace): string[] => [cli.script, ...(cli.db !== undefined ? ["--db", cli.db] : []), ...args];

/** The CLI, started with the server's store and waited for: its exit, and what it printed. */
function runCli(args: string[], cli: CliPlace): Promise<{ exitCode: number; output: string }> {
  const child = spawn(cli.node, cliArgs(args, cli), { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.on("close", (code, signal) => resolve({ exitCode: exitCodeOf(code, signal), output }));
    child.on("error", (error) => resolve({ exitCode: NOT_STARTED, output: error.message }));
  });
}

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number => code ?? (signal ? 128 : 1);

/** The exit code of a command that could not be started, as a shell's for a command not found (the spawn error is handled: unhandled, it would end the server). */
const NOT_STARTED = 127;

/**
 * The CLI, started as a terminal would start it and left to run on its own: in a session of its
 * own (a signal to the server's process group does not reach it) and writing to a log file, not to
 * pipes of the server (a run writing to a closed pipe would die of it when the server stops or
 * stops reading). It is watched for EARLY_EXIT_MS: a command that ends by then (a refused answer)
 * is reported with its exit code and output; one that goes on is followed on the page.
 */
async function startDetached(args: string[], cli: CliPlace): Promise<{ exitCode?: number; output: string; log?: string }> {
  removeStaleActionLogs(tmpdir());
  const log = join(mkdtempSync(join(tmpdir(), ACTION_LOG_PREFIX)), "output.log");
  const fd = openSync(log, "a", 0o600);
  const child = spawn(cli.node, cliArgs(args, cli), { stdio: ["ignore", fd, fd], detached: true });
  closeSync(fd);
  const exited = new Promise<number>((resolve) => {
    child.on("exit", (code, signal) => resolve(exitCodeOf(code, signal)));
    child.on("error", (error) => {
      appendFileSync(log, error.message);
      resolve(NOT_STARTED);
    });
  });
  const early = await Promise.race([exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EARLY_EXIT_MS))]);
  const output = readFileSync(log, "utf8");
  if (early === undefined) {
    // It goes on: the server neither waits for it nor keeps it alive.
    child.unref();
    return { output, log };
  }
  rmSync(dirname(log), { recursive: true, force: true });
  return { exitCode: early, output };
}

const ACTION_LOG_PREFIX = "loopgraph-ui-run-";

/** A background command's log is kept this long after its last write (the run is in the store for good). */
export const ACTION_LOG_KEPT_MS = 24 * 60 * 60 * 1000;

/**
 * Removes the folders of background commands' logs in `dir` not written for ACTION_LOG_KEPT_MS:
 * only folders of this user (the temporary folder is shared), never what a link points to.
 */
export function removeStaleActionLogs(dir: string, now = Date.now()): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.startsWith(ACTION_LOG_PREFIX));
  } catch {
    return; // No temporary folder to tidy: nothing to do.
  }
  for (const name of names) {
    const folder = join(dir, name);
    try {
      const info = lstatSync(folder);
      if (!info.isDirectory() || info.uid !== process.getuid?.()) continue;
      const written = lstatSync(join(folder, "output.log"), { throwIfNoEntry: false })?.mtimeMs ?? info.mtimeMs;
      if (now - written > ACTION_LOG_KEPT_MS) rmSync(folder, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or removed by another server at the same moment: either way, not ours to tidy now.
    }
  }
}

/** How the server runs the CLI: node, the CLI's script, and the store it was given. */
export interface CliPlace {
  node: string;
  script: string;
  db?: string;
}

/** The pending call an answer names, as one argument (a value from the page is never read as an option). */
function callArgs(call: unknown): string[] {
  if (call === undefined) return [];
  if (typeof call !== "string" || call === "") throw new ActionError("call names a pending call by its id: a non-empty string");
  return [`--call=${call}`];
}

/** The command as a user would type it. */
const typed = (args: string[]): string => `loopgraph ${args.map((arg) => (/[\s"']/.test(arg) ? JSON.stringify(arg) : arg)).join(" ")}`;

export async function runAction(action: Action, threadId: string, cli: CliPlace): Promise<ActionResult> {
  const args = argsOf(action, threadId);
  const ran = RUNS_ON.has(action.kind) ? await startDetached(args, cli) : await runCli(args, cli);
  return { command: typed(args), ...ran };
}

function argsOf(action: Action, threadId: string): string[] {
  switch (action.kind) {
    // Options first, then `--`: a value from the page is never read as an option.
    case "approve":
      return ["resume", "--approve", ...callArgs(action.call), "--", threadId];
    case "reject":
      return ["resume", `--reject=${typeof action.reason === "string" ? action.reason : ""}`, ...callArgs(action.call), "--", threadId];
    case "resume":
      return ["resume", "--", threadId];
    case "send":
      if (action.command === "stop") return ["send", "--", threadId, "stop"];
      if (action.command === "add" && typeof action.task === "string" && action.task.trim() !== "")
        return ["send", "--", threadId, `add: ${action.task}`];
      throw new ActionError('send takes { command: "stop" } or { command: "add", task: "…" }');
    case "rewind":
      if (typeof action.checkpoint !== "string" || action.checkpoint === "") throw new ActionError("rewind takes { checkpoint, dryRun }");
      return ["rewind", ...(action.dryRun === true ? ["--dry-run"] : []), "--json", "--", threadId, action.checkpoint];
    case "fork": {
      if (typeof action.checkpoint !== "string" || action.checkpoint === "")
        throw new ActionError('fork takes { checkpoint, set: ["path=value", …] }');
      const set = Array.isArray(action.set)
        ? action.set.filter((edit): edit is string => typeof edit === "string" && edit.trim() !== "")
        : [];
      return ["replay", `--from=${action.checkpoint}`, ...set.map((edit) => `--set=${edit}`), "--", threadId];
    }
    default:
      throw new ActionError(`no action "${(action as { kind: string }).kind}": use approve, reject, resume, send, rewind or fork`);
  }
}

/** A request for an action that does not exist or lacks what it needs. */
export class ActionError extends Error {}

/** `loopgraph inspect <thread> --export-script FILE`: the thread's recorded model answers as a scripted-model file. */
export async function exportScript(threadId: string, file: string, cli: CliPlace): Promise<ActionResult> {
  const args = ["inspect", `--export-script=${file}`, "--", threadId];
  return { command: typed(args), ...(await runCli(args, cli)) };
}
