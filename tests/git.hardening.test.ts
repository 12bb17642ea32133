/**
 * loopgraph's own git calls (the Review's baseline and diff in the user's repository, the
 * workspace snapshots) run nothing the agent planted in a repository's config or attributes:
 * no fsmonitor, hook, external diff, textconv or content filter.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { captureBaseline, changesSinceBaseline, diffSinceBaseline } from "../src/nodes/review/baseline.js";
import { openSnapshotRepository, SNAPSHOTS_GIT_DIR } from "../src/snapshots/shadow-repo.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** A program that leaves a canary (with its arguments and environment) outside the workspace when anything runs it. */
function plantProgram(ws: Workspace): { program: string; canary: string } {
  const canary = join(ws.root, "canary.txt");
  const program = join(ws.root, "evil.sh");
  writeFileSync(program, `#!/bin/sh\necho "ran: $0 $*" >> '${canary}'\nenv >> '${canary}'\ncat\n`);
  chmodSync(program, 0o755);
  return { program, canary };
}

/** Every way a repository's config can make git run a program during add, diff or checkout. */
function plantConfig(configFile: string, program: string, hooks: string): void {
  appendFileSync(
    configFile,
    [
      "[core]",
      `\tfsmonitor = ${program}`,
      `\thooksPath = ${hooks}`,
      "[diff]",
      `\texternal = ${program}`,
      '[diff "evil"]',
      `\ttextconv = ${program}`,
      '[filter "evil"]',
      `\tclean = ${program}`,
      `\tsmudge = ${program}`,
      "\trequired = true",
      "[commit]",
      "\tgpgSign = true",
      "[gpg]",
      `\tprogram = ${program}`,
      "",
    ].join("\n"),
  );
  mkdirSync(hooks, { recursive: true });
  for (const hook of ["pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction", "fsmonitor-watchman"]) {
    writeFileSync(join(hooks, hook), `#!/bin/sh\n'${program}' hook-${hook}\n`);
    chmodSync(join(hooks, hook), 0o755);
  }
}

describe("loopgraph's git calls and a planted repository config", () => {
  it("the Review's baseline and diff in the user's repository run no fsmonitor, hook, external diff, textconv or filter", async () => {
    const ws = tempWorkspace({ git: true, files: { "tracked.txt": "one\n" } });
    const { program, canary } = plantProgram(ws);
    plantConfig(join(ws.dir, ".git/config"), program, join(ws.dir, ".git/evil-hooks"));
    writeFileSync(join(ws.dir, ".gitattributes"), "* diff=evil filter=evil\n");
    process.env.LOOPGRAPH_TEST_SECRET_TOKEN = "canary-secret-0123456789";
    try {
      const baseline = await captureBaseline(ws.dir);
      appendFileSync(join(ws.dir, "tracked.txt"), "two\n");
      const diff = await diffSinceBaseline(ws.dir, baseline);
      expect(diff).toContain("+two");
      expect((await changesSinceBaseline(ws.dir, baseline)).files.map((file) => file.path)).toContain("tracked.txt");
    } finally {
      delete process.env.LOOPGRAPH_TEST_SECRET_TOKEN;
    }
    expect(existsSync(canary) ? readFileSync(canary, "utf8") : "").toBe("");
  });

  it("the snapshot repository runs none of them either, though its config was rewritten", async () => {
    const ws = tempWorkspace({ git: true, files: { "a.txt": "one\n" } });
    const { program, canary } = plantProgram(ws);
    const repo = await openSnapshotRepository(ws.dir);
    const config = join(ws.dir, SNAPSHOTS_GIT_DIR, "config");
    writeFileSync(config, readFileSync(config, "utf8").replace("fsmonitor = false", `fsmonitor = ${program}`));
    plantConfig(config, program, join(ws.dir, SNAPSHOTS_GIT_DIR, "evil-hooks"));
    writeFileSync(join(ws.dir, ".gitattributes"), "* filter=evil\n");
    const before = await repo.capture();
    writeFileSync(join(ws.dir, "a.txt"), "two\n");
    const after = await repo.capture();
    expect(await repo.diff(before, after)).toContainEqual({ path: "a.txt", status: "M" });
    await repo.keep([before, after], "test");
    await repo.checkout(before, ["a.txt"]);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(canary) ? readFileSync(canary, "utf8") : "").toBe("");
  });

  it("a snapshot lists the repository's filters once, by its first git command, and still overrides them all", async () => {
    const ws = tempWorkspace({ git: true, files: { "a.txt": "one\n" } });
    const { program, canary } = plantProgram(ws);
    const repo = await openSnapshotRepository(ws.dir);
    plantConfig(join(ws.dir, SNAPSHOTS_GIT_DIR, "config"), program, join(ws.dir, SNAPSHOTS_GIT_DIR, "evil-hooks"));
    writeFileSync(join(ws.dir, ".gitattributes"), "* filter=evil\n");
    // git, as loopgraph finds it on PATH, logging each command it runs.
    const bin = join(ws.root, "bin");
    const calls = join(ws.root, "git-calls.txt");
    mkdirSync(bin);
    writeFileSync(join(bin, "git"), `#!/bin/sh\necho "$*" >> '${calls}'\nexec ${gitPath()} "$@"\n`);
    chmodSync(join(bin, "git"), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      writeFileSync(join(ws.dir, "a.txt"), "two\n");
      await repo.capture();
    } finally {
      process.env.PATH = path;
    }
    const commands = readFileSync(calls, "utf8").trim().split("\n");
    expect(commands.length).toBeGreaterThan(2);
    expect(commands.filter((command) => command.includes("--get-regexp"))).toHaveLength(1);
    expect(commands.find((command) => / add /.test(command))).toContain("filter.evil.clean=");
    expect(existsSync(canary) ? readFileSync(canary, "utf8") : "").toBe("");
  });
});

describe("loopgraph's git calls and a planted special file", () => {
  it("a snapshot stops within seconds when a named pipe sits where git reads .gitignore, and the error names it, instead of hanging", async () => {
    const ws = tempWorkspace({ git: true, files: { "a.txt": "one\n" } });
    const repo = await openSnapshotRepository(ws.dir);
    mkdirSync(join(ws.dir, "sub"));
    execFileSync("mkfifo", [join(ws.dir, "sub/.gitignore")]);
    const started = Date.now();
    await expect(repo.capture()).rejects.toThrow(
      /^git add: sub\/\.gitignore is a named pipe \(FIFO\), which git reads and would wait on forever: remove it \(rm '.*sub\/\.gitignore'\) and try again$/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);
});

/** The git program on PATH. */
function gitPath(): string {
  return execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
}
