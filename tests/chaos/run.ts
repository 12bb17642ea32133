/**
 * `npm run chaos`: the crash and concurrency suite, against real processes of the built CLI
 * (dist/cli/loopgraph.js: build first). See docs/chaos.md.
 *
 *   (a) kill -9 at random moments of a scripted coder-review run whose shell steps append to a
 *       log, then resume (killed again now and then) until it finishes; compare its log with an
 *       uninterrupted run's
 *   (b) two `resume`s of a killed thread started at the same moment: did both run it?
 *   (c) concurrent processes on one store (runs, status, send, stop, inspect): did a lock reach
 *       the user?
 *   (d) kills before the first checkpoint, then resume: same log
 *   (e) another program's write lock at random moments of a step (the end of a shell command
 *       too): the run finishes or stops as documented (130), then resume: same log
 *   (f) a damaged store: inspect, status and resume say so (2); restored from a copy, resume: same log
 *   (g) a full store (a file size limit): the run stops as documented (130, or 2 before its
 *       store is made), then with room, resume: same log
 *   (h) PostgreSQL outages (stop, restart, 10 s away) under two workers and under a foreground
 *       run: every thread finishes after recovery (not in --quick; postgres-outages.ts)
 *
 *   tsx tests/chaos/run.ts [--seed N] [--quick] [--workers N] [--verbose]
 *                          [--kills N] [--races N] [--processes N] [--seconds S] [--early N]
 *                          [--locks N] [--damaged N] [--full N]
 *
 * Prints the seed first (`--seed N` draws the same kill moments again; where they land also
 * depends on the machine's speed), one line per part, a line per failed trial, and last
 * `chaos: trials=N identical=N inflight_rerun=N doubled=0 stuck=0 double_owner=0 busy_errors=0 stack_traces=0`
 * (trials: the compared runs of (a), (d), (e), (f) and (g); stack_traces: the trials, and the
 * commands of (c), whose output had a stack trace or an internal error). Exit code 0 only when
 * doubled, stuck, double_owner, busy_errors and stack_traces are 0, every compared trial is
 * identical and every store trial's processes ended as documented.
 */
import { basename } from "node:path";
import {
  concurrency,
  earlyKillTrial,
  killTrial,
  raceTrial,
  referenceRun,
  rngFor,
  rolesFor,
  SHORT_SCRIPT,
  STEPS_SCRIPT,
  type Reference,
  type TrialResult,
} from "./trials.js";
import { damagedTrial, fullTrial, lockTrial } from "./store-trials.js";

/** The parts whose trials' logs are compared with the reference run's. */
const COMPARED = ["a", "d", "e", "f", "g"] as const;
type Part = "b" | (typeof COMPARED)[number];

interface Options {
  seed: number;
  quick: boolean;
  /** Trials run at the same time (each is one process at a time, two in a race). */
  workers: number;
  verbose: boolean;
  kills: number;
  races: number;
  processes: number;
  seconds: number;
  early: number;
  locks: number;
  damaged: number;
  full: number;
}

function parseOptions(argv: readonly string[]): Options {
  const quick = argv.includes("--quick");
  const options: Options = {
    seed: Math.floor(Math.random() * 2 ** 31),
    quick,
    workers: 2,
    verbose: false,
    kills: quick ? 2 : 50,
    races: quick ? 2 : 20,
    processes: quick ? 4 : 8,
    seconds: quick ? 3 : 12,
    early: quick ? 1 : 8,
    locks: quick ? 1 : 12,
    damaged: quick ? 1 : 6,
    full: quick ? 1 : 6,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const number = () => {
      const next = Number(argv[++i]);
      if (!Number.isFinite(next) || next < 0) throw new Error(`${arg} needs a number`);
      return next;
    };
    if (arg === "--quick") continue;
    else if (arg === "--seed") options.seed = number();
    else if (arg === "--workers") options.workers = Math.max(1, number());
    else if (arg === "--verbose") options.verbose = true;
    else if (arg === "--kills") options.kills = number();
    else if (arg === "--races") options.races = number();
    else if (arg === "--processes") options.processes = number();
    else if (arg === "--seconds") options.seconds = number();
    else if (arg === "--early") options.early = number();
    else if (arg === "--locks") options.locks = number();
    else if (arg === "--damaged") options.damaged = number();
    else if (arg === "--full") options.full = number();
    else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** Runs `jobs` with at most `workers` at a time, results in the jobs' order. */
async function pool<T>(jobs: ReadonlyArray<() => Promise<T>>, workers: number): Promise<T[]> {
  const results: T[] = new Array<T>(jobs.length);
  let next = 0;
  const work = async () => {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await jobs[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, jobs.length) }, work));
  return results;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(options: Options): Promise<number> {
  const started = Date.now();
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`chaos: seed ${options.seed} (reproduce with --seed ${options.seed}${options.quick ? " --quick" : ""})`);
  // The short form runs the one-round script: fewer steps, less time per process.
  const reference: Reference = await referenceRun(options.quick ? SHORT_SCRIPT : STEPS_SCRIPT);
  out(
    `reference run (${basename(reference.script)}): ${reference.steps} shell steps, ${reference.lines.length} log lines in ${seconds(reference.ms)}`,
  );

  const jobs: Array<() => Promise<TrialResult & { part: Part }>> = [];
  const add = (part: Part, label: string, count: number, trial: (name: string, index: number) => Promise<TrialResult>) => {
    for (let i = 0; i < count; i++) jobs.push(async () => ({ part, ...(await trial(`${label}-${i + 1}`, i)) }));
  };
  add("a", "kill", options.kills, (name) => killTrial(name, rngFor(options.seed, name), reference));
  add("d", "early", options.early, (name, i) => earlyKillTrial(name, i, rngFor(options.seed, name), reference));
  add("b", "race", options.races, (name) => raceTrial(name, rngFor(options.seed, name), reference));
  add("e", "lock", options.locks, (name, i) => lockTrial(name, i, rngFor(options.seed, name), reference));
  add("f", "damaged", options.damaged, (name) => damagedTrial(name, rngFor(options.seed, name), reference));
  add("g", "full", options.full, (name) => fullTrial(name, rngFor(options.seed, name), reference));
  // Part (c) runs beside the trials, on a store of its own: more load, for both, in less time.
  const [trials, concurrent] = await Promise.all([
    pool(jobs, options.workers),
    options.processes > 0 ? concurrency(options.processes, options.seconds * 1000, rngFor(options.seed, "concurrency")) : undefined,
  ]);

  const failures: string[] = [];
  if (!options.quick) failures.push(...(await (await import("./postgres-outages.js")).postgresOutages(out)));
  const of = (part: string) => trials.filter((trial) => trial.part === part);
  const sum = (list: TrialResult[], count: (trial: TrialResult) => number) => list.reduce((total, trial) => total + count(trial), 0);
  for (const trial of trials) {
    const failed =
      trial.stuck ||
      trial.doubleOwner ||
      trial.stackTrace ||
      trial.wrongEnd ||
      trial.verdict.doubled > 0 ||
      (trial.part !== "b" && !trial.verdict.identical);
    if (failed) {
      const what = [
        trial.stuck && `stuck: ${trial.stuck}`,
        trial.doubleOwner && `double owner: ${trial.doubleOwner}`,
        trial.stackTrace && `stack trace: ${trial.stackTrace}`,
        trial.wrongEnd && `not as documented: ${trial.wrongEnd}`,
        ...trial.verdict.notes,
      ].filter(Boolean);
      failures.push(`${trial.name} (${trial.kills} kills): ${what.join("; ")}`);
    } else if (options.verbose)
      out(`${trial.name} (${trial.kills} kills): ok${trial.verdict.notes.length ? `; ${trial.verdict.notes.join("; ")}` : ""}`);
  }

  const compared = COMPARED.flatMap(of);
  const identical = compared.filter((trial) => trial.verdict.identical).length;
  const inflight = sum(compared, (trial) => trial.verdict.inflightReruns);
  const doubled = sum(compared, (trial) => trial.verdict.doubled);
  const stuck = trials.filter((trial) => trial.stuck).length;
  const doubleOwners = of("b").filter((trial) => trial.doubleOwner).length;
  const busy = concurrent?.busyErrors.length ?? 0;
  const stackTraces = trials.filter((trial) => trial.stackTrace).length + (concurrent?.stackTraces.length ?? 0);
  const wrongEnds = trials.filter((trial) => trial.wrongEnd).length;
  const line = (part: TrialResult[]) =>
    `${part.length} trials, ${sum(part, (trial) => trial.kills)} kills (${sum(part, (trial) => trial.beforeFirstCheckpoint)} before the first checkpoint), identical ${part.filter((trial) => trial.verdict.identical).length}, in-flight re-runs ${sum(part, (trial) => trial.verdict.inflightReruns)}, doubled ${sum(part, (trial) => trial.verdict.doubled)}, stuck ${part.filter((trial) => trial.stuck).length}`;
  out(`(a) kill -9 at random moments, then resume: ${line(of("a"))}`);
  out(
    `(b) two resumes of a killed thread at once: ${of("b").length} races, double owners ${doubleOwners}, stuck ${of("b").filter((trial) => trial.stuck).length}`,
  );
  if (concurrent) {
    const roles = rolesFor(options.processes);
    out(
      `(c) ${options.processes} concurrent processes (${roles.join(", ")}) on one store for ${options.seconds} s: ${concurrent.commands} commands, busy errors ${busy}`,
    );
    for (const error of [...concurrent.busyErrors, ...concurrent.stackTraces].slice(0, 10)) failures.push(`concurrent: ${error}`);
    if (options.verbose) for (const end of concurrent.otherEnds) out(`concurrent run did not finish: ${end}`);
  }
  out(`(d) kills before the first checkpoint, then resume: ${line(of("d"))}`);
  const ends = (part: TrialResult[]) =>
    `${part.length - part.filter((trial) => trial.wrongEnd).length} of ${part.length} ended as documented`;
  out(`(e) another program's write lock at random moments of a step, then resume: ${ends(of("e"))}; ${line(of("e"))}`);
  out(`(f) a damaged store, then restored from a copy and resumed: ${ends(of("f"))}; ${line(of("f"))}`);
  out(`(g) a full store (a file size limit), then resumed with room: ${ends(of("g"))}; ${line(of("g"))}`);
  if (failures.length > 0) out(["Failures:", ...failures].join("\n"));
  out(
    `${trials.length} trials and ${concurrent?.commands ?? 0} concurrent commands in ${seconds(Date.now() - started)} (${options.workers} workers)`,
  );
  out(
    `chaos: trials=${compared.length} identical=${identical} inflight_rerun=${inflight} doubled=${doubled} stuck=${stuck} double_owner=${doubleOwners} busy_errors=${busy} stack_traces=${stackTraces}`,
  );
  const clean =
    failures.length === 0 && doubled === 0 && stuck === 0 && doubleOwners === 0 && busy === 0 && stackTraces === 0 && wrongEnds === 0;
  return clean && identical === compared.length ? 0 : 1;
}

process.exitCode = await main(parseOptions(process.argv.slice(2)));
