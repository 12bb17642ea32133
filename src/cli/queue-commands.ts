import { storeOf, type GlobalOptions } from "./global-options.js";
/** `run --queue`, `worker` and `wait`: runs on a PostgreSQL store, executed by workers on any machine. */
import pc from "picocolors";
import { ExitCode } from "../errors.js";
import { EXIT_CODES } from "../engine/outcome.js";
import { enqueueRun } from "../engine/runner.js";
import { readRepoWorkspace, resultText } from "../engine/repo-workspace.js";
import { runWorker, waitForThread } from "../engine/worker.js";
import type { RunOutcome } from "../engine/run-types.js";
import { dbFlag, report, runOptionsOf, type RunCommandOptions } from "./run-commands.js";
import { printable } from "./terminal-text.js";

/** `run GRAPH --queue`: records the run, queued for a worker, and prints its thread id. */
export async function enqueueCommand(graph: string, options: RunCommandOptions): Promise<number> {
  const threadId = await enqueueRun(runOptionsOf(graph, options));
  if (options.json) process.stdout.write(`${JSON.stringify({ type: "queued", threadId })}\n`);
  else {
    process.stdout.write(`${threadId}\n`);
    process.stderr.write(
      pc.dim(
        `queued: a worker runs it (loopgraph worker${dbFlag(options.db)}); follow it with: loopgraph wait ${threadId}${dbFlag(options.db)}\n`,
      ),
    );
  }
  return ExitCode.Finished;
}

export interface WorkerCommandOptions extends GlobalOptions {
  concurrency: number;
  sandbox?: boolean;
}

/** `worker [--concurrency N]`: runs queued threads until SIGTERM or Ctrl-C (a second one quits at once, its runs then taken over by other workers). */
export async function workerCommand(options: WorkerCommandOptions): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => {
    if (stop.signal.aborted) process.exit(ExitCode.Interrupted);
    process.stderr.write(
      "worker: stopping: the runs in progress stop at their next checkpoint and go back to the queue (signal again to quit at once)\n",
    );
    stop.abort();
  };
  for (const name of ["SIGTERM", "SIGINT"] as const) process.on(name, onSignal);
  try {
    await runWorker({
      db: options.db,
      settings: options.settings,
      concurrency: options.concurrency,
      noSandbox: options.sandbox === false,
      stop: stop.signal,
      log: (line) => process.stderr.write(`worker ${process.pid}: ${printable(line)}\n`),
    });
    return ExitCode.Finished;
  } finally {
    for (const name of ["SIGTERM", "SIGINT"] as const) process.off(name, onSignal);
  }
}

/** `wait THREAD`: follows a run to its end; exits with the run's exit code. */
export async function waitCommand(threadId: string, options: GlobalOptions & { json?: boolean }): Promise<number> {
  const { record, repo } = await waitForThread(threadId, {
    ...storeOf(options),
    log: (line) => process.stderr.write(pc.dim(`wait: ${printable(line)}\n`)),
  });
  const status = record.status === "queued" || record.status === "running" ? "interrupted" : record.status;
  const exitCode = EXIT_CODES[status];
  if (options.json) {
    const result = repo?.result ? { result: { repo: repo.repo, ref: repo.ref, base: repo.commit, ...repo.result } } : {};
    process.stdout.write(
      `${JSON.stringify({ threadId, status, exitCode, ...(record.error ? { error: record.error } : {}), ...(record.pause ? { pause: record.pause } : {}), ...result })}\n`,
    );
  } else {
    if (repo?.result) process.stderr.write(`${printable(resultText(record.threadId, repo, repo.result, dbFlag(options.db)))}\n`);
    report(
      {
        threadId,
        status,
        error: record.error,
        pause: record.pause as RunOutcome["pause"],
        ended: status !== "interrupted" && status !== "paused",
      },
      options.db,
      false,
    );
  }
  return exitCode;
}

/**
 * `patch THREAD`: the change a run on a repository made, from its base commit, as a patch for
 * `git apply` (as it stands now while the run goes on). Byte for byte into a pipe or file; on a
 * terminal, its control characters are shown as text.
 */
export async function patchCommand(threadId: string, options: GlobalOptions): Promise<number> {
  const saved = await readRepoWorkspace(threadId, storeOf(options));
  const patch = saved.patch ?? Buffer.alloc(0);
  if (process.stdout.isTTY) process.stdout.write(printable(patch.toString("utf8")));
  else process.stdout.write(patch);
  const state = saved.result
    ? resultText(threadId, saved, saved.result, dbFlag(options.db))
    : patch.length === 0
      ? "no file changed so far"
      : "the run has not ended: this is the workspace as it stands";
  process.stderr.write(
    pc.dim(`${printable(`thread ${threadId} on ${saved.repo} ${saved.ref} (${saved.commit.slice(0, 12)}): ${state}`)}\n`),
  );
  return ExitCode.Finished;
}
