/**
 * The chaos suite's trials (tests/chaos/run.ts runs them): real `loopgraph` processes of the built
 * CLI, started through the end-to-end harness (tests/helpers/e2e.ts), killed with SIGKILL and
 * resumed, racing, or sharing one store. Each trial has a workspace of its own, removed at its end.
 */
import { join, resolve } from "node:path";
import { historyOf, runArgs, startCli, startRun, type RunningCli, type RunPlace, type RunSpec } from "../helpers/e2e.js";
import { runCli, type CliResult } from "../helpers/cli.js";
import { createWorkspace } from "../helpers/workspace.js";
import { checkpointCount, judgeLog, logLines, recordStatus, storedSteps, type KillMark, type LogVerdict } from "./log.js";

const FIXTURES = resolve(import.meta.dirname, "../fixtures/chaos");
/** Two rounds of coder-review, five shell steps (see the file). */
export const STEPS_SCRIPT = join(FIXTURES, "steps.script.yaml");
/** One round, two shell steps: the concurrent runs of part (c). */
export const SHORT_SCRIPT = join(FIXTURES, "short.script.yaml");
/** A process the suite did not kill that runs longer than this is stuck. */
const PROCESS_TIMEOUT_MS = 90_000;
/** Resumes after which a thread that has not finished is stuck (it loops). */
const MAX_RESUMES = 8;
/** Output that means a store lock reached the user, or an unexpected error. */
export const BUSY_PATTERN = /database is locked|SQLITE_BUSY|is locked by another program|internal error/i;

/** Output that means a stack trace reached the user: a frame, SQLite's error class, an unhandled error, an internal error. */
export const STACK_PATTERN = /^\s+at \S|SqliteError|Unhandled 'error' event|internal error:/m;

/** Everything the processes of one trial printed: searched for a stack trace once they ended. */
export class Printed {
  private readonly texts: string[] = [];

  /** `cli`, its output noted once it ends (killed or not). */
  of(cli: RunningCli): RunningCli {
    void cli.done.then((result) => this.texts.push(`${result.stdout}\n${result.stderr}`));
    return cli;
  }

  /** The first line of a stack trace any of them printed, if one did. */
  stackTrace(): string | undefined {
    for (const text of this.texts) {
      const found = STACK_PATTERN.exec(text);
      if (found)
        return text
          .slice(text.lastIndexOf("\n", found.index) + 1)
          .split("\n")[0]!
          .trim();
    }
    return undefined;
  }
}

/** A deterministic PRNG (mulberry32). */
export type Rng = () => number;

export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The PRNG of one trial: its own stream from the suite's seed and the trial's name, whatever order trials run in. */
export function rngFor(seed: number, label: string): Rng {
  let hash = 2166136261;
  for (const char of label) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
  return mulberry32((seed ^ hash) >>> 0);
}

/** What every trial shares: the uninterrupted run it is compared with. */
export interface Reference {
  /** The scripted model's file the trials run. */
  script: string;
  /** How many shell steps it has. */
  steps: number;
  lines: string[];
  /** Its wall time: kills land at random within it. */
  ms: number;
}

export interface TrialResult {
  name: string;
  kills: number;
  /** Kills that landed before the thread's first checkpoint. */
  beforeFirstCheckpoint: number;
  verdict: LogVerdict;
  stuck?: string;
  /** Races only: both resumes ran the thread, or it was doubled, or its history split. */
  doubleOwner?: string;
  /** The first line of a stack trace (or internal error) a process of the trial printed. */
  stackTrace?: string;
  /** A process that ended otherwise than documented (store trials: a code or a line the docs do not give). */
  wrongEnd?: string;
}

export const THREAD = "chaos";
const TASK = "append the lines of the script to log.txt";

const specOf = (thread: string, script: string): RunSpec => ({ graph: "coder-review", thread, script, task: TASK, approval: "auto" });

const newPlace = (label: string) => createWorkspace({ git: true, files: { "notes.txt": "start\n" }, prefix: `loopgraph-chaos-${label}-` });

export const delay = (ms: number) => new Promise<void>((resolveDelay) => setTimeout(resolveDelay, ms));

export const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

/** Waits for `cli` to end; one that runs beyond the timeout is killed and reported as hung. */
export async function ended(cli: RunningCli): Promise<CliResult & { hung?: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolveHung) => (timer = setTimeout(() => resolveHung("hung"), PROCESS_TIMEOUT_MS)));
  const first = await Promise.race([cli.done, hung]);
  clearTimeout(timer);
  if (first !== "hung") return first;
  return { ...(await cli.kill("SIGKILL")), hung: true };
}

/** Kills `cli` with SIGKILL after `ms`, unless it ends first; says whether the kill landed. */
async function killAfter(cli: RunningCli, ms: number): Promise<{ killed: boolean; result: CliResult & { hung?: boolean } }> {
  let timer: NodeJS.Timeout | undefined;
  const time = new Promise<"time">((resolveTime) => (timer = setTimeout(() => resolveTime("time"), ms)));
  const first = await Promise.race([cli.done.then(() => "ended" as const), time]);
  clearTimeout(timer);
  if (first === "ended") return { killed: false, result: await cli.done };
  const result = await cli.kill("SIGKILL");
  return { killed: result.signal === "SIGKILL", result };
}

/**
 * What the suite notes after a kill: the log's length and the steps the store holds. A killed
 * process's sandboxed shell dies with it (bubblewrap's --die-with-parent), a moment later: the
 * log is read once it stopped growing.
 */
export async function markKill(ws: RunPlace, thread: string): Promise<KillMark> {
  const log = join(ws.dir, "log.txt");
  let length = logLines(log).length;
  for (let still = 0; still < 3; ) {
    await delay(30);
    const now = logLines(log).length;
    still = now === length ? still + 1 : 0;
    length = now;
  }
  return { logLines: length, stored: storedSteps(ws.db, thread), checkpoints: checkpointCount(ws.db, thread) };
}

/** The end of a process the suite did not kill, as a stuck reason unless it finished (0). */
function stuckReason(what: string, result: CliResult & { hung?: boolean }): string | undefined {
  if (result.hung) return `${what} hung (no end within ${PROCESS_TIMEOUT_MS / 1000} s)`;
  if (result.code === 0) return undefined;
  return `${what} ended with ${result.code ?? result.signal}: ${lastLine(result.stderr) || lastLine(result.stdout)}`;
}

/**
 * Waits for the moment `until` waits for (it returns the delay to kill after), then kills the run
 * with SIGKILL: a kill is marked in `kills`; a run that ended by itself first, or never reached
 * the moment, is stuck (the reason is returned).
 */
async function killOnce(ws: RunPlace, cli: RunningCli, kills: KillMark[], until: () => Promise<number>): Promise<string | undefined> {
  try {
    const { killed, result } = await killAfter(cli, await until());
    if (killed) kills.push(await markKill(ws, THREAD));
    else return stuckReason("run", result);
  } catch (error) {
    cli.child.kill("SIGKILL");
    await cli.done;
    return `run: ${(error as Error).message.split("\n")[0]}`;
  }
  return undefined;
}

/**
 * Resumes `thread` until it finishes, as a user would: `resume` while it has a record (`run`
 * again when a kill came before the record was written), each time killed again with
 * probability `reKill` (at most `maxReKills` times, at a random moment within `withinMs`).
 */
async function driveToEnd(
  ws: RunPlace,
  spec: RunSpec,
  kills: KillMark[],
  rng: Rng,
  options: { reKill: number; maxReKills: number; withinMs: number },
  printed: Printed,
): Promise<string | undefined> {
  let reKills = 0;
  for (let attempt = 0; attempt < MAX_RESUMES; attempt++) {
    const status = recordStatus(ws.db, spec.thread);
    if (status === "finished") return undefined;
    const what = status === undefined ? "run (again: no record)" : "resume";
    const cli = printed.of(
      status === undefined
        ? startRun(ws, spec, { standalone: true })
        : startCli(["resume", spec.thread, "--db", ws.db, "--json"], { standalone: true }),
    );
    if (reKills < options.maxReKills && rng() < options.reKill) {
      reKills++;
      const { killed, result } = await killAfter(cli, rng() * options.withinMs);
      if (killed) {
        kills.push(await markKill(ws, spec.thread));
        continue;
      }
      const stuck = stuckReason(what, result);
      if (stuck) return stuck;
    } else {
      const stuck = stuckReason(what, await ended(cli));
      if (stuck) return stuck;
    }
  }
  return recordStatus(ws.db, spec.thread) === "finished"
    ? undefined
    : `not finished after ${MAX_RESUMES} resumes (status ${recordStatus(ws.db, spec.thread)})`;
}

/** A trial's result: its kills, the verdict on its log against the reference, the first stack trace its processes printed. */
function trialResult(
  name: string,
  ws: RunPlace,
  reference: Reference,
  kills: KillMark[],
  printed: Printed,
  more: Partial<TrialResult> = {},
): TrialResult {
  const verdict = judgeLog(logLines(join(ws.dir, "log.txt")), reference.lines, kills);
  const beforeFirstCheckpoint = kills.filter((kill) => kill.checkpoints === 0).length;
  return { name, kills: kills.length, beforeFirstCheckpoint, verdict, stackTrace: printed.stackTrace(), ...more };
}

/** What a trial works with: its place (workspace and store), the run's spec, the kills it noted, its processes' output. */
export interface Trial {
  ws: RunPlace;
  spec: RunSpec;
  kills: KillMark[];
  printed: Printed;
}

/** How a trial's thread is resumed to its end (see `driveToEnd`): by default, resumes that are not killed. */
const NO_RE_KILLS = { reKill: 0, maxReKills: 0, withinMs: 0 };

/**
 * Runs `body` in a new place of its own (`label` names its folder, removed at the end), then, unless
 * it found the run stuck, resumes the thread to its end, and judges the log against the reference.
 */
export async function inNewPlace(
  label: string,
  name: string,
  rng: Rng,
  reference: Reference,
  body: (trial: Trial) => Promise<Partial<TrialResult>>,
  resumes: Parameters<typeof driveToEnd>[4] = NO_RE_KILLS,
): Promise<TrialResult> {
  const ws = newPlace(label);
  try {
    const trial: Trial = { ws, spec: specOf(THREAD, reference.script), kills: [], printed: new Printed() };
    const more = await body(trial);
    const stuck = more.stuck ?? (await driveToEnd(ws, trial.spec, trial.kills, rng, resumes, trial.printed));
    return trialResult(name, ws, reference, trial.kills, trial.printed, { ...more, stuck });
  } finally {
    ws.remove();
  }
}

/** The uninterrupted run every trial is compared with. */
export async function referenceRun(script: string): Promise<Reference> {
  const ws = newPlace("reference");
  try {
    const started = Date.now();
    const cli = startRun(ws, specOf(THREAD, script), { standalone: true });
    const result = await ended(cli);
    const ms = Date.now() - started;
    const stuck = stuckReason("the reference run", result);
    if (stuck) throw new Error(`${stuck}\n${result.stderr}`);
    const lines = logLines(join(ws.dir, "log.txt"));
    return { script, steps: lines.filter((line) => line.endsWith(">")).length, lines, ms };
  } finally {
    ws.remove();
  }
}

/**
 * (a) A run killed at a random moment of its length, then resumed (and killed again during a
 * resume with probability 0.35, at most twice) until it finishes.
 */
export function killTrial(name: string, rng: Rng, reference: Reference): Promise<TrialResult> {
  const resumes = { reKill: 0.35, maxReKills: 2, withinMs: reference.ms };
  return inNewPlace(
    "kill",
    name,
    rng,
    reference,
    async ({ ws, spec, kills, printed }) => {
      const { killed, result } = await killAfter(printed.of(startRun(ws, spec, { standalone: true })), rng() * reference.ms);
      if (!killed) return { stuck: stuckReason("run", result) };
      kills.push(await markKill(ws, THREAD));
      return {};
    },
    resumes,
  );
}

/**
 * (d) A run killed before its first checkpoint: right at its `run_started` event (even trials), or
 * at a random moment of the 100 ms after it (odd ones); then resumed to its end.
 */
export function earlyKillTrial(name: string, index: number, rng: Rng, reference: Reference): Promise<TrialResult> {
  return inNewPlace("early", name, rng, reference, async ({ ws, spec, kills, printed }) => {
    const cli = printed.of(startRun(ws, spec, { standalone: true }));
    const stuck = await killOnce(ws, cli, kills, async () => {
      await cli.waitForEvent("run_started", undefined, { timeoutMs: PROCESS_TIMEOUT_MS });
      return index % 2 === 0 ? 0 : rng() * 100;
    });
    return { stuck };
  });
}

const ranSteps = (cli: RunningCli) => cli.lines.some((line) => line.startsWith("{") && line.includes(`"type":"node_started"`));

/**
 * (b) A run killed during one of its shell steps but the last (at a random moment of the 150 ms
 * after its `tool_call` event), then two `resume`s of it started at the same moment. A double
 * owner: both resumes ran nodes, or a step ran again although stored, or the thread's history
 * split into two branches.
 */
export async function raceTrial(name: string, rng: Rng, reference: Reference): Promise<TrialResult> {
  const ws = newPlace("race");
  try {
    const spec = specOf(THREAD, reference.script);
    const kills: KillMark[] = [];
    const printed = new Printed();
    const cli = printed.of(startRun(ws, spec, { standalone: true }));
    const nth = Math.floor(rng() * Math.max(1, reference.steps - 1));
    let stuck = await killOnce(ws, cli, kills, async () => {
      let after = -1;
      for (let i = 0; i <= nth; i++) after = await cli.waitForEvent("tool_call", undefined, { after, timeoutMs: PROCESS_TIMEOUT_MS });
      return rng() * 150;
    });
    let doubleOwner: string | undefined;
    if (!stuck && kills.length > 0) {
      const args = ["resume", THREAD, "--db", ws.db, "--json"];
      const racers = [printed.of(startCli(args, { standalone: true })), printed.of(startCli(args, { standalone: true }))];
      const results = await Promise.all(racers.map(ended));
      const ran = racers.map(ranSteps);
      if (ran[0] && ran[1])
        doubleOwner = `both resumes ran nodes (exit codes ${results.map((result) => result.code ?? result.signal).join(", ")})`;
      if (results.every((result) => result.code !== 0)) {
        stuck = `neither resume finished: ${results.map((result) => stuckReason("resume", result)).join("; ")}`;
      }
      stuck ??= await driveToEnd(ws, spec, kills, rng, { reKill: 0, maxReKills: 0, withinMs: 0 }, printed);
    }
    const { verdict } = trialResult(name, ws, reference, kills, printed);
    if (verdict.doubled > 0) doubleOwner ??= `a stored step ran again (${verdict.notes.find((note) => note.startsWith("doubled"))})`;
    if (recordStatus(ws.db, THREAD) !== undefined) {
      const branches = (await historyOf(ws.db, THREAD)).branches.length;
      if (branches > 1) doubleOwner ??= `the history split into ${branches} branches`;
    }
    return trialResult(name, ws, reference, kills, printed, { stuck, doubleOwner });
  } finally {
    ws.remove();
  }
}

export interface ConcurrencyResult {
  commands: number;
  busyErrors: string[];
  /** Commands whose output had a stack trace (STACK_PATTERN), with its first line. */
  stackTraces: string[];
  /** Runs that did not finish (exit code other than 0), for the report. */
  otherEnds: string[];
}

type Role = "run" | "status" | "send" | "stop" | "inspect" | "list";

/** The roles of `processes` concurrent workers: runs first, then the commands that read and write beside them. */
export function rolesFor(processes: number): Role[] {
  const all: Role[] = ["run", "status", "send", "inspect", "run", "stop", "list", "run"];
  return Array.from({ length: processes }, (_role, i) => all[i % all.length]!);
}

/**
 * (c) `processes` workers on one store for `durationMs`: runs of coder-review (each in a workspace
 * of its own, one after the other), and loops of `status`, `send`, `stop`, `inspect <thread>` and
 * `inspect` on the threads the runs made. Every output is searched for a lock that reached the
 * user (BUSY_PATTERN).
 */
export async function concurrency(processes: number, durationMs: number, rng: Rng): Promise<ConcurrencyResult> {
  const root = newPlace("concurrent");
  const places: Array<ReturnType<typeof newPlace>> = [];
  const threads: string[] = [];
  const result: ConcurrencyResult = { commands: 0, busyErrors: [], stackTraces: [], otherEnds: [] };
  const deadline = Date.now() + durationMs;
  const check = (what: string, outcome: CliResult) => {
    result.commands++;
    for (const line of `${outcome.stdout}\n${outcome.stderr}`.split("\n")) {
      if (BUSY_PATTERN.test(line)) result.busyErrors.push(`${what}: ${line.trim()}`);
    }
    const trace = STACK_PATTERN.exec(`${outcome.stdout}\n${outcome.stderr}`);
    if (trace) result.stackTraces.push(`${what}: ${trace[0].trim()}`);
  };
  const someThread = () => threads[Math.floor(rng() * threads.length)] ?? "c0-0";
  const worker = async (role: Role, index: number) => {
    for (let n = 0; Date.now() < deadline; n++) {
      if (role === "run") {
        const ws = newPlace(`c${index}`);
        places.push(ws);
        const thread = `c${index}-${n}`;
        threads.push(thread);
        const outcome = await runCli(runArgs({ dir: ws.dir, db: root.db }, specOf(thread, SHORT_SCRIPT)));
        check(`run ${thread}`, outcome);
        if (outcome.code !== 0) result.otherEnds.push(`run ${thread}: ${outcome.code ?? outcome.signal} ${lastLine(outcome.stderr)}`);
        continue;
      }
      const thread = someThread();
      const args: Record<Exclude<Role, "run">, string[]> = {
        status: ["status", thread],
        send: ["send", thread, "add: one more line"],
        stop: ["stop", thread],
        inspect: ["inspect", thread, "--json"],
        list: ["inspect"],
      };
      const outcome = await runCli([...args[role], "--db", root.db]);
      check(args[role].join(" "), outcome);
      // The command loops are paced so that the runs get the CPU too.
      await delay(100 + rng() * 200);
    }
  };
  try {
    await Promise.all(rolesFor(processes).map(worker));
  } finally {
    for (const ws of places) ws.remove();
    root.remove();
  }
  return result;
}
