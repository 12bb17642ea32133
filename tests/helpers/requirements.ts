/**
 * The optional system programs some tests need. A new user's machine has Node and git; every test
 * whose subject is one of these programs is skipped without it, with one line naming the program
 * and the Debian package that brings it. Each program's `LOOPGRAPH_REQUIRE_*` variable (set by
 * .ci/run in its full pass) turns that skip into a failure, so CI skips nothing.
 *
 *   describe.skipIf(lacks("sandbox", "the shell tool in bubblewrap"))("the shell tool in bubblewrap", () => { … });
 */
import { POSTGRES_REQUIRED, postgresUnavailable } from "../../bench/postgres-server.js";
import { findRipgrep } from "../../src/tools/grep.js";
import { sandboxProblem } from "../../src/tools/sandbox.js";
import { hasCommand } from "./cli.js";

/** Debian's Chromium, which playwright-core drives (its own browser download cannot be reached). */
export const CHROMIUM = "/usr/bin/chromium";

interface OptionalProgram {
  /** What a test needs, as the skip line names it. */
  program: string;
  /** The Debian package that brings it. */
  debian: string;
  /** The variable that makes its absence a failure. */
  require: string;
  /** Why it cannot be used here, or undefined when it can. */
  missing(): string | undefined;
}

const PROGRAMS = {
  sandbox: {
    program: "bubblewrap (the OS sandbox)",
    debian: "bubblewrap",
    require: "LOOPGRAPH_REQUIRE_SANDBOX",
    // Not merely installed: it must start (user namespaces can be disabled).
    missing: () => sandboxProblem({})?.reason,
  },
  ripgrep: {
    program: "ripgrep (rg)",
    debian: "ripgrep",
    require: "LOOPGRAPH_REQUIRE_RIPGREP",
    missing: () => (findRipgrep({ PATH: process.env.PATH }) ? undefined : "rg is not on the PATH"),
  },
  tmux: {
    program: "tmux",
    debian: "tmux",
    require: "LOOPGRAPH_REQUIRE_TMUX",
    missing: () => (hasCommand("tmux", "-V") ? undefined : "tmux is not on the PATH"),
  },
  postgres: {
    program: "PostgreSQL",
    debian: "postgresql",
    require: "LOOPGRAPH_REQUIRE_POSTGRES",
    missing: () => postgresUnavailable(),
  },
  python3: {
    program: "Python 3",
    debian: "python3",
    require: "LOOPGRAPH_REQUIRE_PYTHON3",
    missing: () => (hasCommand("python3", "--version") ? undefined : "python3 is not on the PATH"),
  },
  chromium: {
    program: "Chromium",
    debian: "chromium",
    require: "LOOPGRAPH_REQUIRE_CHROMIUM",
    // It must run: Debian's /usr/bin/chromium is a script that starts /usr/lib/chromium/chromium.
    missing: () => (hasCommand(CHROMIUM, "--version") ? undefined : `${CHROMIUM} is missing or does not start`),
  },
} satisfies Record<string, OptionalProgram>;

export type Optional = keyof typeof PROGRAMS;

const known = new Map<Optional, string | undefined>();

/** Why `need` cannot be used here (asked once per process), or undefined when it can. */
export function missing(need: Optional): string | undefined {
  if (!known.has(need)) known.set(need, PROGRAMS[need].missing());
  return known.get(need);
}

/** Whether the tests must not skip for want of `need` (its LOOPGRAPH_REQUIRE_* variable is 1). */
export function required(need: Optional): boolean {
  return need === "postgres" ? POSTGRES_REQUIRED : process.env[PROGRAMS[need].require] === "1";
}

/**
 * Whether the tests `what` must be skipped for want of `need`: true, after one line on stderr that
 * names the program and its Debian package, when it is missing; a missing program that is
 * required (CI) throws instead, failing the file.
 */
export function lacks(need: Optional, what: string): boolean {
  const why = missing(need);
  if (why === undefined) return false;
  const { program, debian, require } = PROGRAMS[need];
  if (required(need))
    throw new Error(`${what} need ${program}, and ${require}=1 forbids skipping them: ${why} (Debian package: ${debian})`);
  const install = why.includes("apt-get install") ? "" : ` (apt-get install ${debian})`;
  console.warn(`skipping ${what}: ${program} is needed, and ${why}${install}`);
  return true;
}
