import { existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, git, hasStackTrace, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { gatedScript, historyOf, run, startRun, type RunPlace, type RunSpec } from "./helpers/e2e.js";
import { fingerprint } from "./helpers/fingerprint.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/snapshots");

/** A repository with c.txt and a non-executable run.sh committed, and an untracked notes.txt. */
function repo(): Workspace {
  const created = tempWorkspace({
    git: true,
    files: { "c.txt": "committed\r\nwith CRLF\r\n", "run.sh": "#!/bin/sh\necho hi\n", ".gitignore": "*.log\n" },
  });
  writeFileSync(join(created.dir, "notes.txt"), "untracked, mine\n");
  return created;
}

const coder = (thread: string, script: string): RunSpec => ({
  graph: "coder",
  task: "edit files",
  thread,
  script: join(SCRIPTS, script),
  approval: "auto",
});
const runCoder = (ws: RunPlace, thread: string, script: string, env?: NodeJS.ProcessEnv) =>
  run(ws, coder(thread, script), env ? { env } : {});

const rewind = (ws: { db: string }, ...args: string[]) => runCli(["rewind", ...args, "--db", ws.db]);

interface Point {
  seq: number;
  checkpointId: string;
  checkpointPrefix: string;
  tool: string;
  paths?: string[];
}

async function points(ws: { db: string }, thread: string): Promise<Point[]> {
  const listed = await rewind(ws, thread, "--list", "--json");
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout) as Point[];
}

/** The user's side of the repository: what must be exactly as it was. */
function userRepository(dir: string) {
  return {
    head: git(dir, "rev-parse", "HEAD"),
    config: git(dir, "config", "--list", "--local"),
    dotGit: fingerprint(join(dir, ".git")),
  };
}

const files = (dir: string) => fingerprint(dir, (path) => path === ".git" || path === ".loopgraph");
const isExecutable = (path: string): boolean => (statSync(path).mode & 0o100) !== 0;

describe("workspace snapshots and rewind (real git, real processes)", () => {
  it("rewinds the files to a checkpoint after edits and a shell deletion; hand-made files, git status and .git are untouched", async () => {
    const ws = repo();
    const before = files(ws.dir);
    const status = git(ws.dir, "status", "--porcelain");
    const user = userRepository(ws.dir);

    const run = await runCoder(ws, "snap", "edits.script.yaml");
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(parseEvents(run.stdout).filter((e) => e.type === "warning")).toEqual([]);
    expect(existsSync(join(ws.dir, "c.txt"))).toBe(false);
    expect(isExecutable(join(ws.dir, "run.sh"))).toBe(true);
    writeFileSync(join(ws.dir, "hand-made.txt"), "I wrote this after the run\n");

    const steps = await points(ws, "snap");
    expect(steps.map((p) => [p.seq, p.tool, p.paths])).toEqual([
      [1, "write_file", ["a.txt"]],
      [2, "edit_file", ["a.txt"]],
      [3, "write_file", ["sub/b.txt"]],
      [4, "shell", ["c.txt", "run.sh"]],
    ]);

    // To the checkpoint of the second step (after the first edit), by its short prefix.
    const middle = await rewind(ws, "snap", steps[1]!.checkpointPrefix);
    expect(middle.code, middle.stderr).toBe(0);
    expect(middle.stdout).toContain("restored a.txt");
    expect(middle.stdout).toContain("deleted sub/b.txt");
    expect(middle.stdout).toContain("recreated c.txt");
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(ws.dir, "sub"))).toBe(false);
    expect(readFileSync(join(ws.dir, "c.txt"))).toEqual(Buffer.from("committed\r\nwith CRLF\r\n"));
    expect(isExecutable(join(ws.dir, "run.sh"))).toBe(false);

    // To the checkpoint of the first edit step: the files exactly as before the run.
    const start = await rewind(ws, "snap", steps[0]!.checkpointId, "--json");
    expect(start.code, start.stderr).toBe(0);
    expect(JSON.parse(start.stdout)).toMatchObject({
      threadId: "snap",
      checkpointId: steps[0]!.checkpointId,
      dryRun: false,
      changes: [{ action: "delete", path: "a.txt" }],
    });
    const after = files(ws.dir);
    expect(after["hand-made.txt"]).toBeDefined();
    delete after["hand-made.txt"];
    expect(after).toEqual(before);
    expect(readFileSync(join(ws.dir, "hand-made.txt"), "utf8")).toBe("I wrote this after the run\n");
    const lines = (text: string) => text.split("\n").filter(Boolean).sort();
    expect(lines(git(ws.dir, "status", "--porcelain"))).toEqual(lines(`${status}?? hand-made.txt\n`));
    expect(userRepository(ws.dir)).toEqual(user);
  });

  it("rewinds to a root checkpoint, and --dry-run lists the changes without making them", async () => {
    const ws = repo();
    const run = await runCoder(ws, "dry", "edits.script.yaml");
    expect(run.code, run.stderr).toBe(0);
    const roots = (await historyOf(ws.db, "dry")).checkpoints;
    const first = roots[0]!.checkpointId;
    const last = roots.at(-1)!.checkpointId;

    const unchanged = files(ws.dir);
    const dry = await rewind(ws, "dry", first, "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.split("\n").filter((line) => /^(restore|delete|recreate) /.test(line))).toEqual([
      "delete a.txt",
      "recreate c.txt",
      "restore run.sh",
      "delete sub/b.txt",
    ]);
    expect(dry.stdout).toContain("nothing was changed");
    expect(files(ws.dir)).toEqual(unchanged);

    // After the Coder finished, no file-changing step ran: nothing to do.
    const nothing = await rewind(ws, "dry", last);
    expect(nothing.code, nothing.stderr).toBe(0);
    expect(nothing.stdout).toContain("nothing to rewind");
    expect(files(ws.dir)).toEqual(unchanged);

    const real = await rewind(ws, "dry", first);
    expect(real.code, real.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);
    expect(readFileSync(join(ws.dir, "c.txt"), "utf8")).toBe("committed\r\nwith CRLF\r\n");
    // Rewinding again finds the files already as they were.
    const again = await rewind(ws, "dry", first, "--dry-run");
    expect(again.stdout).toContain("nothing to rewind");
  });

  it("lists the snapshot points; bad threads and checkpoints are one-line errors with exit code 2", async () => {
    const ws = repo();
    expect((await runCoder(ws, "errs", "edits.script.yaml")).code).toBe(0);
    const listed = await rewind(ws, "errs", "--list");
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^#\s+CHECKPOINT\s+NODE\s+TOOL\s+CHANGED$/);
    expect(lines[4]).toMatch(/^4\s+\S+\s+coder\s+shell\s+c\.txt, run\.sh$/);

    const history = await historyOf(ws.db, "errs");
    const cases: Array<[string[], RegExp]> = [
      [["nope", "--list"], /no thread "nope"/],
      [["nope", "abc"], /no thread "nope"/],
      [["errs", "ffffffff-nope"], /no checkpoint of thread "errs" matches "ffffffff-nope"/],
      [["errs", history.checkpoints[0]!.checkpointId.slice(0, 4)], /more than one checkpoint of thread "errs" matches/],
      [["errs"], /which checkpoint\? .*--list/],
    ];
    for (const [args, message] of cases) {
      const result = await rewind(ws, ...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
  });

  it("snapshots a workspace that is not a git repository, without creating a .git in it", async () => {
    const ws = tempWorkspace({ files: { "c.txt": "committed\r\nwith CRLF\r\n", "run.sh": "#!/bin/sh\necho hi\n" } });
    symlinkSync("c.txt", join(ws.dir, "link-to-c"));
    const before = files(ws.dir);
    const run = await runCoder(ws, "plain", "edits.script.yaml");
    expect(run.code, run.stderr).toBe(0);
    const [first] = await points(ws, "plain");
    const rewound = await rewind(ws, "plain", first!.checkpointId);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(files(ws.dir)).toEqual(before);
    expect(existsSync(join(ws.dir, ".git"))).toBe(false);
  });

  it("a run without git on PATH still finishes, with one warning, and rewind says why it cannot help", async () => {
    const ws = repo();
    const bin = tempWorkspace({ prefix: "loopgraph-nogit-" }).dir;
    const run = await runCoder(ws, "nogit", "one-write.script.yaml", cleanEnv({ PATH: bin }));
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("written by the agent\n");
    const warnings = parseEvents(run.stdout).filter((e) => e.type === "warning");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/snapshots are off .*git is not installed/);
    expect(parseEvents(run.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "finished" });

    const result = await rewind(ws, "nogit", "--list");
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/thread "nogit" has no workspace snapshots: .*git was missing/);
  });

  it("refuses to rewind a thread while it runs in another process (a dry run is fine)", async () => {
    const ws = repo();
    // After its write, the Coder waits at its gate until the test is done with the running thread.
    const { script, open } = gatedScript(ws, join(SCRIPTS, "slow.script.yaml"));
    const running = startRun(ws, { ...coder("busy", "slow.script.yaml"), script, task: "t" });
    await running.waitForEvent("tool_result");
    const [first] = await points(ws, "busy");
    const refused = await rewind(ws, "busy", first!.checkpointId);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/thread "busy" is running in process \d+/);
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(true);
    const dry = await rewind(ws, "busy", first!.checkpointId, "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("delete a.txt");
    open("gate-coder");
    expect((await running.done).code).toBe(0);
    const after = await rewind(ws, "busy", first!.checkpointId);
    expect(after.code, after.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);
  });
});
