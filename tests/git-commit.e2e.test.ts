/**
 * `git_commit` and `run --commit` through the CLI, with the scripted model and real git: a
 * commit in `auto` (a planted hook running nothing), asked in `auto-edit` (paused, exit 3, then
 * approved on resume), none after a failed run or in a recorded replay, and `rewind` undoing them.
 */
import { appendFileSync, chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, git, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { resumeWith, run, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/git-commit");
const env = cleanEnv({ GIT_AUTHOR_NAME: "Ada User", GIT_AUTHOR_EMAIL: "ada@example.com" });

function repo(): Workspace {
  const ws = tempWorkspace({ git: true, files: { "tracked.txt": "one\n" } });
  git(ws.dir, "checkout", "-q", "-b", "feature");
  return ws;
}

const spec = (thread: string, script: string, approval: RunSpec["approval"], extra: string[] = []): RunSpec => ({
  graph: "coder",
  task: "Add a and b\n\nTwo files the user asked for.",
  thread,
  script: join(SCRIPTS, script),
  approval,
  extra,
});
const log = (dir: string) => git(dir, "log", "--format=%s|%an", "feature").trim().split("\n");
/** Without the fsmonitor the first test plants: the test's own git would run it. */
const status = (dir: string) => git(dir, "-c", "core.fsmonitor=false", "status", "--porcelain").trim();

describe("git_commit and run --commit (CLI, real git)", () => {
  it("commits in auto as the user, runs no planted hook, --commit takes the rest; a replay commits nothing; rewind undoes both", async () => {
    const ws = repo();
    const marker = join(ws.root, "hook-ran");
    for (const hook of ["pre-commit", "post-commit", "reference-transaction"]) {
      writeFileSync(join(ws.dir, ".git/hooks", hook), `#!/bin/sh\ntouch '${marker}'\n`);
      chmodSync(join(ws.dir, ".git/hooks", hook), 0o755);
    }
    appendFileSync(join(ws.dir, ".git/config"), `[core]\n\tfsmonitor = touch '${marker}'; false\n`);
    const start = git(ws.dir, "rev-parse", "HEAD").trim();

    const done = await run(ws, spec("auto", "commit.script.yaml", "auto", ["--commit"]), { env });
    expect(done.code, done.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(done.stderr).toMatch(/--commit: committed [0-9a-f]{12} on feature: 1 file/);
    expect(log(ws.dir)).toEqual(["Add a and b|Ada User", "Add a.txt|Ada User", "init|t"]);
    expect(git(ws.dir, "log", "-1", "--format=%B").trim()).toBe("Add a and b\n\nTwo files the user asked for.\n\nloopgraph thread: auto");
    expect(status(ws.dir)).toBe("");
    const committed = parseEvents(done.stdout).find((event) => event.type === "tool_result" && event.name === "git_commit");
    expect(committed).toMatchObject({ ok: true, result: expect.stringMatching(/^Committed [0-9a-f]{12} on feature: 1 file \(a\.txt\)/) });

    // A recorded replay answers git_commit from the record: no new commit.
    const tip = git(ws.dir, "rev-parse", "HEAD").trim();
    const replayed = await runCli(["replay", "auto", "--recorded", "--db", ws.db, "--json"], { env });
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(git(ws.dir, "rev-parse", "HEAD").trim()).toBe(tip);

    // Rewinding to the checkpoint the git_commit step started from: both commits undone, b.txt deleted, a.txt uncommitted again.
    const listed = await runCli(["rewind", "auto", "--list", "--json", "--db", ws.db], { env });
    const points = JSON.parse(listed.stdout) as { tool: string; checkpointId: string }[];
    expect(points.map((point) => point.tool)).toEqual(["write_file", "git_commit", "write_file"]);
    const rewound = await runCli(["rewind", "auto", points[1]!.checkpointId, "--db", ws.db], { env });
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(rewound.stdout).toMatch(new RegExp(`moved branch feature back from ${tip.slice(0, 12)} to ${start.slice(0, 12)}`));
    expect(git(ws.dir, "rev-parse", "feature").trim()).toBe(start);
    expect(status(ws.dir)).toBe("?? a.txt");
    expect(existsSync(join(ws.dir, "b.txt"))).toBe(false);
  });

  it("asks in auto-edit (paused, exit 3, nothing committed); approved on resume --commit, it commits; a failed run --commit commits nothing", async () => {
    const ws = repo();
    const paused = await run(ws, spec("ask", "commit.script.yaml", "auto-edit", ["--commit"]), { env });
    expect(paused.code, paused.stderr).toBe(3);
    expect(parseEvents(paused.stdout).find((event) => event.type === "interrupt")).toMatchObject({
      reason: "input",
      value: { kind: "approval", tool: "git_commit", details: "Add a.txt\n\n(paths: a.txt)" },
    });
    expect(log(ws.dir)).toEqual(["init|t"]);

    const resumed = await resumeWith({ env }, ws, "ask", "--approve", "--commit", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(log(ws.dir)).toEqual(["Add a and b|Ada User", "Add a.txt|Ada User", "init|t"]);

    const failed = await run(ws, spec("fails", "runs-out.script.yaml", "auto", ["--commit"]), { env });
    expect(failed.code).toBe(1);
    expect(failed.stderr).not.toContain("--commit");
    expect(log(ws.dir)).toHaveLength(3);
    expect(status(ws.dir)).toBe("?? c.txt");
  });
});
