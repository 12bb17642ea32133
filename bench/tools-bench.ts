/**
 * The Coder's file and shell tools on large inputs, each called in-process through
 * `executeToolCall` as the Coder calls it, against the command-line program doing the same:
 * - read_file_offset_522k: read_file's 2000 lines from line 522,000 of a 50 MB file (second and
 *   later reads, the file's line index built), against `sed -n '522000,523999p;523999q'`.
 *   Target ≤ 1.2×. The note gives the first read (which builds the index).
 * - shell_output_10mb: the shell tool running a command that prints 10 MiB (in the OS sandbox
 *   where one can start, as the Coder runs it), against the same command run by `sh -c` in the
 *   same sandbox (like with like), its output read and dropped. Target ≤ 1.5×. The note names the
 *   sandbox and gives the process's RSS growth across the calls.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { interleavedMs, report } from "./lib.js";
import { executeToolCall } from "../src/tools/registry.js";
import { availableSandbox, NO_SANDBOX } from "../src/tools/sandbox.js";
import type { ToolContext } from "../src/tools/types.js";

const ROUNDS = 11;
/** As line-index.ts: a file changed within this long is not indexed yet. */
const SETTLE_MS = 2_000;

const workspace = realpathSync(mkdtempSync(join(tmpdir(), "loopgraph-tools-bench-")));
const ctx: ToolContext = { workspace, env: process.env, artifactsDir: join(workspace, ".loopgraph", "artifacts"), sandbox: NO_SANDBOX };
let calls = 0;
const call = async (name: string, args: Record<string, unknown>, expected: RegExp) => {
  const result = await executeToolCall({ id: `bench-${++calls}`, name, args }, ctx);
  if (!result.ok || !expected.test(result.content)) throw new Error(`${name}: unexpected result: ${result.content.slice(0, 300)}`);
  return result;
};
const run = (file: string, args: string[]) => {
  const result = spawnSync(file, args, { cwd: workspace, maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
  if (result.status !== 0) throw new Error(`${file} ${args.join(" ")} failed (${result.status}): ${result.stderr}`);
};

try {
  // ---- read_file far into a 50 MB file
  const lines = 1_050_000;
  const body = Array.from(
    { length: lines },
    (_, i) => `line ${i + 1}: ${"the quick brown fox jumps over the lazy dog, again".slice(0, 27 + (i % 16))}`,
  );
  writeFileSync(join(workspace, "big.log"), `${body.join("\n")}\n`);
  const written = performance.now();
  const mb = statSync(join(workspace, "big.log")).size / 1e6;
  const offset = 522_000;
  const read = () => call("read_file", { path: "big.log", offset }, /^522000\t/);
  const sed = () => run("sed", ["-n", `${offset},${offset + 1999}p;${offset + 1999}q`, "big.log"]);
  sed();
  await sleep(Math.max(0, SETTLE_MS - (performance.now() - written)));
  const started = performance.now();
  await read();
  const firstMs = performance.now() - started;
  const readRow = await interleavedMs(ROUNDS, read, sed);
  report({
    name: "read_file_offset_522k",
    ...readRow,
    unit: "ms",
    maxRatio: 1.2,
    note: `${mb.toFixed(0)} MB, ${lines} lines, 2000 lines read; anchor: sed -n; first read (builds the line index) ${firstMs.toFixed(0)} ms`,
  });

  // ---- shell printing 10 MiB
  const bytes = 10 * 1024 * 1024;
  const command = `yes 'the quick brown fox jumps over the lazy dog, again and again and again' | head -c ${bytes}`;
  const sandbox = availableSandbox(process.env);
  const shellCtx: ToolContext = { ...ctx, sandbox };
  const artifacts: string[] = [];
  const shell = async () => {
    const result = await executeToolCall({ id: `bench-${++calls}`, name: "shell", args: { command } }, shellCtx);
    if (!result.ok || !result.artifact || statSync(result.artifact).size < bytes)
      throw new Error(`shell: unexpected result: ${result.content.slice(0, 300)}`);
    rmSync(result.artifact);
  };
  const anchor = sandbox.wrap(["sh", "-c", command], workspace, { PATH: process.env.PATH }, []);
  const sh = () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(anchor.file, anchor.args, { cwd: workspace, env: anchor.env, stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.resume();
      child.stderr.resume();
      child.on("error", reject);
      child.on("close", () => resolve());
    });
  await shell();
  await sh();
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const shellRow = await interleavedMs(
    ROUNDS,
    async () => {
      await shell();
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    },
    sh,
  );
  for (const artifact of artifacts) rmSync(artifact);
  report({
    name: "shell_output_10mb",
    ...shellRow,
    unit: "ms",
    maxRatio: 1.5,
    note: `sandbox: ${sandbox.name}, both sides; anchor: sh -c, output read and dropped; RSS +${((rssPeak - rssBefore) / 1e6).toFixed(1)} MB`,
  });
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
