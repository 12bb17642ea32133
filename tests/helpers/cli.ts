import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { cpSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { projectRoot } from "../../src/project.js";
import { trustFile, trustProject } from "../../src/trust/trust.js";
import { createTempDir } from "./workspace.js";

export const ROOT = resolve(import.meta.dirname, "../..");
export const CLI = join(ROOT, "dist/cli/loopgraph.js");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * The largest file the process may write, in bytes (RLIMIT_FSIZE, set with util-linux's
   * `prlimit`): a write beyond it fails as on a full disk (Node ignores SIGXFSZ), without root.
   */
  fileSizeLimit?: number;
  /**
   * Run as this user and group id, through util-linux's `setpriv` (the test process must be
   * root): what a folder's permissions stop, which they never do for root.
   */
  user?: number;
}

/**
 * Environment for a test run: no real keys or model leak in from the developer's shell, and the
 * agent's commands run without the OS sandbox, by choice (`LOOPGRAPH_SANDBOX=off`, as
 * `--no-sandbox`), so that a test behaves the same whether or not bubblewrap can start here (a new
 * user's machine has no bubblewrap). A test whose subject is the sandbox passes `SANDBOX_AS_FOUND`
 * in `extra`, and skips without bubblewrap (tests/helpers/requirements.ts).
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(OPENAI_|LOOPGRAPH_)|_API_KEY$|_BASE_URL$/.test(key)) delete env[key];
  }
  return { ...env, NO_COLOR: "1", LOOPGRAPH_SANDBOX: "off", XDG_CONFIG_HOME: testConfigHome(), ...extra };
}

let configHome: string | undefined;

/**
 * The user config folder of this test process's runs (`XDG_CONFIG_HOME` in `cleanEnv`): empty at
 * first, so that the developer's own config files and trusted projects never change a test.
 */
export function testConfigHome(): string {
  if (!configHome) {
    // For the whole process (the chaos and attack runners too, outside vitest): removed on exit.
    const made = createTempDir("loopgraph-config-");
    process.once("exit", made.remove);
    configHome = made.path;
  }
  return configHome;
}

/** Copies the folder `from` to `to`, and trusts each graph file at its top as the user would (`loopgraph trust FILE`): the graphs a test runs by path. */
export function copyTrusted(from: string, to: string, env: NodeJS.ProcessEnv = cleanEnv()): void {
  cpSync(from, to, { recursive: true });
  for (const name of readdirSync(to)) if (/\.ya?ml$/.test(name)) trustIn(join(to, name), env);
}

/**
 * The user of `env` (default: the tests' own config folder) trusts, as it is now, the project the
 * folder `path` is in, or the file `path` (a graph run by path) with what it brings along:
 * `loopgraph trust PATH`.
 */
export function trustIn(path: string, env: NodeJS.ProcessEnv = cleanEnv()): void {
  if (statSync(path).isFile()) trustFile(path, env);
  else trustProject(projectRoot(path), env);
}

/** For `cleanEnv`: the sandbox as this machine offers it (bubblewrap where it can start, else none). */
export const SANDBOX_AS_FOUND: NodeJS.ProcessEnv = { LOOPGRAPH_SANDBOX: undefined };

/** Tests that start the CLI run only in the e2e project (see vitest.config.ts). */
function inE2eProject(): void {
  if (process.env.VITEST && process.env.TESTS_PROJECT !== "e2e") {
    throw new Error("this test file starts the CLI: list it in the e2e project of vitest.config.ts");
  }
}

/** Starts the built CLI as a real process. Only in the e2e project (see vitest.config.ts). */
export function spawnCli(args: string[], options: CliOptions = {}): ChildProcess {
  inE2eProject();
  const asUser =
    options.user === undefined ? [] : ["setpriv", `--reuid=${options.user}`, `--regid=${options.user}`, "--clear-groups", "--"];
  const limited = options.fileSizeLimit === undefined ? [] : ["prlimit", `--fsize=${options.fileSizeLimit}`, "--"];
  const [file, ...rest] = [...asUser, ...limited, process.execPath, CLI, ...args];
  return spawn(file!, rest, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export function collect(child: ChildProcess): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolvePromise) => {
    child.on("close", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return collect(spawnCli(args, options));
}

/** `loopgraph run coder --queue` of `thread` in the workspace `dir`, answered by `script`, auto-approved, on the store `env` names. */
export function queueCoderRun(thread: string, dir: string, script: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const args = ["run", "coder", "--queue", "--thread", thread, "--task", "append", "--workspace", dir];
  return runCli([...args, "--model", `scripted:${script}`, "--approval", "auto"], { env });
}

/**
 * `loopgraph <args>` run from tsc's unbundled output (dist/src: each module a file of its own), with
 * the ES modules it loaded (file URLs, from tests/fixtures/trace-modules.mjs): what a command loads.
 * The CLI's bundle evaluates the same modules (esbuild keeps each import that is lazy here lazy).
 */
export async function modulesLoadedBy(args: string[], options: CliOptions = {}): Promise<CliResult & { modules: string[] }> {
  inE2eProject();
  const { path: dir, remove } = createTempDir("loopgraph-modules-");
  try {
    const trace = join(dir, "modules.txt");
    const script = `const { main } = await import(${JSON.stringify(join(ROOT, "dist/src/cli/main.js"))});
const code = await main(["node", "loopgraph", ...${JSON.stringify(args)}]);
process.stdout.write("", () => process.exit(code));`;
    const child = spawn(
      process.execPath,
      [`--import=${join(ROOT, "tests/fixtures/trace-modules.mjs")}`, "--input-type=module", "-e", script],
      {
        cwd: options.cwd ?? ROOT,
        env: { ...(options.env ?? cleanEnv()), TRACE_MODULES_FILE: trace },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const result = await collect(child);
    const modules = [
      ...new Set(
        readFileSync(trace, "utf8")
          .split("\n")
          .filter((url) => url.startsWith("file:")),
      ),
    ];
    return { ...result, modules };
  } finally {
    remove();
  }
}

/** Resolves once a line of the child's stdout satisfies `match` (e.g. a `--json` event). */
export function waitForLine(child: ChildProcess, match: (line: string) => boolean, timeoutMs = 40_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`no matching line within ${timeoutMs} ms; got:\n${buffer}`)), timeoutMs);
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const found = buffer.split("\n").find(match);
      if (found !== undefined) {
        clearTimeout(timer);
        resolvePromise(found);
      }
    });
  });
}

export function parseEvents(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function hasStackTrace(text: string): boolean {
  return /^\s+at .+\(.+:\d+:\d+\)$/m.test(text) || /^\s+at .+:\d+:\d+$/m.test(text);
}

/** The full state at a thread's last checkpoint, read through `loopgraph inspect --json`. */
export async function lastCheckpointState<T = Record<string, unknown>>(db: string, thread: string): Promise<T> {
  const history = await runCli(["inspect", thread, "--json", "--db", db]);
  if (history.code !== 0) throw new Error(`inspect ${thread} failed: ${history.stderr}`);
  const last = (JSON.parse(history.stdout) as { checkpoints: Array<{ checkpointId: string }> }).checkpoints.at(-1)!;
  const state = await runCli(["inspect", thread, "--checkpoint", last.checkpointId, "--json", "--db", db]);
  if (state.code !== 0) throw new Error(`inspect ${thread} --checkpoint failed: ${state.stderr}`);
  return (JSON.parse(state.stdout) as { values: T }).values;
}

/**
 * Runs git in `cwd` with a test identity. GIT_OPTIONAL_LOCKS=0: the test's own `git status` must
 * not refresh the index it compares.
 */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
  });
}

/**
 * Polls `read` until `done` accepts its value, and returns that value, or the last one read after
 * `timeoutMs`, for the test to assert on. For conditions that take a moment to come true (a
 * killed process to die, a process to reach a state), instead of a fixed sleep.
 */
export async function eventually<T>(read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Whether `command args…` runs (e.g. `tmux -V`): tests that need the tool skip without it. */
export function hasCommand(command: string, ...args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** `arg` quoted for a POSIX shell command line. */
export const shellQuote = (arg: string): string => `'${arg.replace(/'/g, "'\\''")}'`;

/** Whether a process whose command line starts with `command` is running (not the shell that runs it; pgrep exits 1 when none is). */
export function processAlive(command: string): boolean {
  try {
    execFileSync("pgrep", ["-f", `^${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
