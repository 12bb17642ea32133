/**
 * The Coder's grep tool against ripgrep itself, on a generated source tree (10,000 files; 96,500
 * with --full, with 569,350 matching lines, the sizes), each measured side by side in
 * this process run, the tool called in-process through `executeToolCall` as the Coder calls it:
 * - grep_no_match: a pattern found nowhere, against raw `rg PATTERN` in the tree. Target ≤ 1.5×.
 * - grep_first_500: a pattern on ~6 lines of every file, the tool's first 500 results, against
 *   `rg PATTERN | head -501` (ripgrep killed by the closed pipe). Target ≤ 3×.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { FULL, median, report } from "./lib.js";
import { findRipgrep, grepTool } from "../src/tools/grep.js";
import { executeToolCall } from "../src/tools/registry.js";
import { NO_SANDBOX } from "../src/tools/sandbox.js";
import type { ToolContext } from "../src/tools/types.js";

const FILES = FULL ? 96_500 : 10_000;
const LINES_PER_FILE = 100;
const FILES_PER_DIR = 100;
const RUNS = FULL ? 5 : 7;
const MATCHING = "needle";
const NOWHERE = "zq_no_such_token_qz";

/**
 * A repository-like tree: `.git`, a `.gitignore`, directories of 100 files of 100 lines (~6 KB),
 * 6 lines of every file (5 of every tenth) holding MATCHING; an ignored `build/` and a
 * `node_modules/` that neither side searches.
 */
function makeTree(root: string): number {
  mkdirSync(join(root, ".git"), { recursive: true });
  writeFileSync(join(root, ".gitignore"), "build/\n*.log\n");
  let matches = 0;
  for (let i = 0; i < FILES; i++) {
    const dir = join(root, `pkg${Math.floor(i / (FILES_PER_DIR * 20))}`, `mod${Math.floor(i / FILES_PER_DIR) % 20}`);
    if (i % FILES_PER_DIR === 0) mkdirSync(dir, { recursive: true });
    const hits = i % 10 === 9 ? 5 : 6;
    const lines: string[] = [];
    for (let line = 0; line < LINES_PER_FILE; line++) {
      if (line % 16 === 3 && Math.floor(line / 16) < hits)
        lines.push(`  const ${MATCHING}_${line} = lookup(table_${i}, ${line}); // the ${MATCHING} line`);
      else lines.push(`  let value_${line} = transform(argument_${i}, ${line}) + accumulate(previous_${line});`);
    }
    matches += hits;
    writeFileSync(join(dir, `file${i % FILES_PER_DIR}.ts`), `${lines.join("\n")}\n`);
  }
  for (const skipped of ["build", "node_modules/dep"]) {
    mkdirSync(join(root, skipped), { recursive: true });
    writeFileSync(join(root, skipped, "x.js"), `${MATCHING}\n`.repeat(1000));
  }
  return matches;
}

/** CPU time (user + system, ms) of this process and of its waited-for children, from /proc (Linux). */
function cpuMs(): { self: number; children: number } {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const tick = 10; // USER_HZ is 100 on Linux
  return { self: (Number(fields[11]) + Number(fields[12])) * tick, children: (Number(fields[13]) + Number(fields[14])) * tick };
}

interface SideBySide {
  ours: number;
  anchor: number;
  /** Mean CPU per run (this process and its children), less sensitive than wall time to a busy machine. */
  cpu: { ours: number; anchor: number };
}

/** Median of `runs` alternating timings of `ours` and `anchor` (so both see the same load), in ms. */
async function sideBySide(runs: number, ours: () => Promise<void>, anchor: () => void): Promise<SideBySide> {
  const times = { ours: [] as number[], anchor: [] as number[] };
  const cpu = { ours: 0, anchor: 0 };
  for (let i = 0; i < runs; i++) {
    let before = cpuMs();
    let started = performance.now();
    anchor();
    times.anchor.push(performance.now() - started);
    let after = cpuMs();
    cpu.anchor += after.self + after.children - before.self - before.children;
    before = after;
    started = performance.now();
    await ours();
    times.ours.push(performance.now() - started);
    after = cpuMs();
    cpu.ours += after.self + after.children - before.self - before.children;
  }
  return { ours: median(times.ours), anchor: median(times.anchor), cpu: { ours: cpu.ours / runs, anchor: cpu.anchor / runs } };
}

const cpuNote = (row: SideBySide) => `cpu per run: ours ${row.cpu.ours.toFixed(0)} ms, anchor ${row.cpu.anchor.toFixed(0)} ms`;

const rg = findRipgrep(process.env);
if (!rg) throw new Error("grep-bench needs ripgrep (rg) on the PATH: apt-get install ripgrep");
const dir = mkdtempSync(join(tmpdir(), "loopgraph-grep-bench-"));
try {
  const tree = join(dir, "tree");
  const matches = makeTree(tree);
  const ctx: ToolContext = { workspace: tree, env: process.env, artifactsDir: join(dir, "artifacts"), sandbox: NO_SANDBOX };
  let calls = 0;
  const grep = async (pattern: string, expected: RegExp) => {
    const result = await executeToolCall({ id: `bench-${++calls}`, name: "grep", args: { pattern } }, ctx, [grepTool]);
    if (!result.ok || !expected.test(result.content))
      throw new Error(`grep ${pattern}: unexpected result: ${result.content.slice(0, 300)}`);
  };
  const raw = (command: string) => {
    // stdin closed: ripgrep given no path searches a piped stdin instead of the directory.
    const result = spawnSync("sh", ["-c", command], { cwd: tree, encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
    if (result.status !== 0 && result.status !== 1) throw new Error(`${command} failed (${result.status}): ${result.stderr}`);
  };
  // Warm the page cache (and the tool's module graph) before timing.
  raw(`'${rg}' --no-config ${NOWHERE} >/dev/null`);
  await grep(NOWHERE, /^No matches/);

  const noMatch = await sideBySide(
    RUNS,
    () => grep(NOWHERE, /^No matches/),
    () => raw(`'${rg}' --no-config ${NOWHERE}`),
  );
  report({
    name: "grep_no_match",
    ours: noMatch.ours,
    anchor: noMatch.anchor,
    unit: "ms",
    maxRatio: 1.5,
    note: `${FILES} files; anchor: rg PATTERN; ${cpuNote(noMatch)}`,
  });

  const first500 = await sideBySide(
    RUNS * 3,
    () => grep(MATCHING, /^Showing the first 500 matching lines/),
    () => raw(`'${rg}' --no-config ${MATCHING} | head -501 >/dev/null`),
  );
  report({
    name: "grep_first_500",
    ours: first500.ours,
    anchor: first500.anchor,
    unit: "ms",
    maxRatio: 3,
    note: `${FILES} files, ${matches} matching lines; anchor: rg PATTERN | head -501; ${cpuNote(first500)}`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
