/**
 * The executions of threads running in this process. Quitting at once (a second Ctrl-C, or
 * leaving a chat while its loop stops) exits before they end: `interruptActiveRuns` first
 * records each of their threads as interrupted, so none is left marked running.
 */
export interface ActiveRun {
  readonly threadId: string;
  /** Records the thread as interrupted. */
  interrupt(reason: string): Promise<void>;
}

const active = new Set<ActiveRun>();

/** Tracks `run` until the returned function is called (when its execution ends). */
export function trackActiveRun(run: ActiveRun): () => void {
  active.add(run);
  return () => void active.delete(run);
}

/** How long the records of interrupted threads may take to write before the process exits anyway. */
const INTERRUPT_WRITE_MS = 3_000;

/**
 * Records every thread running in this process as interrupted, with `reason`, and returns their
 * ids, oldest first: for a process about to exit without waiting for them. A store that does not
 * answer in time (locked, unreachable) is not waited for: the threads then read as interrupted
 * once this process is gone.
 */
export async function interruptActiveRuns(reason: string): Promise<string[]> {
  const runs = [...active];
  active.clear();
  const writes = Promise.allSettled(runs.map((run) => run.interrupt(reason)));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([writes, new Promise((resolve) => (timer = setTimeout(resolve, INTERRUPT_WRITE_MS)))]);
  clearTimeout(timer);
  return runs.map((run) => run.threadId);
}
