import { RunControl } from "@langchain/langgraph";
import pc from "picocolors";
import { ConfigError, ExitCode } from "../errors.js";
import type { EventSink } from "../runtime/events.js";
import { resumeRun, runGraph } from "../engine/runner.js";
import { promptForApproval } from "./approval-prompt.js";
import { humanRenderer, jsonRenderer } from "./render.js";
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

function report(outcome: RunOutcome, db: string | undefined, json: boolean): void {
  if (json) return;
  const resume = resumeHint(outcome.threadId, db);
  switch (outcome.status) {
    case "finished":
      process.stdout.write(`${pc.green("✔ finished")}  thread ${outcome.threadId}\n`);
      break;
    case "paused":
      process.stdout.write(
        outcome.pause?.reason === "input"
          ? `${pc.yellow("⏸ waiting for approval")}  thread ${outcome.threadId}\nApprove with: ${resume} --approve\nReject with:  ${resume} --reject "why"\n`
          : `${pc.yellow("⏸ paused")}  thread ${outcome.threadId}\nContinue with: ${resume}\n`,
      );
      break;
    case "interrupted":
      process.stdout.write(`${pc.yellow("■ interrupted")}  thread ${outcome.threadId} (checkpoint saved)\nContinue with: ${resume}\n`);
      break;
    case "failed":
      process.stderr.write(`${pc.red("✖ failed")}  thread ${outcome.threadId}\nRetry the failed step with: ${resume}\n`);
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
