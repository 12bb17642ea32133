import { RunControl } from "@langchain/langgraph";
import pc from "picocolors";
import { ConfigError, ExitCode } from "../errors.js";
import type { EventSink } from "../runtime/events.js";
import { resumeRun, runGraph } from "../engine/runner.js";
import { promptForApproval } from "./approval-prompt.js";
import { humanRenderer, jsonRenderer } from "./render.js";
import { printable } from "./terminal-text.js";
import type { ApprovalMode } from "../state/thread.js";
import type { ApprovalAnswer } from "../runtime/approval.js";
import { type RunOutcome } from "../engine/run-types.js";

export interface GlobalOptions {
  db?: string;
}

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
  maxRounds?: number;
  json?: boolean;
}

export interface ResumeCommandOptions extends GlobalOptions, SandboxFlag {
  model?: string;
  approval?: ApprovalMode;
  approve?: boolean;
  /** `--reject` alone is `true`; `--reject "why"` carries the reason. */
  reject?: string | boolean;
  answer?: string;
  json?: boolean;
}

/** Terminal prompts for approvals when a person is at the terminal; otherwise the run pauses (exit 3). */
export const interactiveApprovals = (json: boolean) => (!json && process.stdin.isTTY && process.stderr.isTTY ? promptForApproval : undefined);

function answerOf(options: ResumeCommandOptions): ApprovalAnswer | string | undefined {
  if (options.approve && options.reject !== undefined) throw new ConfigError("use either --approve or --reject, not both");
  if (options.approve) return { decision: "approve" };
  if (options.reject !== undefined) return typeof options.reject === "string" ? { decision: "reject", reason: options.reject } : { decision: "reject" };
  return options.answer;
}

/**
 * Ctrl-C asks the run to drain: it stops at the next step boundary with its checkpoint saved.
 * A second Ctrl-C quits at once; the step in flight is lost and re-runs on resume.
 */
export function drainOnInterrupt(json: boolean): { control: RunControl; dispose: () => void } {
  const control = new RunControl();
  const onSigint = (): void => {
    if (control.drainRequested) process.exit(ExitCode.Interrupted);
    control.requestDrain("interrupted by user");
    if (!json) process.stderr.write(pc.yellow("\nStopping at the next step boundary (Ctrl-C again to quit now)…\n"));
  };
  process.on("SIGINT", onSigint);
  return { control, dispose: () => process.off("SIGINT", onSigint) };
}

function resumeHint(threadId: string, db: string | undefined): string {
  return `loopgraph resume ${threadId}${db ? ` --db ${JSON.stringify(db)}` : ""}`;
}

/** The run's outcome for a person, its reason on the last line, with how to go on. */
function report(outcome: RunOutcome, db: string | undefined, json: boolean): void {
  if (json) return;
  const resume = resumeHint(outcome.threadId, db);
  const thread = `thread ${outcome.threadId}`;
  const reason = outcome.error ? `: ${printable(outcome.error)}` : "";
  switch (outcome.status) {
    case "finished":
      process.stdout.write(`${pc.green("✔ finished")}  ${thread}\n`);
      break;
    case "paused":
      process.stdout.write(
        outcome.pause?.reason === "input"
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

export async function withRunUi(json: boolean, db: string | undefined, run: (sink: EventSink, control: RunControl) => Promise<RunOutcome>): Promise<number> {
  const sink = json ? jsonRenderer() : humanRenderer();
  const { control, dispose } = drainOnInterrupt(json);
  try {
    const outcome = await run(sink, control);
    report(outcome, db, json);
    return outcome.exitCode;
  } finally {
    dispose();
  }
}

export function runCommand(graph: string, options: RunCommandOptions): Promise<number> {
  return withRunUi(Boolean(options.json), options.db, (onEvent, control) =>
    runGraph({
      graph,
      task: options.task,
      threadId: options.thread,
      workspace: options.workspace,
      model: options.model,
      approval: options.approval,
      noSandbox: options.sandbox === false,
      maxRounds: options.maxRounds,
      askApproval: interactiveApprovals(Boolean(options.json)),
      db: options.db,
      onEvent,
      control,
    }),
  );
}

export function resumeCommand(threadId: string, options: ResumeCommandOptions): Promise<number> {
  return withRunUi(Boolean(options.json), options.db, (onEvent, control) =>
    resumeRun({
      threadId,
      model: options.model,
      approval: options.approval,
      noSandbox: options.sandbox === false,
      answer: answerOf(options),
      askApproval: interactiveApprovals(Boolean(options.json)),
      db: options.db,
      onEvent,
      control,
    }),
  );
}
