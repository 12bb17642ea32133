import { storeOf, type GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { NOTHING_TO_STOP, sendCommand } from "../engine/commands.js";
import { statusCommand } from "./status-command.js";
import { dbFlag } from "./run-commands.js";
import type { DeletedThread } from "../engine/thread-admin.js";

export async function sendCommandCli(threadId: string, words: string[], options: GlobalOptions): Promise<number> {
  const text = words.join(" ");
  const sent = await sendCommand(threadId, text, storeOf(options));
  const db = dbFlag(options.db);
  if (sent.kind === "message") {
    process.stdout.write(`sent to the Mediator of thread ${sent.threadId} (#${sent.id})\n`);
    process.stdout.write(pc.dim(`a chat open on it answers now; otherwise: loopgraph chat --thread ${sent.threadId}${db}\n`));
    return 0;
  }
  if (sent.understood) process.stdout.write(pc.dim(`understood ${JSON.stringify(text.trim())} as: ${JSON.stringify(sent.command)}\n`));
  if (sent.command.command === "status") return statusCommand(threadId, options);
  if (sent.nothingToStop) {
    process.stdout.write(`${NOTHING_TO_STOP}\n`);
    return 0;
  }
  process.stdout.write(`queued for thread ${sent.threadId}: ${JSON.stringify(sent.command)} (#${sent.id})\n`);
  if (sent.chat !== undefined && sent.threadStatus !== "running") {
    process.stdout.write(
      pc.dim(`a chat open on thread ${sent.chat} takes it up now; otherwise: loopgraph chat --thread ${sent.chat}${db}\n`),
    );
  } else if (sent.threadStatus !== "running") {
    process.stdout.write(
      pc.dim(`the thread is ${sent.threadStatus}: it takes the command when it continues (loopgraph resume ${sent.threadId}${db})\n`),
    );
  }
  return 0;
}

const STATUSES = ["running", "queued", "finished", "paused", "interrupted", "failed", "limited"];

/** `loopgraph threads list`: the store's threads, newest first, filtered. */
export async function threadsListCommand(
  options: GlobalOptions & { status?: string; graph?: string; limit?: number; json?: boolean },
): Promise<number> {
  if (options.status !== undefined && !STATUSES.includes(options.status))
    throw new ConfigError(`--status ${options.status}: use one of ${STATUSES.join(", ")}`);
  const { filteredThreads } = await import("../engine/thread-admin.js");
  const threads = await filteredThreads(options, storeOf(options));
  if (options.json) return (process.stdout.write(`${JSON.stringify(threads, null, 2)}\n`), 0);
  const { threadTable } = await import("./inspect-command.js");
  process.stdout.write(threads.length === 0 ? "no threads match\n" : `${threadTable(threads)}\n`);
  return 0;
}

/** `loopgraph threads delete <thread...>`: each with its loop thread and its artifacts; never one a live process runs. */
export async function threadsDeleteCommand(threadIds: string[], options: GlobalOptions & { json?: boolean }): Promise<number> {
  const { deleteThreads } = await import("../engine/thread-admin.js");
  report(await deleteThreads(threadIds, storeOf(options)), options.json);
  return 0;
}

/** `loopgraph threads prune --older-than AGE`: deletes the threads not changed for that long (none a live process runs). */
export async function threadsPruneCommand(
  options: GlobalOptions & { olderThan?: string; eval?: string; status?: string; graph?: string; dryRun?: boolean; json?: boolean },
): Promise<number> {
  if ((options.eval === undefined) === (options.olderThan === undefined))
    throw new ConfigError("threads prune takes --older-than AGE (threads not changed for that long) or --eval ID (an eval's threads)");
  if (options.eval !== undefined) return pruneEval(options.eval, options);
  const { deleteThreads, parseAge, threadsToPrune } = await import("../engine/thread-admin.js");
  const age = parseAge(options.olderThan!);
  if (age === undefined) throw new ConfigError(`--older-than ${options.olderThan}: give an age such as 30d, 12h, 2w (s, m, h, d, w)`);
  if (options.status !== undefined && !STATUSES.includes(options.status))
    throw new ConfigError(`--status ${options.status}: use one of ${STATUSES.join(", ")}`);
  const old = await threadsToPrune(age, options, storeOf(options));
  if (options.dryRun) {
    if (options.json) return (process.stdout.write(`${JSON.stringify(old.map((thread) => thread.threadId))}\n`), 0);
    process.stdout.write(
      old.length === 0
        ? "nothing to prune\n"
        : old.map((thread) => `would delete ${thread.threadId}  (${thread.status}, updated ${thread.updatedAt})\n`).join(""),
    );
    return 0;
  }
  report(
    old.length === 0
      ? []
      : await deleteThreads(
          old.map((thread) => thread.threadId),
          storeOf(options),
        ),
    options.json,
  );
  return 0;
}

/** `threads prune --eval ID`: the eval's trials' threads and workspaces, then the eval. */
async function pruneEval(evalId: string, options: GlobalOptions & { dryRun?: boolean; json?: boolean }): Promise<number> {
  const { deleteEval } = await import("../engine/thread-admin.js");
  const deleted = await deleteEval(evalId, storeOf(options), options.dryRun);
  if (options.json) return (process.stdout.write(`${JSON.stringify(deleted)}\n`), 0);
  const verb = options.dryRun ? "would delete" : "deleted";
  for (const thread of deleted.threads) process.stdout.write(`${verb} ${thread.threadId}\n`);
  for (const workspace of deleted.workspaces) process.stdout.write(pc.dim(`${verb} its workspace ${workspace}\n`));
  process.stdout.write(`${verb} eval ${evalId} (${deleted.threads.length} thread${deleted.threads.length === 1 ? "" : "s"})\n`);
  return 0;
}

function report(deleted: readonly DeletedThread[], json: boolean | undefined): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(deleted)}\n`);
    return;
  }
  if (deleted.length === 0) process.stdout.write("nothing to delete\n");
  for (const thread of deleted) {
    const also = [
      thread.artifacts && `its artifacts, ${thread.artifacts}`,
      thread.branches && `its branches, ${thread.branches.join(", ")}`,
    ];
    const shown = also.filter(Boolean).join("; ");
    process.stdout.write(`deleted ${thread.threadId}${shown ? pc.dim(`  (and ${shown})`) : ""}\n`);
  }
}
