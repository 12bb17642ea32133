/**
 * The chaos suite's trials of a store the world fails (tests/chaos/run.ts runs them): another
 * program's write lock taken at a random moment of a step, a damaged store, a full one. Each run
 * must end as docs/exit-codes.md says (one line naming the store, its documented code, never a
 * stack trace), and the thread must then be resumed to the uninterrupted run's log.
 */
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { startCli, startRun, type RunningCli } from "../helpers/e2e.js";
import { cleanEnv, type CliResult } from "../helpers/cli.js";
import { delay, ended, inNewPlace, lastLine, markKill, THREAD, type Reference, type Rng, type TrialResult } from "./trials.js";

/** The busy timeout of the lock trials' processes: short, so that a lock held a moment longer stops the run. */
const BUSY_TIMEOUT_MS = 300;

/** What a run ended with, as one line for a report. */
const endOf = (result: CliResult) => `${result.code ?? result.signal}: ${lastLine(result.stderr) || lastLine(result.stdout)}`;

/** The `reason` of the run's `run_finished` event, if it printed one. */
function finishedReason(result: CliResult): string {
  const line = result.stdout.split("\n").findLast((text) => text.includes(`"type":"run_finished"`));
  return line ? ((JSON.parse(line) as { reason?: string }).reason ?? "") : "";
}

/**
 * Whether a command met the store as documented: it did its work (0); a run stopped at its last
 * checkpoint (130) with a reason that `stopped` matches; a command that cannot use the store (2)
 * printed one line that `refused` matches. Otherwise how it ended.
 */
function documentedEnd(result: CliResult, refused: RegExp, stopped?: RegExp): string | undefined {
  if (result.code === 0) return undefined;
  if (result.code === 130 && stopped?.test(finishedReason(result))) return undefined;
  if (result.code === 2 && result.stderr.trim().split("\n").length === 1 && refused.test(result.stderr)) return undefined;
  return `ended ${endOf(result)}`;
}

/** Holds a write lock on `db` (BEGIN IMMEDIATE, as another program would) for `ms`. */
async function holdLock(db: string, ms: number): Promise<void> {
  const holder = new Database(db, { timeout: 10_000 });
  try {
    holder.exec("BEGIN IMMEDIATE");
    await delay(ms);
    holder.exec("ROLLBACK");
  } finally {
    holder.close();
  }
}

/**
 * When a lock trial takes the lock: at a random moment of the reference run's time (even trials),
 * or at the end of a random shell command (odd ones: a moment of the 120 ms after its `tool_call`
 * event, around the 50 ms the command runs), when the shell tool writes the command's process group.
 */
async function lockMoment(cli: RunningCli, index: number, rng: Rng, reference: Reference): Promise<void> {
  await cli.waitForEvent("run_started");
  if (index % 2 === 0) return delay(rng() * reference.ms);
  let after = -1;
  const nth = Math.floor(rng() * reference.steps);
  for (let i = 0; i <= nth; i++) after = await cli.waitForEvent("tool_call", undefined, { after });
  return delay(rng() * 120);
}

/**
 * (e) A run whose store another program locks at a random moment of a step, for 150 to 2000 ms
 * (the busy timeout is 300 ms): the run finishes, or stops at its last checkpoint (130) with the
 * documented line; then it is resumed to its end.
 */
export function lockTrial(name: string, index: number, rng: Rng, reference: Reference): Promise<TrialResult> {
  return inNewPlace("lock", name, rng, reference, async ({ ws, spec, kills, printed }) => {
    const cli = printed.of(startRun(ws, spec, { standalone: true, env: cleanEnv({ LOOPGRAPH_BUSY_TIMEOUT_MS: String(BUSY_TIMEOUT_MS) }) }));
    try {
      await lockMoment(cli, index, rng, reference);
      await holdLock(ws.db, 150 + rng() * 1850);
    } catch {
      // The run ended before the moment came: nothing was locked.
    }
    const result = await ended(cli);
    if (result.code !== 0) kills.push(await markKill(ws, THREAD));
    const wrongEnd = documentedEnd(
      result,
      /is locked by another program/,
      /is locked by another program \(waited 0\.3 s\): the run stopped at its last checkpoint/,
    );
    return { wrongEnd: wrongEnd && `run: ${wrongEnd}` };
  });
}

/**
 * Garbles one page of the SQLite file `db` but its first (the header and the schema stay valid, so
 * it opens). False when it has no page beyond the first (a run killed before its store was
 * written has an empty file, or a header alone): there is nothing to damage.
 */
function garblePage(db: string, rng: Rng): boolean {
  const bytes = readFileSync(db);
  // The header is 100 bytes; the page size is at offset 16.
  if (bytes.length < 100) return false;
  const pageSize = bytes.readUInt16BE(16) === 1 ? 65_536 : bytes.readUInt16BE(16);
  if (pageSize < 512 || bytes.length < 2 * pageSize) return false;
  const page = 1 + Math.floor(rng() * (bytes.length / pageSize - 1));
  for (let i = page * pageSize; i < (page + 1) * pageSize; i++) bytes[i] = (i * 7) & 255;
  writeFileSync(db, bytes);
  return true;
}

/** Writes what the WAL file of `db` holds into it (as the last writer's close does), so that the file alone is the store. */
function checkpointed(db: string): void {
  const store = new Database(db, { timeout: 10_000 });
  store.pragma("wal_checkpoint(TRUNCATE)");
  store.close();
  for (const suffix of ["-wal", "-shm"]) rmSync(`${db}${suffix}`, { force: true });
}

/** The commands a damaged store is given: readers, and a resume. */
const ON_DAMAGED = [
  ["inspect", THREAD],
  ["status", THREAD],
  ["resume", THREAD, "--json"],
];

/**
 * (f) A run killed at a random moment; a page of its store (not the first) garbled: `inspect`,
 * `status` and `resume` each end 0 (what they read is intact) or 2 with the "is damaged" line (a
 * resume may also stop at its last checkpoint); then the store is restored from its copy made
 * before, and the thread resumed to its end.
 */
export function damagedTrial(name: string, rng: Rng, reference: Reference): Promise<TrialResult> {
  return inNewPlace("damaged", name, rng, reference, async ({ ws, spec, kills, printed }) => {
    const cli = printed.of(startRun(ws, spec, { standalone: true }));
    await delay(rng() * reference.ms);
    await cli.kill("SIGKILL");
    kills.push(await markKill(ws, THREAD));
    if (!existsSync(ws.db)) return {};
    checkpointed(ws.db);
    copyFileSync(ws.db, `${ws.db}.backup`);
    if (!garblePage(ws.db, rng)) return {};
    let wrongEnd: string | undefined;
    for (const args of ON_DAMAGED) {
      const result = await ended(printed.of(startCli([...args, "--db", ws.db], { standalone: true })));
      const problem = documentedEnd(result, /is damaged \(malformed database\): restore it from a backup|nothing to resume|no thread/);
      wrongEnd ??= problem && `${args[0]}: ${problem}`;
    }
    // What a resume on the damaged store ran is lost with it: a step it ran again is in flight.
    for (const suffix of ["-wal", "-shm"]) rmSync(`${ws.db}${suffix}`, { force: true });
    copyFileSync(`${ws.db}.backup`, ws.db);
    kills.push(await markKill(ws, THREAD));
    return { wrongEnd };
  });
}

/**
 * (g) A run whose store's disk fills up: the process may write no file beyond a random size of 100
 * KB to 1 MB (a file size limit, RLIMIT_FSIZE, set with `prlimit`: a write beyond it fails as on a
 * full disk, without root). The run finishes, stops at its last checkpoint (130), or (the store
 * not even made) is refused (2), with one line naming the store; then, with room, it is resumed
 * (or run again) to its end.
 */
export function fullTrial(name: string, rng: Rng, reference: Reference): Promise<TrialResult> {
  return inNewPlace("full", name, rng, reference, async ({ ws, spec, kills, printed }) => {
    const limit = Math.round(100_000 + rng() * 900_000);
    const result = await ended(printed.of(startRun(ws, spec, { standalone: true, fileSizeLimit: limit })));
    if (result.code !== 0) kills.push(await markKill(ws, THREAD));
    const written = /cannot be written \(.+\)/;
    const problem = documentedEnd(
      result,
      new RegExp(`${written.source}: make room on its disk`),
      new RegExp(`${written.source}: the run stopped at its last checkpoint`),
    );
    return { wrongEnd: problem && `run (at most ${limit} bytes a file): ${problem}` };
  });
}
