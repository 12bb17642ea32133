/**
 * The executions of threads running in this process. Quitting at once (a second Ctrl-C, or
 * leaving a chat while its loop stops) exits before they end: `interruptActiveRuns` first
 * records each of their threads as interrupted, so none is left marked running.
 */
export interface ActiveRun {
  readonly threadId: string;
  /** Records the thread as interrupted (the store write is synchronous). */
  interrupt(reason: string): void;
}

const active = new Set<ActiveRun>();

/** Tracks `run` until the returned function is called (when its execution ends). */
export function trackActiveRun(run: ActiveRun): () => void {
  active.add(run);
  return () => void active.delete(run);
}

/**
 * Records every thread running in this process as interrupted, with `reason`, and returns their
 * ids, oldest first: for a process about to exit without waiting for them.
 */
export function interruptActiveRuns(reason: string): string[] {
  const threads: string[] = [];
  for (const run of [...active]) {
    active.delete(run);
    try {
      run.interrupt(reason);
      threads.push(run.threadId);
    } catch {
      // The store may be unusable (locked, closed): the thread then reads as interrupted once this process is gone.
      threads.push(run.threadId);
    }
  }
  return threads;
}
