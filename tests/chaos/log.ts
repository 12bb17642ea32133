/**
 * The chaos suite's verdict on one thread: its workspace's log.txt against the uninterrupted run's,
 * and which steps' results the store held at each kill.
 *
 * Every shell step of tests/fixtures/chaos/*.script.yaml appends `<id>>` before its work and
 * `<id><` after it, and prints `STORED-<ID>` (a text found in the store only once its result is
 * stored). An attempt of a step is its `<id>>` line and the lines of that step up to its next
 * attempt. For every attempt of a step after its first (a re-run):
 *
 * - `inflight_rerun`: a kill came between the two attempts' starts and, at every such kill, the
 *   store held no result of the step: the step was in flight when its process died, so resume ran
 *   it again, as it must. Its lines may then appear twice, or the first attempt only half.
 * - `doubled`: the store held the step's result at one of those kills (a stored step ran again),
 *   or no kill came between the two attempts (something ran the step twice by itself).
 *
 * `identical`: the log with every step's earlier attempts removed equals the uninterrupted run's
 * log, line for line.
 */
import { existsSync, readFileSync } from "node:fs";
import Database from "better-sqlite3";

/** What the suite noted at a kill: how long the log was and which steps the store held. */
export interface KillMark {
  logLines: number;
  stored: ReadonlySet<string>;
  /** The thread's checkpoints in the store (0: killed before its first). */
  checkpoints: number;
}

export interface LogVerdict {
  identical: boolean;
  inflightReruns: number;
  doubled: number;
  /** One line per re-run and the first difference, for the report. */
  notes: string[];
}

/** The lines of a workspace's log.txt (none when it does not exist). */
export function logLines(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "");
}

const STEP_LINE = /^(.+)([<>])$/;

/**
 * The steps whose results `db` holds for `thread`, by their `STORED-<ID>` texts in the checkpoint
 * tables (a step's writes count from the moment they are stored, before the checkpoint that
 * follows them: resume applies them without running the step again).
 */
export function storedSteps(db: string, thread: string, afterRollback = false): Set<string> {
  const found = new Set<string>();
  if (!existsSync(db)) return found;
  let store: Database.Database | undefined;
  try {
    store = new Database(db, { readonly: true, fileMustExist: true, timeout: 10_000 });
    const rows = [
      ...store.prepare(`SELECT value AS data FROM loopgraph_checkpoint_writes WHERE thread_id = ?`).all(thread),
      ...store.prepare(`SELECT data FROM loopgraph_checkpoint_blobs WHERE thread_id = ? AND data IS NOT NULL`).all(thread),
    ] as Array<{ data: Buffer | string }>;
    for (const { data } of rows) {
      const text = Buffer.isBuffer(data) ? data.toString("latin1") : String(data);
      for (const match of text.matchAll(/STORED-([A-Z0-9]+-[A-Z])/g)) found.add(match[1]!);
    }
  } catch (error) {
    // Killed as the new store switched to WAL: its journal is rolled back by a writable connection, as loopgraph's readers do.
    if ((error as { code?: string }).code === "SQLITE_READONLY_ROLLBACK" && !afterRollback) {
      store?.close();
      store = undefined;
      const writer = new Database(db, { fileMustExist: true, timeout: 10_000 });
      try {
        writer.prepare("SELECT count(*) FROM sqlite_master").get();
      } finally {
        writer.close();
      }
      return storedSteps(db, thread, true);
    }
    // Killed before the store had its tables: nothing is stored.
    if (!/no such table/.test(String(error))) throw error;
  } finally {
    store?.close();
  }
  return found;
}

/** How many checkpoints (of any namespace) `db` holds for `thread`. */
export function checkpointCount(db: string, thread: string): number {
  if (!existsSync(db)) return 0;
  let store: Database.Database | undefined;
  try {
    store = new Database(db, { readonly: true, fileMustExist: true, timeout: 10_000 });
    return (store.prepare(`SELECT count(*) AS n FROM loopgraph_checkpoints WHERE thread_id = ?`).get(thread) as { n: number }).n;
  } catch (error) {
    if (/no such table|not a database/.test(String(error))) return 0;
    throw error;
  } finally {
    store?.close();
  }
}

/** The status on `thread`'s record in `db` (as stored: "running" also for a killed owner), or undefined when it has none. */
export function recordStatus(db: string, thread: string): string | undefined {
  if (!existsSync(db)) return undefined;
  let store: Database.Database | undefined;
  try {
    store = new Database(db, { readonly: true, fileMustExist: true, timeout: 10_000 });
    const row = store.prepare(`SELECT status FROM loopgraph_threads WHERE thread_id = ?`).get(thread) as { status: string } | undefined;
    return row?.status;
  } catch (error) {
    if (/no such table|not a database/.test(String(error))) return undefined;
    throw error;
  } finally {
    store?.close();
  }
}

/** Judges the final log `lines` of a thread against `reference`, given what was noted at each kill. */
export function judgeLog(lines: readonly string[], reference: readonly string[], kills: readonly KillMark[]): LogVerdict {
  const notes: string[] = [];
  const starts = new Map<string, number[]>();
  lines.forEach((line, index) => {
    const match = STEP_LINE.exec(line);
    if (match?.[2] === ">") starts.set(match[1]!, [...(starts.get(match[1]!) ?? []), index]);
  });
  let inflightReruns = 0;
  let doubled = 0;
  for (const [step, indices] of starts) {
    for (let j = 1; j < indices.length; j++) {
      const previous = indices[j - 1]!;
      const current = indices[j]!;
      const between = kills.filter((kill) => kill.logLines > previous && kill.logLines <= current);
      if (between.length > 0 && between.every((kill) => !kill.stored.has(step))) {
        inflightReruns++;
        notes.push(`in-flight re-run of ${step} (lines ${previous + 1} and ${current + 1})`);
      } else {
        doubled++;
        notes.push(
          between.length === 0
            ? `doubled ${step}: ran again at line ${current + 1} with no kill since line ${previous + 1}`
            : `doubled ${step}: its result was stored when the process was killed, and it ran again at line ${current + 1}`,
        );
      }
    }
  }
  // Keep each line of a step only from the step's last attempt.
  const normalised = lines.filter((line, index) => {
    const match = STEP_LINE.exec(line);
    const indices = match ? starts.get(match[1]!) : undefined;
    if (!indices) return true;
    return index >= indices.at(-1)!;
  });
  const identical = normalised.length === reference.length && normalised.every((line, index) => line === reference[index]);
  if (!identical) {
    const at = normalised.findIndex((line, index) => line !== reference[index]);
    const index = at === -1 ? Math.min(normalised.length, reference.length) : at;
    notes.push(
      `log differs at line ${index + 1}: ${JSON.stringify(normalised[index] ?? "(end)")} instead of ${JSON.stringify(reference[index] ?? "(end)")} (log: ${lines.join(" ")})`,
    );
  }
  return { identical, inflightReruns, doubled, notes };
}
