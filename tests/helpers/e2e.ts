/**
 * The end-to-end harness: start a real `loopgraph run` from a scripted-model file in a temporary
 * workspace, wait for one of its `--json` events, kill it (SIGKILL, SIGINT), resume it, and read
 * the run store back.
 *
 *   const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
 *   const run = startRun(ws, { graph: "coder", thread: "crash", script: join(SCRIPTS, "crash.script.yaml") });
 *   await run.waitForEvent("tool_call", (line) => line.includes("three"));
 *   const killed = await run.kill("SIGKILL");
 *   const resumed = await resume(ws, "crash", "--json");
 *   const state = await finalState(ws.db, "crash");
 *
 * The processes run the built CLI (tests/helpers/cli.ts); the store is read in-process through the
 * library API, which is what `loopgraph inspect --json` prints (tests/cli.run.e2e.test.ts covers that
 * command itself).
 */
import type { ChildProcess } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import {
  checkpointState,
  listThreads,
  runGraph,
  threadHistory,
  verifyRun,
  type ThreadHistory,
  type ThreadSummary,
} from "../../src/index.js";
import { settingsOf } from "../../src/config/environment-settings.js";
import { withStore } from "../../src/store/store.js";
import type { ThreadRecord } from "../../src/runs/thread-registry.js";
import { collect, runCli, spawnCli, type CliOptions, type CliResult } from "./cli.js";
import { onCleanup, tempWorkspace } from "./workspace.js";

/** Where a run keeps its files and its store. */
export interface RunPlace {
  dir: string;
  db: string;
}

export interface RunSpec {
  /** A shipped graph's name or a graph file. */
  graph: string;
  thread: string;
  /** The scripted model's file (`--model scripted:<script>`). */
  script?: string;
  /** Any other `--model` value; `script` wins. */
  model?: string;
  task?: string;
  /** `--approval`; none by default. */
  approval?: "ask" | "auto-edit" | "auto" | "deny";
  /** `--json`: on by default. */
  json?: boolean;
  /** More arguments, after the others. */
  extra?: string[];
}

/** The arguments of `loopgraph run` for `spec` in `ws` (workspace and store). */
export function runArgs(ws: RunPlace, spec: RunSpec): string[] {
  const model = spec.script !== undefined ? `scripted:${spec.script}` : spec.model;
  return [
    "run",
    spec.graph,
    ...(spec.task !== undefined ? ["--task", spec.task] : []),
    "--thread",
    spec.thread,
    "--workspace",
    ws.dir,
    ...(model !== undefined ? ["--model", model] : []),
    ...(spec.approval ? ["--approval", spec.approval] : []),
    "--db",
    ws.db,
    ...(spec.json === false ? [] : ["--json"]),
    ...(spec.extra ?? []),
  ];
}

/** `loopgraph run` to its end. */
export function run(ws: RunPlace, spec: RunSpec, options: CliOptions = {}): Promise<CliResult> {
  return runCli(runArgs(ws, spec), options);
}

/** `loopgraph resume <thread> --db <ws.db> [...extra]` to its end. */
export function resume(ws: { db: string }, thread: string, ...extra: string[]): Promise<CliResult> {
  return resumeWith({}, ws, thread, ...extra);
}

/** `resume` as above, with CLI options (e.g. the environment of a model server). */
export function resumeWith(options: CliOptions, ws: { db: string }, thread: string, ...extra: string[]): Promise<CliResult> {
  return runCli(["resume", thread, "--db", ws.db, ...extra], options);
}

/** Where to look for a line: after the line of index `after` (from `lines`), within `timeoutMs`. */
export interface WaitOptions {
  after?: number;
  timeoutMs?: number;
}

/** A CLI process the test started and waits on. */
export interface RunningCli {
  child: ChildProcess;
  /** Its end: exit code or signal, and everything it printed. */
  done: Promise<CliResult>;
  /** The complete lines it printed on stdout so far. */
  readonly lines: readonly string[];
  /** Resolves with the index (in `lines`) of the first line, printed so far or to come, that `match` accepts. */
  waitForLine(match: (line: string) => boolean, options?: WaitOptions): Promise<number>;
  /** The same for the first `--json` event of `type` that `match` (if given) accepts. */
  waitForEvent(type: string, match?: (line: string) => boolean, options?: WaitOptions): Promise<number>;
  /** The same for the event (`node_started` unless told) of `node`. */
  waitForNode(node: string, event?: string, options?: WaitOptions): Promise<number>;
  /** Sends `signal` and resolves with how the process ended. */
  kill(signal?: NodeJS.Signals): Promise<CliResult>;
}

/** How `startCli` starts a process. */
export interface StartOptions extends CliOptions {
  /**
   * Outside a vitest test (the chaos runner, tests/chaos/run.ts): no clean-up is registered with
   * the test, so the caller must wait for the process or kill it itself.
   */
  standalone?: boolean;
}

/**
 * Starts a CLI process with `args` (see `startRun` for a `run`). It is killed (SIGKILL) when the
 * test finishes, if still running, so that a failing test leaves no process behind.
 */
export function startCli(args: string[], options: StartOptions = {}): RunningCli {
  const child = spawnCli(args, options);
  const done = collect(child);
  let ended = false;
  void done.then(() => (ended = true));
  if (!options.standalone) {
    onCleanup(async () => {
      if (!ended) {
        child.kill("SIGKILL");
        await done;
      }
    });
  }

  const lines: string[] = [];
  let partial = "";
  const waiting = new Set<() => void>();
  child.stdout?.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
    for (const check of [...waiting]) check();
  });

  const waitForLine = (match: (line: string) => boolean, { after = -1, timeoutMs = 40_000 }: WaitOptions = {}): Promise<number> =>
    new Promise((resolve, reject) => {
      let from = after + 1;
      const check = (): void => {
        for (; from < lines.length; from++) {
          if (match(lines[from]!)) return finish(() => resolve(from));
        }
      };
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        waiting.delete(check);
        settle();
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no matching line within ${timeoutMs} ms; got:\n${lines.join("\n")}\n${partial}`))),
        timeoutMs,
      );
      waiting.add(check);
      check();
      // A process that ends without the line fails the wait at once, not after the timeout.
      void done.then(() => {
        check();
        if (waiting.has(check))
          finish(() => reject(new Error(`the process ended without a matching line; got:\n${lines.join("\n")}\n${partial}`)));
      });
    });

  const isEvent = (line: string, type: string): boolean => line.startsWith("{") && line.includes(`"type":"${type}"`);
  return {
    child,
    done,
    lines,
    waitForLine,
    waitForEvent: (type, match = () => true, options) => waitForLine((line) => isEvent(line, type) && match(line), options),
    waitForNode: (node, event = "node_started", options) =>
      waitForLine((line) => isEvent(line, event) && line.includes(`"node":"${node}"`), options),
    kill: (signal = "SIGKILL") => {
      child.kill(signal);
      return done;
    },
  };
}

/** Starts `loopgraph run` for `spec` in `ws` as a process the test can wait on and kill. */
export function startRun(ws: RunPlace, spec: RunSpec, options: StartOptions = {}): RunningCli {
  return startCli(runArgs(ws, spec), options);
}

/** Starts `loopgraph resume <thread> --db <ws.db> [...extra]` as a process the test can wait on (e.g. to open a gate once it runs a step). */
export function startResume(ws: { db: string }, thread: string, ...extra: string[]): RunningCli {
  return startCli(["resume", thread, "--db", ws.db, ...extra]);
}

/**
 * A copy of the scripted-model file `fixture` in the test's temporary folder (`ws.root`, beside
 * the workspace), so that the `wait_for` gates it names are files of this test only: `open(gate)`
 * creates one and lets the run past the response that waits for it, however slow the machine.
 *
 *   const { script, open } = gatedScript(ws, join(ROOT, "tests/fixtures/mediator/chat-add.script.yaml"));
 *   const running = startRun(ws, { graph: "monitor", thread: "t", script });
 *   // … act while the Coder waits …
 *   open("gate-coder");
 */
export function gatedScript(ws: { root: string }, fixture: string): { script: string; open: (gate: string) => void } {
  const script = join(ws.root, basename(fixture));
  copyFileSync(fixture, script);
  return { script, open: (gate) => writeFileSync(join(ws.root, gate), "") };
}

/** What `loopgraph inspect <thread> --json` prints, read in-process. */
export async function historyOf(db: string, thread: string): Promise<ThreadHistory> {
  return asJson(await threadHistory(thread, { db, env: {} }));
}

/** What `loopgraph inspect <thread> --checkpoint <id> --json` prints as `values`, read in-process. */
export async function stateAt<T = Record<string, unknown>>(db: string, thread: string, checkpointId: string): Promise<T> {
  return asJson((await checkpointState(thread, checkpointId, { db, env: {} })).values) as T;
}

/** The full state at a thread's last checkpoint (the newest checkpoint `inspect` lists). */
export async function finalState<T = Record<string, unknown>>(db: string, thread: string): Promise<T> {
  const last = (await historyOf(db, thread)).checkpoints.at(-1);
  if (!last) throw new Error(`thread ${thread} has no checkpoint in ${db}`);
  return stateAt<T>(db, thread, last.checkpointId);
}

/**
 * The thread's status as its record holds it, not as readers show it: `inspect` and `status`
 * show a thread marked running whose process is gone as interrupted, which would hide a run that
 * exited without recording its end.
 */
export async function recordedStatus(db: string, thread: string): Promise<ThreadRecord["status"] | undefined> {
  return withStore({ db, env: {} }, "read", async (store) => (await store.threads.get(thread))?.status);
}

/** What `loopgraph inspect --json` prints: every thread of the store. */
export async function threadsOf(db: string): Promise<ThreadSummary[]> {
  return asJson(await listThreads({ db, env: {} }));
}

/** The value as the CLI's JSON output carries it. */
const asJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * A run of the graph file `graph` in-process in a fresh git workspace (its thread named after the
 * file), approvals automatic, answered by `script` if given: the outcome and the thread's steps.
 */
export async function runGraphFile(graph: string, task: string, script?: string) {
  const ws = tempWorkspace({ git: "init" });
  const thread = basename(graph).replace(/\.yaml$/, "");
  const outcome = await runGraph({
    graph,
    task,
    threadId: thread,
    workspace: ws.dir,
    db: ws.db,
    settings: settingsOf({}),
    approval: "auto",
    ...(script === undefined ? {} : { model: `scripted:${script}` }),
  });
  const history = await threadHistory(thread, { db: ws.db, env: {} });
  return { outcome, history, steps: history.checkpoints.map((checkpoint) => checkpoint.nodes), workspace: ws.dir, db: ws.db };
}

/** A run of the graph file `graph` (see `runGraphFile`), then what `replay --verify` says of it. */
export async function runAndVerify(graph: string, task: string): Promise<Awaited<ReturnType<typeof verifyRun>>> {
  const { db, history } = await runGraphFile(graph, task);
  return verifyRun({ threadId: history.thread.threadId, db, env: {} });
}
