import { readFileSync } from "node:fs";
import { RunControl } from "@langchain/langgraph";
import pc from "picocolors";
import { CancelledError, ConfigError, ExitCode } from "../errors.js";
import type { EventSink } from "../runtime/events.js";
import { resumeRun, runGraph } from "../engine/runner.js";
import { promptForApproval } from "./approval-prompt.js";
import { withGraphSuggestion } from "./graph-suggestion.js";
import { describeTotals, humanRenderer, jsonRenderer, type RunTotals } from "./render.js";
import { printable } from "./terminal-text.js";
import type { ApprovalMode, CoderMode } from "../state/thread.js";
import type { ApprovalAnswer } from "../runtime/approval.js";
import { type CommonRunOptions, type RunOptions, type RunOutcome } from "../engine/run-types.js";
import { interruptActiveRuns } from "../engine/active-runs.js";
import { withoutPassword } from "../runs/url-password.js";
import { storeOf, type GlobalOptions } from "./global-options.js";

/** `--no-sandbox` (commander sets `sandbox: false`). */
export interface SandboxFlag {
  sandbox?: boolean;
}

export interface RunCommandOptions extends GlobalOptions, SandboxFlag {
  task?: string;
  thread?: string;
  workspace?: string;
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  maxRounds?: number;
  /** `--attempts`: the graph's `attempts` field for this run. */
  attempts?: number;
  /** `--model-timeout` (milliseconds, parsed by main.ts). */
  modelTimeout?: number;
  json?: boolean;
  repo?: string;
  ref?: string;
  /** `--commit`: a finished run's changes become one commit (snapshots/run-commit.ts). */
  commit?: boolean;
}

export interface ResumeCommandOptions extends GlobalOptions, SandboxFlag {
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  /** `--approve` alone is `true`; `--approve CALL_ID` names the call (as `--call`). */
  approve?: string | boolean;
  /** `--call CALL_ID`: the pending call an answer is for. */
  call?: string;
  /** `--reject` alone is `true`; `--reject "why"` carries the reason. */
  reject?: string | boolean;
  answer?: string;
  /** `--edit-args FILE`: with --approve, the call runs with the arguments in FILE (a JSON object). */
  editArgs?: string;
  /** `--set-arg path=value` (repeatable): with --approve, the call runs with these arguments changed. */
  setArg?: string[];
  /** `--max-rounds`: the round limit of a loop this resume starts. */
  maxRounds?: number;
  /** `--model-timeout` (milliseconds, parsed by main.ts). */
  modelTimeout?: number;
  json?: boolean;
  /** `--commit`: as `run --commit`, when this resume finishes the run. */
  commit?: boolean;
}

/** Terminal prompts for approvals when a person is at the terminal; otherwise the run pauses (exit 3). */
export const interactiveApprovals = (json: boolean) =>
  !json && process.stdin.isTTY && process.stderr.isTTY ? promptForApproval : undefined;

function answerOf(options: ResumeCommandOptions): ApprovalAnswer | string | undefined {
  if (options.approve && options.reject !== undefined) throw new ConfigError("use either --approve or --reject, not both");
  const editing = options.editArgs !== undefined || (options.setArg?.length ?? 0) > 0;
  if (editing && !options.approve) throw new ConfigError("--edit-args and --set-arg change the call you approve: add --approve");
  if (options.approve) {
    return {
      decision: "approve",
      ...(options.editArgs !== undefined && { args: argumentsFile(options.editArgs) }),
      ...(options.setArg?.length && { set: options.setArg.map(argumentChange) }),
    };
  }
  if (options.reject !== undefined)
    return typeof options.reject === "string" ? { decision: "reject", reason: options.reject } : { decision: "reject" };
  return options.answer;
}

/** The pending call an answer is for: `--approve CALL_ID` or `--call CALL_ID` (not two different ones). */
function callOf(options: ResumeCommandOptions): { call?: string } {
  const named = typeof options.approve === "string" ? options.approve : undefined;
  if (named !== undefined && options.call !== undefined && named !== options.call)
    throw new ConfigError(`--approve ${named} and --call ${options.call} name different calls: name one`);
  const call = named ?? options.call;
  return call === undefined ? {} : { call };
}

/** `--edit-args FILE`: the call's arguments as one JSON object. */
function argumentsFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new ConfigError(`--edit-args ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `--edit-args ${file} is not JSON (${(error as Error).message}): write the call's arguments as one JSON object, e.g. {"command": "npm test"}`,
    );
  }
  if (args === null || typeof args !== "object" || Array.isArray(args))
    throw new ConfigError(`--edit-args ${file} must hold one JSON object: the call's arguments, e.g. {"command": "npm test"}`);
  return args as Record<string, unknown>;
}

/** `--set-arg path=value`: the value as JSON when it is JSON (`5`, `true`, `"x"`, `[1]`), else as text. */
function argumentChange(text: string): { path: string; value: unknown } {
  const at = text.indexOf("=");
  const path = at > 0 ? text.slice(0, at).trim() : "";
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(path))
    throw new ConfigError(`--set-arg ${text}: write it as name=value (a nested one as a.b=value), e.g. --set-arg command="npm test"`);
  const raw = text.slice(at + 1);
  try {
    return { path, value: JSON.parse(raw) as unknown };
  } catch {
    return { path, value: raw };
  }
}

/** The signals that stop a run: Ctrl-C, and `kill`'s default. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;

/**
 * Ctrl-C (or SIGTERM) stops the run now: it is drained, and its signal aborts the step in flight
 * (a model request, a retry wait, a shell command), which ends without a result and re-runs on
 * resume; the run ends `interrupted` (130) with its last checkpoint. A second one quits at once:
 * the threads still running are first recorded as interrupted, with the command that resumes them.
 */
export function drainOnInterrupt(json: boolean, db?: string): { control: RunControl; signal: AbortSignal; dispose: () => void } {
  const control = new RunControl();
  const cancel = new AbortController();
  const onSignal = (): void => {
    if (control.drainRequested) void quitNow(json, db);
    control.requestDrain("interrupted by user");
    cancel.abort(new CancelledError());
    if (!json) process.stderr.write(pc.yellow("\nStopping now: the step in flight re-runs on resume (Ctrl-C again to quit at once)…\n"));
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  return { control, signal: cancel.signal, dispose: () => STOP_SIGNALS.forEach((name) => process.off(name, onSignal)) };
}

/** Exits 130 at once, after recording the threads still running as interrupted and saying how to resume them. */
async function quitNow(json: boolean, db: string | undefined): Promise<never> {
  const threads = await interruptActiveRuns("interrupted by the user before the step in flight ended (it re-runs on resume)");
  const lines = threads.map(
    (threadId) => `${json ? "" : `${pc.yellow("■ interrupted")}  thread ${threadId}\n`}Continue with: ${resumeHint(threadId, db)}\n`,
  );
  // With --json, stdout holds events only; the hint goes to stderr.
  (json ? process.stderr : process.stdout).write(lines.join(""));
  process.exit(ExitCode.Interrupted);
}

function resumeHint(threadId: string, db: string | undefined): string {
  return `loopgraph resume ${threadId}${dbFlag(db)}`;
}

/** ` --db "…"` for a command the user is told to run next (the store's URL without its password), or nothing. */
export function dbFlag(db: string | undefined): string {
  return db ? ` --db ${JSON.stringify(withoutPassword(db))}` : "";
}

/** The run's outcome for a person, its reason on the last line, with how to go on; `totals` follow the thread's id. */
export function report(
  outcome: Pick<RunOutcome, "threadId" | "status" | "error" | "pause" | "ended">,
  db: string | undefined,
  json: boolean,
  totals?: RunTotals,
): void {
  if (json) return;
  const resume = resumeHint(outcome.threadId, db);
  const thread = `thread ${outcome.threadId}${totals ? `  (${describeTotals(totals)})` : ""}`;
  const reason = outcome.error ? `: ${printable(outcome.error)}` : "";
  switch (outcome.status) {
    case "finished":
      process.stdout.write(`${pc.green("✔ finished")}  ${thread}\n`);
      break;
    case "paused":
      process.stdout.write(
        outcome.pause?.pending
          ? `${pc.yellow("⏸ waiting for approval")}  ${thread}\nApprove all with: ${resume} --approve   (one: --approve CALL_ID)\nReject all with:  ${resume} --reject "why"   (one: add --call CALL_ID)\n`
          : outcome.pause?.reason === "input"
            ? `${pc.yellow("⏸ waiting for approval")}  ${thread}\nApprove with: ${resume} --approve\nReject with:  ${resume} --reject "why"\n`
            : `${pc.yellow("⏸ paused")}  ${thread}\nContinue with: ${resume}\n`,
      );
      break;
    case "interrupted":
      process.stdout.write(
        outcome.ended
          ? `${pc.yellow("■ interrupted")}  ${thread}${reason}\n`
          : `Continue with: ${resume}\n${pc.yellow("■ interrupted")}  ${thread} (checkpoint saved)${reason}\n`,
      );
      break;
    case "limited":
      process.stderr.write(`${outcome.ended ? "" : `Continue with: ${resume}\n`}${pc.yellow("■ ended by a limit")}  ${thread}${reason}\n`);
      break;
    case "failed":
      process.stderr.write(`${outcome.ended ? "" : `Retry the failed step with: ${resume}\n`}${pc.red("✖ failed")}  ${thread}${reason}\n`);
      break;
  }
}

/** What a command's run takes from the UI: its event sink, the terminal's approval prompt (if any), and the Ctrl-C handling (see drainOnInterrupt). */
export interface RunUi {
  onEvent: EventSink;
  askApproval?: CommonRunOptions["askApproval"];
  control: RunControl;
  signal: AbortSignal;
}

export async function withRunUi(json: boolean, db: string | undefined, run: (ui: RunUi) => Promise<RunOutcome>): Promise<number> {
  const started = Date.now();
  const human = json ? undefined : humanRenderer();
  const onEvent = human ?? jsonRenderer();
  const ask = interactiveApprovals(json);
  // The spinner stays off while the terminal asks for an approval.
  const askApproval: RunUi["askApproval"] =
    ask &&
    (async (request, signal) => {
      human?.pauseSpinner();
      try {
        return await ask(request, signal);
      } finally {
        human?.resumeSpinner();
      }
    });
  const { control, signal, dispose } = drainOnInterrupt(json, db);
  try {
    const outcome = await run({ onEvent, askApproval, control, signal });
    human?.close();
    report(outcome, db, json, { usage: human?.usage(), rounds: human?.rounds(), elapsedMs: Date.now() - started });
    return outcome.exitCode;
  } finally {
    human?.close();
    dispose();
  }
}

export function runCommand(graph: string, options: RunCommandOptions): Promise<number> {
  return withGraphSuggestion(graph, () =>
    withRunUi(Boolean(options.json), options.db, async (ui) =>
      committed(await runGraph({ ...runOptionsOf(graph, options), ...ui }), options),
    ),
  );
}

/**
 * `--commit`: a run that finished (exit 0) leaves its changes as one commit, said in one line; a
 * commit refused (or failing) makes the command fail, saying why. Any other outcome commits nothing.
 */
async function committed(outcome: RunOutcome, options: GlobalOptions & { commit?: boolean; json?: boolean }): Promise<RunOutcome> {
  if (!options.commit || outcome.status !== "finished" || outcome.exitCode !== ExitCode.Finished) return outcome;
  const { commitRunResult } = await import("../snapshots/run-commit.js");
  const result = await commitRunResult(outcome.threadId, storeOf(options)).catch((error: Error) => ({
    status: "refused" as const,
    reason: error.message.split("\n", 1)[0]!,
  }));
  if (result.status === "refused") {
    const error = `the run finished, but --commit made no commit: ${result.reason}`;
    // With --json the report prints nothing: the reason goes to stderr.
    if (options.json) process.stderr.write(`${printable(error)}\n`);
    return { ...outcome, status: "failed", exitCode: ExitCode.Failed, error, ended: true };
  }
  const line =
    result.status === "nothing"
      ? "--commit: nothing to commit (no step of the run changed a file that differs from the branch's last commit, or its workspace snapshots were off: see its warnings)"
      : `--commit: committed ${result.commit.slice(0, 12)} on ${result.branch}${result.createdFrom ? ` (a new branch beside ${result.createdFrom}; the workspace is now on it)` : ""}: ${result.files.length} file${result.files.length === 1 ? "" : "s"}${result.indexProblem ? `; ${result.indexProblem}` : ""}`;
  // With --json, stdout holds events only.
  (options.json ? process.stderr : process.stdout).write(`${printable(line)}\n`);
  return outcome;
}

/** The flags every command that runs a thread (`run`, `resume`, `chat`) takes, as run options. */
export function commonRunOptionsOf(
  options: Pick<RunCommandOptions, "model" | "approval" | "mode" | "sandbox" | "maxRounds" | "modelTimeout" | "db" | "settings">,
): CommonRunOptions {
  return {
    model: options.model,
    approval: options.approval,
    mode: options.mode,
    noSandbox: options.sandbox === false,
    maxRounds: options.maxRounds,
    modelTimeoutMs: options.modelTimeout,
    db: options.db,
    settings: options.settings,
  };
}

/** The options of a new run (`run`, `run --queue`) from the command's. */
export function runOptionsOf(graph: string, options: RunCommandOptions): RunOptions {
  return {
    graph,
    task: options.task,
    threadId: options.thread,
    workspace: options.workspace,
    ...commonRunOptionsOf(options),
    ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
    ...(options.repo !== undefined ? { repo: options.repo } : {}),
    ...(options.ref !== undefined ? { ref: options.ref } : {}),
  };
}

export function resumeCommand(threadId: string, options: ResumeCommandOptions): Promise<number> {
  return withRunUi(Boolean(options.json), options.db, (ui) =>
    resumeRun({
      threadId,
      ...commonRunOptionsOf(options),
      answer: answerOf(options),
      ...callOf(options),
      ...ui,
    }).then((outcome) => committed(outcome, options)),
  );
}
