import { spawn } from "node:child_process";
import { closeSync, createReadStream, mkdirSync, openSync, writev } from "node:fs";
import { open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { z } from "zod";
import { STATE_DIR } from "../project.js";
import { StreamRedactor } from "../runs/redact.js";
import { ensureStateDir } from "../runs/state-dir.js";
import { agentEnvironment } from "./environment.js";
import type { ReadHazard } from "../git/read-hazards.js";
import { protectedEntries, protectedPaths, removeReadHazards, undoCreated } from "./protected-entries.js";
import { countLines } from "./read-file.js";
import { availableSandbox, watchedBash } from "./sandbox.js";
import { addToSize, artifactFileName, DEFAULT_RESULT_BUDGET_CHARS, newArtifactPath } from "./truncate.js";
import { ToolError, type FullOutput, type TextSize, type ToolContext, type ToolDefinition } from "./types.js";

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 600_000;
const DEFAULT_KILL_GRACE_MS = 2_000;
/** After the command exits, how long background processes it left may keep its stdout/stderr open. */
const DRAIN_AFTER_EXIT_MS = 500;
/** Output passed on live (tool_output events) per stream of a command: what a person can follow. */
const LIVE_LIMIT_BYTES = 256 * 1024;

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

/** How much of one stream a capture keeps in memory. */
interface CaptureLimits {
  /** Up to this much output stays in memory; beyond it, all of it goes to a spool file. */
  memoryBytes: number;
  /** Once spooled: what stays in memory for the view, of its head and of its tail. */
  viewBytes: number;
}

/** What a hook or check command is shown of each stream (runWithInput): its result is not cut further. */
const COMMAND_LIMITS: CaptureLimits = { memoryBytes: 4 * 1024 * 1024, viewBytes: 1024 * 1024 };

/**
 * The shell tool's: its result is cut to the model's budget of characters (truncate.ts), half
 * of it from the head and half from the tail, so twice the budget in bytes (at least one
 * character per 3 bytes) of each end is all the view needs.
 */
function shellLimits(budgetChars: number): CaptureLimits {
  const viewBytes = Math.max(2 * budgetChars, 64 * 1024);
  return { memoryBytes: 2 * viewBytes, viewBytes };
}

/** Bytes a spool holds in memory (waiting for the disk) before it asks the command's output to pause. */
const SPOOL_BUFFER_BYTES = 1024 * 1024;
/**
 * A spool is written in batches of at least this much, with one `writev` each: a pipe gives
 * chunks of a few KB, each write of which would cost its own round trip to the disk thread.
 */
const SPOOL_BATCH_BYTES = 256 * 1024;

/** A file written as data arrives, in batches of SPOOL_BATCH_BYTES, without copying the chunks. */
class Spool {
  private readonly fd: number;
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private writing = false;
  private ending?: () => void;
  private waiting: (() => void)[] = [];
  /** A failed write (disk full ...): the bytes after it are not kept. */
  error?: Error;

  constructor(readonly path: string) {
    this.fd = openSync(path, "w");
  }

  /** Takes a chunk; false asks the producer to pause until `onDrain`. */
  write(chunk: Buffer): boolean {
    this.batch.push(chunk);
    this.batchBytes += chunk.length;
    if (!this.writing && this.batchBytes >= SPOOL_BATCH_BYTES) this.flush();
    return this.batchBytes < SPOOL_BUFFER_BYTES;
  }

  onDrain(resume: () => void): void {
    this.waiting.push(resume);
  }

  private flush(): void {
    const buffers = this.batch;
    const bytes = this.batchBytes;
    this.batch = [];
    this.batchBytes = 0;
    this.writing = true;
    writev(this.fd, buffers, (error, written) => {
      this.writing = false;
      if (!this.error && (error || written !== bytes)) this.error = error ?? new Error(`short write to ${this.path}`);
      if (this.batchBytes > 0 && (this.ending || this.batchBytes >= SPOOL_BATCH_BYTES)) this.flush();
      else if (this.ending) this.ending();
      if (this.batchBytes < SPOOL_BUFFER_BYTES) for (const resume of this.waiting.splice(0)) resume();
    });
  }

  /** Writes what is left and closes the file. */
  async end(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.ending = resolve;
      if (!this.writing) {
        if (this.batchBytes > 0) this.flush();
        else resolve();
      }
    });
    closeSync(this.fd);
  }
}

/**
 * One output stream of the command, with the run's secrets redacted as it arrives: kept in
 * memory up to its limit; beyond that the whole stream is written, as it arrives, to a spool
 * file in the artifacts folder (its section of the result first: `--- stdout ---`), and only its
 * head and tail stay in memory.
 */
class OutputCapture {
  total = 0;
  private lastByte = 0x0a;
  private memory: Buffer[] = [];
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private spool?: { file: Spool; size: TextSize; adopted: boolean };

  private readonly redactor: StreamRedactor;

  /** What is left of LIVE_LIMIT_BYTES for `onChunk`. */
  private liveLeft = LIVE_LIMIT_BYTES;

  constructor(
    private readonly spoolDir: string,
    /** The stream's name: `stdout` or `stderr`. */
    private readonly name: string,
    private readonly limits: CaptureLimits,
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
    if (!this.spool && this.total <= this.limits.memoryBytes) {
      this.memory.push(chunk);
      return true;
    }
    const spool = this.spool ?? this.startSpool();
    this.keepTail(chunk);
    addToSize(spool.size, chunk);
    return spool.file.write(chunk);
  }

  onDrain(resume: () => void): void {
    this.spool?.file.onDrain(resume);
  }

  /** The stream's section header in the result. */
  private get header(): string {
    return `--- ${this.name} ---\n`;
  }

  private startSpool() {
    mkdirSync(this.spoolDir, { recursive: true });
    const path = join(this.spoolDir, artifactFileName(`shell-${this.name}`));
    const kept = Buffer.concat(this.memory);
    const size: TextSize = { bytes: 0, newlines: 0, endsWithNewline: false };
    this.spool = { file: new Spool(path), size, adopted: false };
    for (const part of [Buffer.from(this.header), kept]) {
      addToSize(size, part);
      this.spool.file.write(part);
    }
    this.memory = [kept.subarray(0, this.limits.viewBytes)];
    this.keepTail(kept.subarray(this.limits.viewBytes));
    return this.spool;
  }

  private keepTail(chunk: Buffer): void {
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.limits.viewBytes) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  async finish(): Promise<void> {
    this.keep(this.redactor.end());
    await this.spool?.file.end();
    const failed = this.spool?.file.error;
    if (failed) throw new ToolError("failed", `could not save the command's output: ${failed.message}`);
  }

  /** The text for the model: all of it, or head and tail around a note of what only the spool holds. */
  view(): string {
    const head = Buffer.concat(this.memory);
    if (!this.spool) return head.toString("utf8");
    const tail = Buffer.concat(this.tail).subarray(-this.limits.viewBytes);
    const dropped = this.total - head.length - tail.length;
    return `${head.toString("utf8")}\n[... ${dropped} bytes of this stream not kept in memory ...]\n${tail.toString("utf8")}`;
  }

  /** The stream's section of the result (nothing when it printed nothing), as the model sees it. */
  viewSection(): string {
    return this.total === 0 ? "" : `${this.header}${this.view()}${this.endsWithNewline ? "" : "\n"}`;
  }

  /**
   * The finished spool, which already holds the stream's section (but for the newline a stream
   * not ending with one is given), to be the result's file: it is then not removed. With its size.
   */
  adoptSpool(): { path: string; size: TextSize } | undefined {
    if (!this.spool) return undefined;
    this.spool.adopted = true;
    return { path: this.spool.file.path, size: { ...this.spool.size } };
  }

  /** Appends the stream's complete section, byte for byte, to `out`, adding it to `size`. */
  async appendSectionTo(out: FileHandle, size: TextSize): Promise<void> {
    if (this.total === 0) return;
    const write = (bytes: Buffer | string) => writeCounted(out, size, bytes);
    if (!this.spool) await write(Buffer.concat([Buffer.from(this.header), ...this.memory]));
    else
      for await (const chunk of createReadStream(this.spool.file.path, { highWaterMark: SPOOL_BUFFER_BYTES }) as AsyncIterable<Buffer>)
        await write(chunk);
    if (!this.endsWithNewline) await write("\n");
  }

  async dispose(): Promise<void> {
    if (this.spool && !this.spool.adopted) await rm(this.spool.file.path, { force: true });
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

/** Writes `bytes` to `out`, adding them to `size`. */
async function writeCounted(out: FileHandle, size: TextSize, bytes: Buffer | string): Promise<void> {
  const buffer = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
  addToSize(size, buffer);
  await out.write(buffer);
}

/**
 * Writes the complete output (every byte of both streams, then `after`) to an artifact, the
 * status line left out (the view has it): stdout's spool, when it has one, with the rest
 * appended; else a new file.
 */
async function writeFullOutput(stdout: OutputCapture, stderr: OutputCapture, after: string, artifactsDir: string): Promise<FullOutput> {
  const adopted = stdout.adoptSpool();
  const file = adopted?.path ?? (await newArtifactPath(artifactsDir, "shell"));
  const size: TextSize = adopted?.size ?? { bytes: 0, newlines: 0, endsWithNewline: false };
  const out = await open(file, adopted ? "a" : "w");
  try {
    const write = (text: string) => writeCounted(out, size, text);
    if (!adopted) await stdout.appendSectionTo(out, size);
    else if (!stdout.endsWithNewline) await write("\n");
    await stderr.appendSectionTo(out, size);
    if (after) await write(after);
  } finally {
    await out.close();
  }
  return { file, size };
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

/** How a command ended, in words: `exited with 1`, `was stopped`, `timed out` (`after N s` given its timeout). */
export function endingText(outcome: { exitCode: number | null; timedOut?: boolean }, timeoutMs?: number): string {
  if (outcome.timedOut) return timeoutMs === undefined ? "timed out" : `timed out after ${Math.round(timeoutMs / 1000)} s`;
  return outcome.exitCode === null ? "was stopped" : `exited with ${outcome.exitCode}`;
}

/** A command's stdout then stderr, trimmed, cut to their last `chars` characters (`[…]` where cut): where test runners print their summary. */
export function outputTail(outcome: CommandOutcome, chars: number): string {
  const text = `${outcome.stdout}${outcome.stderr ? `\n${outcome.stderr}` : ""}`.trim();
  return text.length <= chars ? text : `[…]\n${text.slice(-chars)}`;
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
  const stdout = new OutputCapture(ctx.artifactsDir, "stdout", COMMAND_LIMITS, ctx.secrets);
  const stderr = new OutputCapture(ctx.artifactsDir, "stderr", COMMAND_LIMITS, ctx.secrets);
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
      const limits = shellLimits(ctx.resultBudgetChars ?? DEFAULT_RESULT_BUDGET_CHARS);
      const stdout = new OutputCapture(ctx.artifactsDir, "stdout", limits, ctx.secrets, live && ((text) => live("stdout", text)));
      const stderr = new OutputCapture(ctx.artifactsDir, "stderr", limits, ctx.secrets, live && ((text) => live("stderr", text)));
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
        const status = `${statusLine(ending)}\n`;
        const noOutput = stdout.total === 0 && stderr.total === 0 ? "(no output)\n" : "";
        // The sandbox protects what was there; what the command made is undone, and what would hang git or ripgrep removed (protected-entries.ts).
        const hazards: ReadHazard[] = [];
        const undone = undoCreated(ctx.workspace, before, protectedEntries(ctx.workspace, hazards));
        const after = noOutput + [...undone, ...removeReadHazards(ctx.workspace, hazards)].map((line) => `\n${line}\n`).join("");
        const view = status + stdout.viewSection() + stderr.viewSection() + after;
        const fullOutput =
          stdout.spooled || stderr.spooled
            ? { ...(await writeFullOutput(stdout, stderr, after, ctx.artifactsDir)), viewOnlyLines: countLines(status) }
            : undefined;
        if (ending.kind === "exited") return { content: view, ...(fullOutput ? { fullOutput } : {}) };
        throw new ToolError(ending.kind === "timeout" ? "timeout" : "failed", view, fullOutput);
      } finally {
        await Promise.all([stdout.dispose(), stderr.dispose()]);
      }
    },
  };
}

export const shellTool = createShellTool();
