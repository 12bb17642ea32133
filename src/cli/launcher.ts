import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Script } from "node:vm";

/**
 * How the `loopgraph` command starts. The CLI is one CommonJS bundle (dist/cli/loopgraph.cjs),
 * compiled here with a V8 code cache the build made for it: V8 then reads the bytecode of the
 * functions a command runs instead of parsing megabytes of source on every start, which Node 20
 * offers for no ES module. V8 reads a cache whole, so there is one per kind of command (see
 * `cacheProfile`), each made by running such commands: a status check does not read the bytecode
 * of a run. A cache is used only when it was made from this very bundle (the build's id, on the
 * bundle's first line and at the cache's start) and V8 accepts it (the same Node and V8 flags);
 * otherwise the bundle is compiled from its source. Bundle and caches are the build's own files,
 * beside this launcher: nothing a run writes is read here.
 */

export const BUNDLE_FILE = "loopgraph.cjs";

/** The code caches: `run` for commands that run graphs, `inspect` for reading a thread's history, `base` for the rest. */
export const CACHE_PROFILES = ["run", "inspect", "base"] as const;
export type CacheProfile = (typeof CACHE_PROFILES)[number];

export const cacheFile = (profile: CacheProfile): string => `${BUNDLE_FILE}.${profile}.cache`;

const RUN_COMMANDS = new Set(["run", "resume", "chat", "replay", "rewind", "worker", "eval", "serve"]);
/** Every command of the CLI (main.ts; a test compares this list with `loopgraph --help`). */
export const COMMANDS: ReadonlySet<string> = new Set([
  ...RUN_COMMANDS,
  "inspect",
  "ui",
  "wait",
  "patch",
  "send",
  "stop",
  "status",
  "config",
  "mcp",
  "init",
  "demo",
  "doctor",
  "trust",
  "completion",
  "threads",
  "graphs",
  "help",
]);

/**
 * The cache for a command line (process.argv): its command is the first argument that names one.
 * A guess made before the arguments are parsed: a wrong one costs start-up time, nothing else.
 */
export function cacheProfile(argv: readonly string[]): CacheProfile {
  const args = argv.slice(2);
  const at = args.findIndex((arg) => COMMANDS.has(arg));
  const command = args[at];
  if (command !== undefined && RUN_COMMANDS.has(command)) return "run";
  // `inspect <thread>` reads a history; `inspect` alone lists threads, as light as a status.
  if ((command === "inspect" && args[at + 1] !== undefined && !args[at + 1]!.startsWith("-")) || command === "ui") return "inspect";
  return "base";
}

/** The bundle's first line, `//loopgraph-build:<id>:<A|U>`: its build id, and A when all its text is ASCII, U for UTF-8. */
const HEADER = /^\/\/loopgraph-build:([0-9a-f]{32}):([AU])\n/;
const BUILD_ID_BYTES = 32;

/** A cache file's bytes: the id of the build it was made from, then V8's data (`Script.createCachedData()`). */
export function cacheFileBytes(buildId: string, cachedData: Buffer): Buffer {
  return Buffer.concat([Buffer.from(buildId, "latin1"), cachedData]);
}

export function bundleHeader(id: string, ascii: boolean): string {
  return `//loopgraph-build:${id}:${ascii ? "A" : "U"}`;
}

/** What became of the code cache: used, refused by V8, absent, or made for another build. */
export type CacheUse = "accepted" | "rejected" | "absent" | "stale";

export interface LoadedCli {
  main(argv: string[]): Promise<number>;
  /** The compiled bundle: its `createCachedData()` is what the build stores as the cache. */
  script: Script;
  buildId: string;
  cache: CacheUse;
}

/** Compiles and runs the bundle in `dir` with the code cache of `profile` (none when false); returns its `main`. */
export function loadCli(dir: string, profile: CacheProfile | false): LoadedCli {
  const file = join(dir, BUNDLE_FILE);
  const bytes = readFileSync(file);
  const header = HEADER.exec(bytes.toString("latin1", 0, 64));
  if (!header) throw new Error(`${file} is not a loopgraph build: run \`npm run build\``);
  const buildId = header[1]!;
  // ASCII text read as latin1 is the same string, made without decoding UTF-8 (a third of the time).
  const source = bytes.toString(header[2] === "A" ? "latin1" : "utf8");
  let cachedData: Buffer | undefined;
  let cache: CacheUse = "absent";
  if (profile) {
    try {
      const stored = readFileSync(join(dir, cacheFile(profile)));
      if (stored.toString("latin1", 0, BUILD_ID_BYTES) === buildId) cachedData = stored.subarray(BUILD_ID_BYTES);
      else cache = "stale";
    } catch {
      // No cache (a build that could not make one): compiled from the source.
    }
  }
  // The wrapper CommonJS gives a module, on the first line so that line numbers stay the source's;
  // and this module's `import()`, which the bundle's code cannot use of its own (see package.ts, importAtRunTime).
  const script = new Script(`(function (exports, require, module, __filename, __dirname, __loopgraphImport) {${source}\n})`, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
  });
  if (cachedData) cache = script.cachedDataRejected ? "rejected" : "accepted";
  const module = { exports: {} as { main?: LoadedCli["main"] } };
  const lentImport = (specifier: string): Promise<unknown> => import(specifier);
  (script.runInThisContext() as (...args: unknown[]) => void).call(
    module.exports,
    module.exports,
    createRequire(file),
    module,
    file,
    dir,
    lentImport,
  );
  const { main } = module.exports;
  if (typeof main !== "function") throw new Error(`${file} exports no main: run \`npm run build\``);
  return { main, script, buildId, cache };
}
