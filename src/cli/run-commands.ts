import { RunControl } from "@langchain/langgraph";
import pc from "picocolors";
import { ExitCode } from "../errors.js";
import type { EventSink } from "../engine/events.js";
import { resumeRun, runGraph, type RunOutcome } from "../engine/runner.js";
import { humanRenderer, jsonRenderer } from "./render.js";

export interface GlobalOptions {
  db?: string;
}

export interface RunCommandOptions extends GlobalOptions {
  task?: string;
  thread?: string;
  workspace?: string;
  model?: string;
  json?: boolean;
}

export interface ResumeCommandOptions extends GlobalOptions {
  model?: string;
  answer?: string;
  json?: boolean;
}

/**
 * Ctrl-C asks the run to drain: it stops at the next step boundary with its checkpoint saved.
 * A second Ctrl-C quits at once; the step in flight is lost and re-runs on resume.
 */
function drainOnInterrupt(json: boolean): { control: RunControl; dispose: () => void } {
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
      process.stdout.write(`${pc.yellow("⏸ paused")}  thread ${outcome.threadId}\nContinue with: ${resume}\n`);
      break;
    case "interrupted":
      process.stdout.write(`${pc.yellow("■ interrupted")}  thread ${outcome.threadId} (checkpoint saved)\nContinue with: ${resume}\n`);
      break;
    case "failed":
      process.stderr.write(`${pc.red("✖ failed")}  thread ${outcome.threadId}\nRetry the failed step with: ${resume}\n`);
      break;
  }
}

async function withRunUi(json: boolean, db: string | undefined, run: (sink: EventSink, control: RunControl) => Promise<RunOutcome>): Promise<number> {
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
      db: options.db,
      onEvent,
      control,
    }),
  );
}

export function resumeCommand(threadId: string, options: ResumeCommandOptions): Promise<number> {
  return withRunUi(Boolean(options.json), options.db, (onEvent, control) =>
    resumeRun({ threadId, model: options.model, answer: options.answer, db: options.db, onEvent, control }),
  );
}
