/**
 * The Coder's grep tool against ripgrep itself, on a generated source tree (10,000 files; 96,500
 * with --full, with 569,350 matching lines, the sizes), each measured side by side in
 * this process run, the tool called in-process through `executeToolCall` as the Coder calls it:
 * - grep_no_match: a pattern found nowhere, against raw `rg PATTERN` in the tree. Target ≤ 1.5×.
 * - grep_first_500: a pattern on ~6 lines of every file, the tool's first 500 results, against
 *   `rg PATTERN | head -501` (ripgrep killed by the closed pipe). Target ≤ 3×.
 * - grep_capped_500_of_15k: a second tree of 15,000 small files each holding one matching line:
 *   the tool's first 500 results (from 500 files), against `rg PATTERN | head -501`. Target ≤ 1.5×.
 * Each pair runs interleaved (interleavedMs); the notes give the CPU per call of each side (this
 * process and its children), less sensitive than wall time to a busy machine.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FULL, interleavedMs, type PairedFigures, report } from "./lib.js";
import { findRipgrep, grepTool } from "../src/tools/grep.js";
import { executeToolCall } from "../src/tools/registry.js";
import { NO_SANDBOX } from "../src/tools/sandbox.js";
import type { ToolContext } from "../src/tools/types.js";

const FILES = FULL ? 96_500 : 10_000;
const CAPPED_FILES = 15_000;
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

/** A repository-like tree of CAPPED_FILES files of 20 lines, each with one line holding MATCHING. */
function makeSparseTree(root: string): void {
  mkdirSync(join(root, ".git"), { recursive: true });
  for (let i = 0; i < CAPPED_FILES; i++) {
    const dir = join(root, `pkg${Math.floor(i / (FILES_PER_DIR * 20))}`, `mod${Math.floor(i / FILES_PER_DIR) % 20}`);
    if (i % FILES_PER_DIR === 0) mkdirSync(dir, { recursive: true });
    const lines = Array.from({ length: 20 }, (_, line) =>
      line === 7
        ? `  const ${MATCHING} = lookup(table_${i}); // the ${MATCHING} line`
        : `  let value_${line} = transform(argument_${i}, ${line});`,
    );
    writeFileSync(join(dir, `file${i % FILES_PER_DIR}.ts`), `${lines.join("\n")}\n`);
  }
}

/** CPU time (user + system, ms) of this process and of its waited-for children, from /proc (Linux). */
function cpuMs(): { self: number; children: number } {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const tick = 10; // USER_HZ is 100 on Linux
  return { self: (Number(fields[11]) + Number(fields[12])) * tick, children: (Number(fields[13]) + Number(fields[14])) * tick };
}

interface SideBySide extends PairedFigures {
  /** Mean CPU per call (this process and its waited-for children). */
  cpu: { ours: number; anchor: number };
}

/** `interleavedMs` of `ours` and `anchor`, with each side's mean CPU per call. */
async function sideBySide(rounds: number, ours: () => Promise<void>, anchor: () => void): Promise<SideBySide> {
  const cpu = { ours: 0, anchor: 0 };
  const counted = (side: "ours" | "anchor", fn: () => unknown) => async () => {
    const before = cpuMs();
    await fn();
    const after = cpuMs();
    cpu[side] += after.self + after.children - before.self - before.children;
  };
  const figures = await interleavedMs(rounds, counted("ours", ours), counted("anchor", anchor));
  return { ...figures, cpu: { ours: cpu.ours / rounds, anchor: cpu.anchor / rounds } };
}

const cpuNote = (row: SideBySide) => `cpu per call: ours ${row.cpu.ours.toFixed(0)} ms, anchor ${row.cpu.anchor.toFixed(0)} ms`;

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
  const raw = (command: string, cwd = tree) => {
    // stdin closed: ripgrep given no path searches a piped stdin instead of the directory.
    const result = spawnSync("sh", ["-c", command], { cwd, encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
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
    ...noMatch,
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
    ...first500,
    unit: "ms",
    maxRatio: 3,
    note: `${FILES} files, ${matches} matching lines; anchor: rg PATTERN | head -501; ${cpuNote(first500)}`,
  });

  const capped = join(dir, "capped");
  makeSparseTree(capped);
  const cappedCtx: ToolContext = { ...ctx, workspace: capped };
  const cappedGrep = async () => {
    const result = await executeToolCall({ id: `bench-${++calls}`, name: "grep", args: { pattern: MATCHING } }, cappedCtx, [grepTool]);
    if (!result.ok || !/^Showing the first 500 matching lines \(in 500 files\)/.test(result.content))
      throw new Error(`grep ${MATCHING}: unexpected result: ${result.content.slice(0, 300)}`);
  };
  raw(`'${rg}' --no-config ${MATCHING} >/dev/null`, capped);
  await cappedGrep();
  const capped500 = await sideBySide(RUNS * 3, cappedGrep, () => raw(`'${rg}' --no-config ${MATCHING} | head -501 >/dev/null`, capped));
  report({
    name: "grep_capped_500_of_15k",
    ...capped500,
    unit: "ms",
    maxRatio: 1.5,
    note: `${CAPPED_FILES} files of one matching line each; anchor: rg PATTERN | head -501; ${cpuNote(capped500)}`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
