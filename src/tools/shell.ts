import { spawn } from "node:child_process";
import { createReadStream, createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { z } from "zod";
import { STATE_DIR } from "../project.js";
import { StreamRedactor } from "../runs/redact.js";
import { ensureStateDir } from "../runs/state-dir.js";
import { agentEnvironment } from "./environment.js";
import { protectedEntries, protectedPaths, undoCreated } from "./protected-entries.js";
import { availableSandbox, watchedBash } from "./sandbox.js";
import { artifactFileName, newArtifactPath } from "./truncate.js";
import { ToolError, type ToolContext, type ToolDefinition } from "./types.js";

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 600_000;
const DEFAULT_KILL_GRACE_MS = 2_000;
/** After the command exits, how long background processes it left may keep its stdout/stderr open. */
const DRAIN_AFTER_EXIT_MS = 500;
/** Per stream: up to this much output stays in memory; beyond it, all of it goes to a spool file. */
const MEMORY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Output passed on live (tool_output events) per stream of a command: what a person can follow. */
const LIVE_LIMIT_BYTES = 256 * 1024;
/** Per stream, once spooled: what stays in memory for the model's view. */
const VIEW_HEAD_BYTES = 1024 * 1024;
const VIEW_TAIL_BYTES = 1024 * 1024;

/** Process groups still running, killed if loopgraph itself exits (they are detached, so nothing else would). */
const liveGroups = new Set<number>();
process.on("exit", () => {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
});

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * One output stream of the command, with the run's secrets redacted as it arrives: kept in
 * memory up to MEMORY_LIMIT_BYTES; beyond that the whole stream is written to a spool file and
 * only its head and tail stay in memory.
 */
class OutputCapture {
  total = 0;
  private lastByte = 0x0a;
  private memory: Buffer[] = [];
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private spool?: { path: string; stream: WriteStream };
  /** A failed spool write (disk full ...), reported when the command is done. */
  private spoolError?: Error;

  private readonly redactor: StreamRedactor;

  /** What is left of LIVE_LIMIT_BYTES for `onChunk`. */
  private liveLeft = LIVE_LIMIT_BYTES;

  constructor(
    private readonly spoolDir: string,
    private readonly label: string,
    secrets: readonly string[] = [],
    /** Told each redacted chunk as it arrives, up to LIVE_LIMIT_BYTES in all (the output shown live). */
    private readonly onChunk?: (text: string) => void,
  ) {
    this.redactor = new StreamRedactor(secrets);
  }

  get endsWithNewline(): boolean {
    return this.lastByte === 0x0a;
  }

  get spooled(): boolean {
    return this.spool !== undefined;
  }

  /** Takes a chunk; false asks the producer to pause until `onDrain`. */
  add(received: Buffer): boolean {
    return this.keep(this.redactor.write(received));
  }

  private keep(chunk: Buffer): boolean {
    if (chunk.length === 0) return true;
    if (this.onChunk && this.liveLeft > 0) {
      const shown = chunk.subarray(0, this.liveLeft);
      this.liveLeft -= shown.length;
      this.onChunk(shown.toString("utf8") + (this.liveLeft === 0 ? "\n[… the rest of this output is not shown live]\n" : ""));
    }
    this.total += chunk.length;
    this.lastByte = chunk[chunk.length - 1] ?? this.lastByte;
    if (!this.spool && this.total <= MEMORY_LIMIT_BYTES) {
      this.memory.push(chunk);
      return true;
    }
    const spool = this.spool ?? this.startSpool();
    this.keepTail(chunk);
    return spool.stream.write(chunk);
  }

  onDrain(resume: () => void): void {
    this.spool?.stream.once("drain", resume);
  }

  private startSpool() {
    mkdirSync(this.spoolDir, { recursive: true });
    const path = join(this.spoolDir, artifactFileName(this.label));
    const kept = Buffer.concat(this.memory);
    this.spool = { path, stream: createWriteStream(path) };
    this.spool.stream.on("error", (error) => (this.spoolError = error));
    this.spool.stream.write(kept);
    this.memory = [kept.subarray(0, VIEW_HEAD_BYTES)];
    this.keepTail(kept.subarray(VIEW_HEAD_BYTES));
    return this.spool;
  }

  private keepTail(chunk: Buffer): void {
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= VIEW_TAIL_BYTES) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  async finish(): Promise<void> {
    this.keep(this.redactor.end());
    if (this.spool) {
      this.spool.stream.end();
      // A spool that failed to write reported it already (its bytes are not kept); finishing goes on.
      await finished(this.spool.stream).catch(() => undefined);
    }
    if (this.spoolError) throw new ToolError("failed", `could not save the command's output: ${this.spoolError.message}`);
  }

  /** The text for the model: all of it, or head and tail around a note of what only the spool holds. */
  view(): string {
    const head = Buffer.concat(this.memory);
    if (!this.spool) return head.toString("utf8");
    const tail = Buffer.concat(this.tail).subarray(-VIEW_TAIL_BYTES);
    const dropped = this.total - head.length - tail.length;
    return `${head.toString("utf8")}\n[... ${dropped} bytes of this stream not kept in memory ...]\n${tail.toString("utf8")}`;
  }

  /** Appends the complete stream, byte for byte, to `out`. */
  async appendTo(out: FileHandle): Promise<void> {
    if (!this.spool) {
      await out.write(Buffer.concat(this.memory));
      return;
    }
    for await (const chunk of createReadStream(this.spool.path) as AsyncIterable<Buffer>) await out.write(chunk);
  }

  async dispose(): Promise<void> {
    if (this.spool) await rm(this.spool.path, { force: true });
  }
}

function pump(stream: Readable, capture: OutputCapture): void {
  stream.on("data", (chunk: Buffer) => {
    if (!capture.add(chunk)) {
      stream.pause();
      capture.onDrain(() => stream.resume());
    }
  });
}

type Ending =
  | { kind: "exited"; code: number | null; signal: NodeJS.Signals | null; lingering: boolean }
  | { kind: "timeout"; after: number }
  | { kind: "cancelled" };

function statusLine(ending: Ending): string {
  switch (ending.kind) {
    case "exited": {
      const status = ending.code !== null ? `exit code: ${ending.code}` : `killed by signal ${ending.signal}`;
      const note = ending.lingering
        ? "\nnote: background processes still hold stdout/stderr; what they print after the command exited is not shown " +
          "(redirect their output to a file)"
        : "";
      return status + note;
    }
    case "timeout":
      return `timed out after ${ending.after} ms: the command and every process it started were killed. Output until then:`;
    case "cancelled":
      return "cancelled: the command and every process it started were killed. Output until then:";
  }
}

/** The result text, as parts: literal text and captured streams. */
function layout(ending: Ending, stdout: OutputCapture, stderr: OutputCapture): (string | OutputCapture)[] {
  const parts: (string | OutputCapture)[] = [`${statusLine(ending)}\n`];
  for (const [label, capture] of [
    ["stdout", stdout],
    ["stderr", stderr],
  ] as const) {
    if (capture.total === 0) continue;
    parts.push(`--- ${label} ---\n`, capture);
    if (!capture.endsWithNewline) parts.push("\n");
  }
  if (stdout.total === 0 && stderr.total === 0) parts.push("(no output)\n");
  return parts;
}

/** Writes the complete result (every byte of both streams) to a new artifact. */
async function writeFullOutput(parts: (string | OutputCapture)[], artifactsDir: string): Promise<string> {
  const path = await newArtifactPath(artifactsDir, "shell");
  const out = await open(path, "w");
  try {
    for (const part of parts) {
      if (typeof part === "string") await out.write(part);
      else await part.appendTo(out);
    }
  } finally {
    await out.close();
  }
  return path;
}

interface RunOptions {
  timeoutMs: number;
  killGraceMs: number;
  /** Written to the command's stdin, which is then closed (default: no stdin). */
  input?: string;
  /** The workspace's paths the sandbox binds read-only (default: those protected now). */
  readOnly?: readonly string[];
}

/** Runs `command` to its end, a timeout or cancellation, capturing its output into `stdout` and `stderr`. */
async function runCommand(
  command: string,
  ctx: ToolContext,
  options: RunOptions,
  stdout: OutputCapture,
  stderr: OutputCapture,
): Promise<Ending> {
  // Credentials are loopgraph's, not the agent's: a command printing them would put them in the run's state and artifacts.
  const sandbox = ctx.sandbox ?? availableSandbox(ctx.env);
  const sandboxed = sandbox.wrap(
    watchedBash(command, sandbox.scope),
    ctx.workspace,
    { ...agentEnvironment(ctx.env), ...ctx.commandVariables },
    options.readOnly ?? protectedPaths(ctx.workspace),
  );
  // Its own process group: a timeout or cancellation kills the whole tree (with bubblewrap, its PID namespace).
  // Descriptor 3 is the watcher's lifeline: closed when loopgraph dies, or when it stops the command.
  const stdin = options.input === undefined ? "ignore" : "pipe";
  const child = spawn(sandboxed.file, sandboxed.args, {
    cwd: ctx.workspace,
    env: sandboxed.env,
    detached: true,
    stdio: [stdin, "pipe", "pipe", "pipe"],
  });
  const [, out, err, lifeline] = child.stdio as unknown as [null, Readable, Readable, Readable];
  lifeline.on("error", () => {
    // The lifeline only tells the command's watcher that loopgraph is gone: its end is the message.
  });
  if (child.stdin) {
    child.stdin.on("error", () => {
      // A command that does not read its input closes the pipe early: that is no failure.
    });
    child.stdin.end(options.input);
  }
  pump(out, stdout);
  pump(err, stderr);
  const closed = new Promise<boolean>((resolve) => child.once("close", () => resolve(true)));
  const waitClosed = (ms: number) => Promise.race([closed, sleep(ms).then(() => false)]);
  const stopReading = () => {
    out.destroy();
    err.destroy();
    lifeline.destroy();
  };

  const pgid = await new Promise<number>((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid!));
    child.once("error", reject);
  });
  liveGroups.add(pgid);
  recordGroup(() => ctx.commandGroups?.started(pgid));
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const ending = await Promise.race<Ending>([
      new Promise((resolve) => child.once("exit", (code, signal) => resolve({ kind: "exited", code, signal, lingering: false }))),
      new Promise((resolve) => (timer = setTimeout(() => resolve({ kind: "timeout", after: options.timeoutMs }), options.timeoutMs))),
      new Promise((resolve) => {
        onAbort = () => resolve({ kind: "cancelled" });
        if (ctx.signal?.aborted) onAbort();
        else ctx.signal?.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    if (ending.kind === "exited") {
      // Background processes that redirected their output may keep running, as in a terminal.
      if (!(await waitClosed(DRAIN_AFTER_EXIT_MS))) {
        ending.lingering = true;
        stopReading();
      }
    } else {
      lifeline.destroy();
      signalGroup(pgid, "SIGTERM");
      await waitClosed(options.killGraceMs);
      // Also reaches processes that ignore SIGTERM or do not hold our pipes.
      signalGroup(pgid, "SIGKILL");
      if (!(await waitClosed(options.killGraceMs))) stopReading();
    }
    await Promise.all([stdout.finish(), stderr.finish()]);
    return ending;
  } finally {
    clearTimeout(timer);
    if (onAbort) ctx.signal?.removeEventListener("abort", onAbort);
    liveGroups.delete(pgid);
    recordGroup(() => ctx.commandGroups?.ended(pgid));
  }
}

/** How a command given input ended (`runWithInput`), with its output (secrets redacted; a long stream cut to head and tail). */
export interface CommandOutcome {
  /** Null when it did not exit by itself (killed by a signal, a timeout, cancelled). */
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  stdout: string;
  stderr: string;
}

/**
 * Runs a bash command as the shell tool runs the agent's (the sandbox, the agent's environment,
 * the process group killed on timeout or cancellation), with `input` on its stdin (none when
 * undefined): for the user's hooks, and a Review's check command.
 */
export async function runWithInput(
  command: string,
  input: string | undefined,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<CommandOutcome> {
  const stdout = new OutputCapture(ctx.artifactsDir, "command-stdout", ctx.secrets);
  const stderr = new OutputCapture(ctx.artifactsDir, "command-stderr", ctx.secrets);
  try {
    const ending = await runCommand(command, ctx, { timeoutMs, killGraceMs: DEFAULT_KILL_GRACE_MS, input }, stdout, stderr);
    return {
      exitCode: ending.kind === "exited" ? ending.code : null,
      timedOut: ending.kind === "timeout",
      cancelled: ending.kind === "cancelled",
      stdout: stdout.view(),
      stderr: stderr.view(),
    };
  } finally {
    await Promise.all([stdout.dispose(), stderr.dispose()]);
  }
}

/** Records a command's group with its thread; a record that cannot be written (a busy store) does not stop the command. */
function recordGroup(write: () => void | Promise<void>): void {
  // Not awaited, and a failure (the store locked by another program, full, or its server gone) is
  // dropped, never an unhandled rejection: the group then dies with loopgraph through its watcher
  // only, and the step's own checkpoint write, which meets the same store, stops the run as documented.
  try {
    const written = write();
    if (written instanceof Promise) written.catch(() => undefined);
  } catch {
    // A store that throws at once: the same.
  }
}

const schema = z.strictObject({
  command: z.string().min(1).describe("Bash command line, run with `bash -c` in the workspace root"),
  timeout_ms: z
    .number()
    .int()
    .min(1)
    .max(MAX_TIMEOUT_MS)
    .optional()
    .describe(`Kill the command after this many milliseconds (default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS})`),
});

export interface ShellToolOptions {
  /** Between SIGTERM and SIGKILL when a command is stopped. */
  killGraceMs?: number;
}

export function createShellTool(options: ShellToolOptions = {}): ToolDefinition<z.infer<typeof schema>> {
  return {
    name: "shell",
    description:
      "Run a bash command in the workspace root (no terminal, stdin is empty: use non-interactive flags). Returns the exit " +
      "code, stdout and stderr; a non-zero exit code is reported, not an error. On timeout the command and every process it " +
      `started are killed. Default timeout ${DEFAULT_TIMEOUT_MS / 1000} s, at most ${MAX_TIMEOUT_MS / 1000} s. Long output is ` +
      "cut to its head and tail, with the full text saved to a file you can read_file.",
    effect: "execute",
    subject: { command: "command" },
    schema,
    async run({ command, timeout_ms = DEFAULT_TIMEOUT_MS }, ctx) {
      const live = ctx.onOutput;
      const stdout = new OutputCapture(ctx.artifactsDir, "shell-stdout", ctx.secrets, live && ((text) => live("stdout", text)));
      const stderr = new OutputCapture(ctx.artifactsDir, "shell-stderr", ctx.secrets, live && ((text) => live("stderr", text)));
      // The workspace's own .loopgraph/ exists before the command starts, so the sandbox binds it read-only.
      ensureStateDir(join(ctx.workspace, STATE_DIR));
      const before = protectedEntries(ctx.workspace);
      try {
        const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
        const ending = await runCommand(
          command,
          ctx,
          { timeoutMs: timeout_ms, killGraceMs, readOnly: protectedPaths(ctx.workspace, before) },
          stdout,
          stderr,
        );
        const parts = layout(ending, stdout, stderr);
        // The sandbox protects what was there; what the command made is undone (protected-entries.ts).
        for (const undone of undoCreated(ctx.workspace, before, protectedEntries(ctx.workspace))) parts.push(`\n${undone}\n`);
        const view = parts.map((part) => (typeof part === "string" ? part : part.view())).join("");
        const fullOutputFile = stdout.spooled || stderr.spooled ? await writeFullOutput(parts, ctx.artifactsDir) : undefined;
        if (ending.kind === "exited") return { content: view, ...(fullOutputFile ? { fullOutputFile } : {}) };
        throw new ToolError(ending.kind === "timeout" ? "timeout" : "failed", view, fullOutputFile);
      } finally {
        await Promise.all([stdout.dispose(), stderr.dispose()]);
      }
    },
  };
}

export const shellTool = createShellTool();
