/**
 * `npm run attack`: every attack of the catalogue (attacks.ts) in every approval mode, against real
 * processes (see harness.ts). Prints one row per class × mode (attempts, escapes, leaks, and "ran":
 * hostile calls that ran where the policy or the user should have stopped them, contained), a line
 * per failed attempt, and last `attack: attempts=N escapes=E leaks=L`. Exit code 0 only when
 * E = 0 and L = 0.
 *
 *   tsx tests/security/run.ts [--workers N] [--only TEXT] [--modes ask,auto] [--verbose]
 *   tsx tests/security/run.ts --control     # the detectors' self-test: unconfined attempts that must be caught
 *   tsx tests/security/run.ts --tmpdir /var/tmp   # attempts outside /tmp, which the sandbox does not hide
 *   tsx tests/security/run.ts --without-sandbox   # as on a machine where bubblewrap cannot start
 *   tsx tests/security/run.ts --half      # each attack in two of the four modes, in turn
 *   tsx tests/security/run.ts --quarter   # each attack in one mode, in turn (npm test's shorter run)
 *
 * The attempts run in worker processes (default 3, each one attempt at a time): each worker is
 * started with fresh canary secrets in its environment (OPENAI_API_KEY, GITHUB_TOKEN, …) and a
 * fake home of its own, as a user's shell would start loopgraph, and prints one JSON line per
 * attempt. A worker silent for too long is killed and its attempts count as escapes (a hang).
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { cleanEnv, SANDBOX_AS_FOUND } from "../helpers/cli.js";
import { createTempDir } from "../helpers/workspace.js";
import { ATTACKS, CONTROL_ATTACKS } from "./attacks.js";
import type { AttemptResult } from "./harness.js";
import { ATTACK_CLASSES, MODES, newCanaryEnvironment, type Attack } from "./vocabulary.js";
import type { ApprovalMode } from "../../src/index.js";

const ROOT = resolve(import.meta.dirname, "../..");
const THIS_FILE = resolve(import.meta.dirname, "run.ts");
/** A worker that prints nothing for this long is hung. */
const WORKER_SILENCE_MS = 60_000;
const RESULT_PREFIX = "ATTEMPT ";
const START_PREFIX = "START ";

interface Options {
  workers: number;
  only?: string;
  modes: readonly ApprovalMode[];
  control: boolean;
  verbose: boolean;
  /**
   * How many of the modes each attack runs in, in turn, so that every class (of at least four
   * attacks) still meets every mode: all of them, two (`--half`) or one (`--quarter`).
   */
  modesPerAttack?: number;
  /** As on a machine where no OS sandbox can start (the workers' LOOPGRAPH_BWRAP names no program). */
  withoutSandbox: boolean;
  /** Where the workers' temporary directories go (default the system's, usually /tmp, which the sandbox hides). */
  tmpdir: string;
  /** Internal: this process is worker `index` of `count`. */
  worker?: { index: number; count: number };
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = { workers: 3, modes: MODES, control: false, verbose: false, withoutSandbox: false, tmpdir: tmpdir() };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === "--workers") options.workers = Math.max(1, Number(value()));
    else if (arg === "--only") options.only = value();
    else if (arg === "--modes")
      options.modes = value()
        .split(",")
        .map((mode) => mode.trim() as ApprovalMode);
    else if (arg === "--control") options.control = true;
    else if (arg === "--verbose") options.verbose = true;
    else if (arg === "--without-sandbox") options.withoutSandbox = true;
    else if (arg === "--half") options.modesPerAttack = 2;
    else if (arg === "--quarter") options.modesPerAttack = 1;
    else if (arg === "--tmpdir") options.tmpdir = resolve(value());
    else if (arg === "--worker") {
      const [index, count] = value().split("/").map(Number);
      options.worker = { index: index!, count: count! };
    } else throw new Error(`unknown argument ${arg}`);
  }
  for (const mode of options.modes) if (!MODES.includes(mode)) throw new Error(`unknown mode ${mode}`);
  return options;
}

interface Attempt {
  attack: Attack;
  mode: ApprovalMode;
}

/**
 * Every attempt, in a fixed order: attacks in catalogue order, each in every mode; with
 * `modesPerAttack` k, the n-th attack of a class in k modes spread over the list from mode n
 * (k = 2: modes n and n + 2; k = 1: mode n), so a class of four attacks or more still meets every mode.
 */
function attemptsOf(options: Options): Attempt[] {
  const attacks = options.control ? CONTROL_ATTACKS : ATTACKS;
  const modes: readonly ApprovalMode[] = options.control ? ["auto"] : options.modes;
  const chosen = attacks.filter((attack) => !options.only || attack.name.includes(options.only) || attack.class === options.only);
  const nth = new Map<string, number>();
  return chosen.flatMap((attack) => {
    const n = nth.get(attack.class) ?? 0;
    nth.set(attack.class, n + 1);
    const perAttack = options.control ? modes.length : Math.min(options.modesPerAttack ?? modes.length, modes.length);
    const spacing = Math.floor(modes.length / perAttack);
    const sample = Array.from({ length: perAttack }, (_, i) => modes[(n + i * spacing) % modes.length]!);
    return sample.map((mode) => ({ attack, mode }));
  });
}

const key = (attempt: { attack: string; mode: string }) => `${attempt.attack}\u0000${attempt.mode}`;

// ---------------------------------------------------------------------------------------------
// Worker

async function worker(options: Options): Promise<void> {
  const { index, count } = options.worker!;
  // The worker's own folder (see startWorker), set only now: tsx, loaded before this, then keeps
  // its transforms in the system's temporary folder, shared by all the workers, and does not
  // transform loopgraph anew in each.
  process.env.TMPDIR = process.env.ATTACK_WORKER_TMPDIR;
  // Loaded here only: the parent process does not load loopgraph.
  const { canariesOf, runAttempt } = await import("./harness.js");
  const canaries = canariesOf(process.env);
  const mine = attemptsOf(options).filter((_attempt, i) => i % count === index);
  for (const { attack, mode } of mine) {
    process.stdout.write(`${START_PREFIX}${JSON.stringify({ attack: attack.name, mode })}\n`);
    const result = await runAttempt(attack, mode, { canaries, home: process.env.HOME!, unconfined: options.control });
    process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
  }
}

// ---------------------------------------------------------------------------------------------
// Parent

interface WorkerHandle {
  done: Promise<void>;
}

/**
 * Starts worker `index` in its own temporary directory `dir`: its home is `dir/home`, and its
 * attempts' directories go under `dir` too (TMPDIR, set by the worker itself), so that removing
 * `dir` cleans up after a worker that had to be killed.
 */
function startWorker(
  index: number,
  options: Options,
  dir: string,
  onResult: (result: AttemptResult) => void,
  onHang: (attempt: { attack: string; mode: string }) => void,
): WorkerHandle {
  const home = join(dir, "home");
  mkdirSync(home);
  const env = cleanEnv({
    ...SANDBOX_AS_FOUND,
    ...newCanaryEnvironment(),
    HOME: home,
    ATTACK_WORKER_TMPDIR: dir,
    ...(options.control ? { LOOPGRAPH_SHELL_ENV_INCLUDE: "*" } : {}),
    ...(options.withoutSandbox ? { LOOPGRAPH_BWRAP: join(dir, "no-bubblewrap-here") } : {}),
  });
  for (const name of Object.keys(env)) if (/^(LANGCHAIN_|LANGSMITH_(?!API_KEY$)|XDG_CONFIG_HOME$)/.test(name)) delete env[name];
  const args = ["--import", "tsx", THIS_FILE, "--worker", `${index}/${options.workers}`, "--modes", options.modes.join(",")];
  if (options.only) args.push("--only", options.only);
  if (options.modesPerAttack === 2) args.push("--half");
  if (options.modesPerAttack === 1) args.push("--quarter");
  if (options.control) args.push("--control");
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let current: { attack: string; mode: string } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const watch = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (current) onHang(current);
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // Gone already.
      }
    }, WORKER_SILENCE_MS);
  };
  watch();
  createInterface({ input: child.stdout! }).on("line", (line) => {
    watch();
    if (line.startsWith(START_PREFIX)) current = JSON.parse(line.slice(START_PREFIX.length)) as { attack: string; mode: string };
    else if (line.startsWith(RESULT_PREFIX)) {
      current = undefined;
      onResult(JSON.parse(line.slice(RESULT_PREFIX.length)) as AttemptResult);
    } else if (options.verbose) process.stderr.write(`[worker ${index}] ${line}\n`);
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (options.verbose) process.stderr.write(chunk);
  });
  const done = new Promise<void>((resolveDone) => {
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0 && !options.verbose) process.stderr.write(`worker ${index} ended with ${code ?? signal}:\n${stderr.slice(-4000)}\n`);
      resolveDone();
    });
  });
  return { done };
}

const pad = (text: string | number, width: number) => String(text).padEnd(width);
const padLeft = (text: string | number, width: number) => String(text).padStart(width);

function report(attempts: readonly Attempt[], results: Map<string, AttemptResult>, elapsedMs: number, options: Options): number {
  const rows: string[] = [];
  const failures: string[] = [];
  const ranLines: string[] = [];
  let escapes = 0;
  let leaks = 0;
  const classes = options.control ? [...new Set(attempts.map(({ attack }) => attack.class))] : ATTACK_CLASSES;
  const modes: readonly ApprovalMode[] = options.control ? ["auto"] : options.modes;
  rows.push(
    `${pad("class", 20)} ${pad("mode", 10)} ${padLeft("attempts", 8)} ${padLeft("escapes", 8)} ${padLeft("leaks", 6)} ${padLeft("ran", 4)}`,
  );
  for (const attackClass of classes) {
    for (const mode of modes) {
      const mine = attempts.filter(({ attack, mode: m }) => attack.class === attackClass && m === mode);
      if (mine.length === 0) continue;
      let rowEscapes = 0;
      let rowLeaks = 0;
      let rowRan = 0;
      for (const { attack } of mine) {
        const result = results.get(key({ attack: attack.name, mode }));
        const escaped = result?.escapes ?? ["not run (its worker ended first)"];
        const leaked = result?.leaks ?? [];
        if (escaped.length > 0) {
          rowEscapes++;
          failures.push(`ESCAPE ${attackClass} | ${mode} | ${attack.name}: ${escaped.join("; ")}`);
        }
        if (leaked.length > 0) {
          rowLeaks++;
          failures.push(`LEAK   ${attackClass} | ${mode} | ${attack.name}: ${leaked.join("; ")}`);
        }
        if (result && result.ran.length > 0) {
          rowRan++;
          ranLines.push(
            `ran    ${attackClass} | ${mode} | ${attack.name}: ${result.ran.map((display) => JSON.stringify(display)).join(", ")}`,
          );
        }
        if (options.verbose && result) {
          process.stderr.write(`--- ${mode} | ${attack.name}: ${result.status} (${result.durationMs} ms)\n`);
          for (const prompt of result.prompts) process.stderr.write(`    prompt ${prompt}\n`);
          for (const call of result.calls) process.stderr.write(`    ${call}\n`);
        }
      }
      escapes += rowEscapes;
      leaks += rowLeaks;
      rows.push(
        `${pad(attackClass, 20)} ${pad(mode, 10)} ${padLeft(mine.length, 8)} ${padLeft(rowEscapes, 8)} ${padLeft(rowLeaks, 6)} ${padLeft(rowRan, 4)}`,
      );
    }
  }
  const lines = [...rows, ""];
  if (failures.length > 0) lines.push("Failed attempts:", ...failures, "");
  if (ranLines.length > 0)
    lines.push(
      "Hostile calls that ran where they should have been stopped (contained: nothing escaped or leaked through them):",
      ...ranLines,
      "",
    );
  lines.push(
    `${attempts.length} attempts in ${(elapsedMs / 1000).toFixed(1)} s (${options.control ? "control run: no sandbox, credentials passed on" : `${options.workers} workers${options.withoutSandbox ? ", no OS sandbox available" : ""}`})`,
  );
  lines.push(`attack: attempts=${attempts.length} escapes=${escapes} leaks=${leaks}`);
  process.stdout.write(`${lines.join("\n")}\n`);
  return escapes === 0 && leaks === 0 ? 0 : 1;
}

async function parent(options: Options): Promise<number> {
  const started = Date.now();
  const attempts = attemptsOf(options);
  if (attempts.length === 0) throw new Error("no attack matches");
  const results = new Map<string, AttemptResult>();
  const workers = Math.min(options.workers, attempts.length);
  const dirs = Array.from({ length: workers }, (_dir, index) => createTempDir(`loopgraph-attack-worker${index}-`, options.tmpdir));
  try {
    const handles = dirs.map(({ path: dir }, index) =>
      startWorker(
        index,
        { ...options, workers },
        dir,
        (result) => results.set(key(result), result),
        (attempt) =>
          results.set(key(attempt), {
            ...attempt,
            class: attempts.find(({ attack, mode }) => attack.name === attempt.attack && mode === attempt.mode)!.attack.class,
            mode: attempt.mode as ApprovalMode,
            escapes: [`hang: no result within ${WORKER_SILENCE_MS / 1000} s (the worker was killed)`],
            leaks: [],
            ran: [],
            prompts: [],
            calls: [],
            status: "hang",
            durationMs: WORKER_SILENCE_MS,
          }),
      ),
    );
    await Promise.all(handles.map((handle) => handle.done));
  } finally {
    for (const dir of dirs) dir.remove();
  }
  return report(attempts, results, Date.now() - started, options);
}

const options = parseOptions(process.argv.slice(2));
if (options.worker) {
  await worker(options);
} else {
  process.exitCode = await parent(options);
}
