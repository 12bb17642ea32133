/**
 * `npm run bench [-- --full]`: every benchmark, one after the other (never two at once: they
 * time each other otherwise), each in its own process; the checkpoint store's comparison last.
 * Each prints `bench: …` lines (see lib.ts); this runner echoes everything and ends, on stderr,
 * with a count of the rows that met their target. It exits 1 when a benchmark could not run.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FIXTURES_ENV } from "./lib.js";

/** The benchmarks, in order: each a file of dist/bench/. */
const BENCHES = [
  "status-bench",
  "resume-bench",
  "inspect-bench",
  "chat-bench",
  "sandbox-bench",
  "tools-bench",
  "engine-bench",
  "memory-bench",
  "parallel-bench",
  "grep-bench",
  "store-bench",
  "postgres-bench",
  "workers-bench",
  "checkpoint-bench",
];

const here = fileURLToPath(new URL(".", import.meta.url));
// The loop threads several benchmarks measure, built once for all of them (see FIXTURES_ENV).
const fixtures = mkdtempSync(join(tmpdir(), "loopgraph-bench-fixtures-"));
process.env[FIXTURES_ENV] = fixtures;
const extra = process.argv.slice(2);
let rows = 0;
let met = 0;
let broken = 0;

for (const bench of BENCHES) {
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", join(here, `${bench}.js`), ...extra], { stdio: ["ignore", "pipe", "inherit"] });
    let pending = "";
    child.stdout.on("data", (chunk: Buffer) => {
      process.stdout.write(chunk);
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith("bench: ")) continue;
        rows++;
        if (line.includes(" ok=yes")) met++;
      }
    });
    child.on("close", (status) => resolve(status ?? 1));
  });
  if (code !== 0) {
    broken++;
    console.error(`bench-run: ${bench} failed (exit ${code})`);
  }
}
rmSync(fixtures, { recursive: true, force: true });
// On stderr: stdout ends with the checkpoint store's line.
console.error(`bench-run: ${met} of ${rows} rows met their target${broken ? `; ${broken} benchmark(s) failed to run` : ""}`);
process.exitCode = broken ? 1 : 0;
