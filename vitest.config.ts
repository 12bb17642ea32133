import { relative } from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Test files by kind, named so:
 * - `*.e2e.test.ts`: end-to-end files. They start the CLI or other processes (tmux, `script`, the
 *   demo), send signals or kill process groups; most of their time is spent waiting on those
 *   processes. `spawnCli` (tests/helpers/cli.ts) refuses to run outside the e2e project, so a file
 *   that starts the CLI must be named so.
 * - `*.isolated.test.ts`: files that replace modules (`vi.mock`) or globals: each runs in a fresh
 *   module graph. Every other file, unit or e2e, shares its worker's modules (no isolation): each
 *   would otherwise load the engine and LangChain again (about 1.5 s of CPU per file; most e2e
 *   files read the store through the library, tests/helpers/e2e.ts). So a file not named so must
 *   restore any global it changes (process.env, spies) before it ends.
 * - every other `*.test.ts`: a unit test.
 */
const E2E = ["tests/**/*.e2e.test.ts"];
const ISOLATED_UNITS = ["tests/**/*.isolated.test.ts"];

/**
 * The longest files, in the order to start them when the cache holds no timings of an earlier run
 * (a fresh clone, or after `npm ci`). Vitest would then start each project's largest files first,
 * and some of these are small.
 */
const LONGEST = [
  "tests/security/attack.e2e.test.ts",
  "tests/ui.browser.e2e.test.ts",
  "tests/workers.e2e.test.ts",
  "tests/coder.e2e.test.ts",
  "tests/replay.e2e.test.ts",
  "tests/cli.store.e2e.test.ts",
  "tests/replay.fork.e2e.test.ts",
  "tests/workers.outage.e2e.test.ts",
  "tests/repo-workspaces.e2e.test.ts",
  "tests/mediator.e2e.test.ts",
];

/** Vitest's order (see `maxWorkers` below); without any timings, the LONGEST files first in each project. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const path = (file: TestSpecification) => relative(this.ctx.config.root, file.moduleId);
    if (sorted.some((file) => this.ctx.cache.getFileTestResults(`${file.project.name}:${path(file)}`))) return sorted;
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    const rank = (file: TestSpecification) => {
      const at = LONGEST.indexOf(path(file));
      return at === -1 ? LONGEST.length : at;
    };
    return [...sorted].sort((a, b) => projects.indexOf(a.project.name) - projects.indexOf(b.project.name) || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // The checkpoint conformance suite registers its tests through vitest globals.
    globals: true,
    testTimeout: 60_000,
    // Each file's CPU, with LOOPGRAPH_TEST_CPU_LOG=FILE (docs/testing.md); nothing without it.
    setupFiles: ["tests/helpers/cpu-report.ts"],
    hookTimeout: 30_000,
    pool: "forks",
    // The projects share one pool (projects with different worker counts would run one after the
    // other). Files start by project name (e2e, isolated, unit), each project's longest first (as
    // the last run timed them): the slow e2e files start first, and a long isolated file does not
    // end the run alone. Most e2e time is spent waiting on child processes, so more workers than
    // the 2 cores keep both busy.
    maxWorkers: 4,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["tests/**/*.test.ts"], exclude: [...E2E, ...ISOLATED_UNITS], isolate: false },
      },
      {
        extends: true,
        test: { name: "isolated", include: ISOLATED_UNITS },
      },
      {
        extends: true,
        test: { name: "e2e", include: E2E, env: { TESTS_PROJECT: "e2e" }, isolate: false },
      },
    ],
  },
});
