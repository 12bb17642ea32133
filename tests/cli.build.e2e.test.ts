/**
 * The build as `npx loopgraph` in a checkout meets it: npm runs `prepare` when it installs the
 * checkout into its npx cache, and a person may stop that with Ctrl-C. An up-to-date build is left
 * as it is, and an interrupted build leaves the previous one working.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { collect, eventually, ROOT, runCli } from "./helpers/cli.js";

const DIST = join(ROOT, "dist");
const BUNDLE = join(DIST, "cli", "loopgraph.cjs");
/** The folders an unfinished build is making (scripts/bundle.mjs). */
const buildingFolders = (): string[] => readdirSync(DIST).filter((name) => name.startsWith(".building-"));

describe("the build", () => {
  it("npm's prepare leaves an up-to-date build as it is", () => {
    const before = statSync(BUNDLE).mtimeMs;
    const prepare = spawnSync("npm", ["run", "prepare", "--silent"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(prepare.status, prepare.stderr).toBe(0);
    expect(prepare.stdout).toContain("the build is up to date");
    expect(statSync(BUNDLE).mtimeMs).toBe(before);
  }, 90_000);

  it("interrupted, it leaves the previous build working", async () => {
    const build = spawn(process.execPath, [join(ROOT, "scripts/bundle.mjs")], {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const ended = collect(build);
    try {
      // Stopped as soon as it has begun to replace anything.
      const begun = await eventually(() => buildingFolders().length > 0 || !existsSync(BUNDLE), Boolean, 60_000);
      expect(begun).toBe(true);
      process.kill(-build.pid!, "SIGKILL");
      await ended;
      const version = await runCli(["--version"]);
      expect(version.code, version.stderr).toBe(0);
    } finally {
      if (build.exitCode === null && build.signalCode === null) process.kill(-build.pid!, "SIGKILL");
      for (const name of buildingFolders()) rmSync(join(DIST, name), { recursive: true, force: true });
    }
  }, 90_000);
});
