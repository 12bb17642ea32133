/**
 * The `loopgraph` command's launcher (src/cli/launcher.ts): the CLI bundle compiled with the V8
 * code cache the build made for the kind of command, used only when it belongs to this bundle
 * and V8 takes it; the bundle's text read as the encoding its header names.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceMappedStack } from "../src/cli/debug-stack.js";
import {
  BUNDLE_FILE,
  CACHE_PROFILES,
  COMMANDS,
  bundleHeader,
  cacheFile,
  cacheFileBytes,
  cacheProfile,
  loadCli,
  type CacheProfile,
} from "../src/cli/launcher.js";
import { CLI, ROOT, cleanEnv, runCli } from "./helpers/cli.js";
import { tempDir } from "./helpers/workspace.js";

const BUILT = join(ROOT, "dist/cli");
const LAUNCHER = join(ROOT, "dist/src/cli/launcher.js");

/** What became of the code cache when a fresh `node` (as the CLI is started: no options, the tests' environment) loads the bundle in `dir`. */
function cacheUse(dir: string, profile: CacheProfile): string {
  const script = `const { loadCli } = await import(${JSON.stringify(LAUNCHER)}); console.log(loadCli(${JSON.stringify(dir)}, ${JSON.stringify(profile)}).cache);`;
  return execFileSync(process.execPath, ["--input-type=module", "-e", script], { env: cleanEnv(), encoding: "utf8" }).trim();
}

/** A copy of the built CLI (command, bundle, caches) in a directory of its own. */
function copyOfBuild(): string {
  const dir = tempDir("loopgraph-launcher-");
  for (const file of ["loopgraph.js", BUNDLE_FILE, ...CACHE_PROFILES.map(cacheFile)]) copyFileSync(join(BUILT, file), join(dir, file));
  return dir;
}

describe("the cache for a command line", () => {
  const profile = (...args: string[]): CacheProfile => cacheProfile(["node", "loopgraph", ...args]);

  it("runs, resumes, chats and replays take the run cache", () => {
    for (const command of ["run", "resume", "chat", "replay", "rewind", "worker"]) expect(profile(command, "x")).toBe("run");
  });

  it("inspect with a thread takes the inspect cache; the thread list and the rest take the base one", () => {
    expect(profile("inspect", "t1")).toBe("inspect");
    expect(profile("--db", "store.db", "inspect", "t1", "--diff")).toBe("inspect");
    expect(profile("ui")).toBe("inspect");
    expect(profile("inspect")).toBe("base");
    expect(profile("inspect", "--json")).toBe("base");
    expect(profile("status", "t1")).toBe("base");
    expect(profile("--version")).toBe("base");
    expect(profile()).toBe("base");
    // A thread named like a command is an argument, not the command.
    expect(profile("status", "run")).toBe("base");
  });

  it("knows every command the CLI has", async () => {
    const help = await runCli(["--help"]);
    const listed = help.stdout
      .split("Commands:")[1]!
      .split("\n")
      .map((line) => /^  (\S+)/.exec(line)?.[1])
      .filter(Boolean);
    expect(listed.length).toBeGreaterThan(10);
    expect(new Set(listed)).toEqual(COMMANDS);
  });
});

describe("the build's code caches", () => {
  it("are taken by this Node for every kind of command, started as the tests start the CLI", () => {
    for (const profile of CACHE_PROFILES) expect(cacheUse(BUILT, profile), profile).toBe("accepted");
  });

  it("the bundle is ASCII, read without decoding UTF-8", () => {
    expect(readFileSync(join(BUILT, BUNDLE_FILE), "latin1").split("\n", 1)[0]).toMatch(/^\/\/loopgraph-build:[0-9a-f]{32}:A$/);
    expect(readFileSync(join(BUILT, BUNDLE_FILE)).some((byte) => byte > 0x7f)).toBe(false);
  });

  it("a cache of another build is not used, one V8 refuses is not either, and the command works without them", async () => {
    const dir = copyOfBuild();
    const base = join(dir, cacheFile("base"));
    const stored = readFileSync(base);
    writeFileSync(base, cacheFileBytes("0".repeat(32), stored.subarray(32)));
    expect(cacheUse(dir, "base")).toBe("stale");
    const run = join(dir, cacheFile("run"));
    writeFileSync(run, cacheFileBytes(readFileSync(run, "latin1").slice(0, 32), Buffer.alloc(4096, 7)));
    expect(cacheUse(dir, "run")).toBe("rejected");
    rmSync(join(dir, cacheFile("inspect")));
    expect(cacheUse(dir, "inspect")).toBe("absent");
    for (const args of [["--help"], ["run", "--help"], ["inspect", "some-thread", "--help"]]) {
      const result = spawnSync(process.execPath, [join(dir, "loopgraph.js"), ...args], { env: cleanEnv(), encoding: "utf8" });
      expect(result.status, args.join(" ")).toBe(0);
      expect(result.stdout).toContain("Usage: loopgraph");
    }
  });

  it("without its bundle the command says so in one line and exits 1", () => {
    const dir = tempDir("loopgraph-launcher-");
    copyFileSync(CLI, join(dir, "loopgraph.js"));
    const result = spawnSync(process.execPath, [join(dir, "loopgraph.js"), "--version"], { env: cleanEnv(), encoding: "utf8" });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^loopgraph: cannot start: .*loopgraph\.cjs/);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("the built command runs on it", async () => {
    const result = await runCli(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
  });
});

describe("a bundle's text", () => {
  const bundle = (header: string, body: string): string => {
    const dir = tempDir("loopgraph-launcher-");
    writeFileSync(join(dir, BUNDLE_FILE), `${header}\n${body}`);
    return dir;
  };
  const body = 'exports.main = async () => { globalThis.__launched = "\\u00e9\\u2212" + "é−"; return 0; };';

  it("marked UTF-8 is read as UTF-8", async () => {
    const { main, cache } = loadCli(bundle(bundleHeader("a".repeat(32), false), body), "base");
    expect(cache).toBe("absent");
    expect(await main([])).toBe(0);
    expect((globalThis as { __launched?: string }).__launched).toBe("é−é−");
  });

  it("marked ASCII is read byte for byte (so the build marks only an ASCII bundle so)", async () => {
    const { main } = loadCli(bundle(bundleHeader("b".repeat(32), true), body), false);
    await main([]);
    expect((globalThis as { __launched?: string }).__launched).toBe(`é−${Buffer.from("é−").toString("latin1")}`);
  });

  it("without the header it is refused", () => {
    expect(() => loadCli(bundle("// something else", body), false)).toThrow(/not a loopgraph build: run `npm run build`/);
  });
});

describe("a debug stack (LOOPGRAPH_DEBUG)", () => {
  /** Line and column (from 1) where `text` first occurs in `file`. */
  const placeOf = (file: string, text: string): { line: number; column: number } => {
    const content = readFileSync(file, "latin1");
    const before = content.slice(0, content.indexOf(text));
    return { line: before.split("\n").length, column: before.length - before.lastIndexOf("\n") };
  };
  const INTERNAL_ERROR = "internal error: ";

  it("names places in the minified bundle by their file, line and column in the TypeScript sources", () => {
    const bundle = join(BUILT, BUNDLE_FILE);
    const inBundle = placeOf(bundle, INTERNAL_ERROR);
    const inSource = placeOf(join(ROOT, "src/cli/main.ts"), INTERNAL_ERROR);
    const stack = [
      "Error: boom",
      `    at runMain (${bundle}:${inBundle.line}:${inBundle.column})`,
      "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ].join("\n");
    const mapped = sourceMappedStack(stack, ROOT).split("\n");
    expect(mapped[0]).toBe("Error: boom");
    // The template literal the text is in starts a little before it: the same line of main.ts.
    expect(mapped[1]).toMatch(new RegExp(`^    at runMain \\(src/cli/main\\.ts:${inSource.line}:\\d+\\)$`));
    expect(mapped[2]).toBe(stack.split("\n")[2]);
    // Outside the directory given, the source's absolute path.
    expect(sourceMappedStack(stack, "/elsewhere").split("\n")[1]).toContain(`(${join(ROOT, "src/cli/main.ts")}:${inSource.line}:`);
  });

  it("an installed copy's stack names its own files, not the build machine's (the code cache names the bundle as it was built)", () => {
    const dir = copyOfBuild();
    copyFileSync(join(BUILT, `${BUNDLE_FILE}.map`), join(dir, `${BUNDLE_FILE}.map`));
    // No node_modules beside the copy: the store's module cannot load, an internal error with LOOPGRAPH_DEBUG's stack.
    const result = spawnSync(process.execPath, [join(dir, "loopgraph.js"), "inspect", "--db", join(dir, "store.db")], {
      cwd: dir,
      env: cleanEnv({ LOOPGRAPH_DEBUG: "1" }),
      encoding: "utf8",
    });
    expect(result.stderr).toMatch(/^loopgraph: internal error: /);
    expect(result.stderr).toContain(`${join(dir, "..", "..", "src/store/sqlite/backend.ts")}:`);
    expect(result.stderr).not.toContain(ROOT);
  });

  it("maps a file: URL of tsc's output through its own map, and leaves places with no map as they are", () => {
    const built = join(ROOT, "dist/src/cli/main.js");
    const inBuilt = placeOf(built, INTERNAL_ERROR);
    const inSource = placeOf(join(ROOT, "src/cli/main.ts"), INTERNAL_ERROR);
    const unmapped = `    at helper (${join(ROOT, "package.json")}:3:4)`;
    const stack = `Error: boom\n    at file://${built}:${inBuilt.line}:${inBuilt.column}\n${unmapped}\n    at async Promise.all (index 0)`;
    const mapped = sourceMappedStack(stack, ROOT).split("\n");
    expect(mapped[1]).toMatch(new RegExp(`^    at src/cli/main\\.ts:${inSource.line}:\\d+$`));
    expect(mapped.slice(2)).toEqual([unmapped, "    at async Promise.all (index 0)"]);
  });
});
