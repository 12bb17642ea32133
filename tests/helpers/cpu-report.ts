/**
 * What each test file costs in CPU, for finding what to make cheaper (docs/testing.md): with
 * `LOOPGRAPH_TEST_CPU_LOG=FILE`, each test file appends a line `path<TAB>worker CPU s<TAB>children's
 * CPU s<TAB>wall s` to FILE when it ends. Children's CPU is that of the processes the file's tests
 * started and waited for (the CLI, git, shells, runner processes and theirs), from Linux's
 * /proc/self/stat; a daemon (the PostgreSQL server) is not counted. A worker runs its files one
 * after another (vitest.config.ts), so a file's line counts from the end of the worker's previous
 * file: the first file of a worker also carries the worker's start. Without the variable (or off
 * Linux) it does nothing. A vitest setup file (vitest.config.ts `setupFiles`).
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { afterAll, expect } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

const LOG = process.env.LOOPGRAPH_TEST_CPU_LOG;
/** Clock ticks a second (`getconf CLK_TCK`): 100 on Linux. */
const TICKS = 100;

interface Usage {
  self: number;
  children: number;
  wall: number;
}

/** This process's CPU and that of its waited-for children, in ticks (fields 14–17 of /proc/self/stat). */
function usage(): Usage {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // After the command name in parentheses, from field 3 (the state) on.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const at = (field: number) => Number(fields[field - 3]);
  return { self: at(14) + at(15), children: at(16) + at(17), wall: performance.now() };
}

if (LOG && existsSync("/proc/self/stat")) {
  // Kept on the worker's global object: a worker's files share it, and each counts from the last one's end.
  const worker = globalThis as { loopgraphCpuMark?: Usage };
  worker.loopgraphCpuMark ??= usage();
  afterAll(() => {
    const start = worker.loopgraphCpuMark!;
    const end = usage();
    worker.loopgraphCpuMark = end;
    const file = relative(ROOT, expect.getState().testPath ?? "unknown");
    const seconds = (ticks: number) => (ticks / TICKS).toFixed(2);
    appendFileSync(
      LOG,
      `${file}\t${seconds(end.self - start.self)}\t${seconds(end.children - start.children)}\t${((end.wall - start.wall) / 1000).toFixed(1)}\n`,
    );
  });
}
