import { commitWorkspace, RUN_COMMIT_KEY, type CommitOutcome } from "../git/commit.js";
import { isRepoWorkspace } from "../runs/repo-workspaces.js";
import { requireThread, withStore, type StoreOptions } from "../store/store.js";

/** A commit message's summary line: at most this many characters. */
const SUBJECT_CHARS = 72;

/** The message of a run's commit: the task's first line as the summary, the rest of the task below it, and the thread. */
export function runCommitMessage(task: string, threadId: string): string {
  const trimmed = task.trim() || `loopgraph run ${threadId}`;
  const [first = ""] = trimmed.split("\n", 1);
  const cut = first.length > SUBJECT_CHARS;
  const subject = cut ? `${first.slice(0, SUBJECT_CHARS - 1).trimEnd()}…` : first;
  // The task below the summary: all of it when its first line was cut, else what follows that line.
  const rest = (cut ? trimmed : trimmed.slice(first.length)).trim();
  const body = rest ? `${rest}\n\n` : "";
  return `${subject}\n\n${body}loopgraph thread: ${threadId}\n`;
}

/**
 * `run --commit`: the files the thread's tool steps changed (its workspace snapshots say which)
 * become one commit, on the branch rules of git/commit.ts; files nobody's step touched (the
 * user's own edits) are not taken. A thread that changed nothing commits nothing.
 */
export async function commitRunResult(threadId: string, options: StoreOptions): Promise<CommitOutcome> {
  return withStore(options, "read", async (store) => {
    const thread = await requireThread(store, threadId);
    if (isRepoWorkspace(thread.workspace))
      return { status: "refused", reason: "the run works on a clone on the workers, which pushes its own branch" };
    const paths = [...new Set((await store.snapshots.list(threadId)).flatMap((snapshot) => snapshot.paths ?? []))].sort();
    if (paths.length === 0) return { status: "nothing", branch: "" };
    return commitWorkspace({
      workspace: thread.workspace,
      threadId,
      message: runCommitMessage(thread.task, threadId),
      paths,
      key: RUN_COMMIT_KEY,
      env: options.env,
      skipMissing: true,
      secrets: store.secrets,
    });
  });
}
