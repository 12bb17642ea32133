/**
 * Queued runs on a repository (`run --queue --repo PATH|URL --ref REF`), with real git, real
 * worker processes and a throwaway PostgreSQL server. Each worker has its own scratch directory
 * (LOOPGRAPH_WORKSPACES), standing in for its own machine: a worker clones the repository, runs
 * the Coder in the clone and pushes the result to `loopgraph/<thread>`; without push access the
 * patch stays in the store (`loopgraph patch`); a run whose worker is killed is taken over by a
 * worker on another "machine", which makes the workspace again from the base commit and the
 * saved patch.
 */
import type { ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cleanEnv, collect, eventually, git, hasStackTrace, runCli, spawnCli } from "./helpers/cli.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

/** A repository with two files on `main`, as a bare "remote" `origin.git` beside a checkout nobody runs in. */
function origin(options: { pushDenied?: boolean } = {}) {
  const ws = tempWorkspace({
    git: true,
    files: { "README.md": "# project\n", "src.txt": "line 1\n", "bin.dat": Buffer.from([0, 255, 254, 1]) },
  });
  git(ws.dir, "branch", "-M", "main");
  const bare = join(ws.root, "origin.git");
  git(ws.root, "clone", "--quiet", "--bare", ws.dir, bare);
  if (options.pushDenied) {
    // A server that refuses every push: what "no push access" looks like from the client.
    writeFileSync(join(bare, "hooks", "pre-receive"), "#!/bin/sh\necho 'push denied for this user' >&2\nexit 1\n");
    chmodSync(join(bare, "hooks", "pre-receive"), 0o755);
  }
  return { root: ws.root, bare, main: git(bare, "rev-parse", "main").trim() };
}

/** A scripted Coder: one call per response, each a step (a checkpoint after each). */
function script(dir: string, name: string, calls: string[]): string {
  const path = join(dir, name);
  const steps = calls.map((call) => `  - node: coder\n    tool_calls:\n      - ${call}`).join("\n");
  writeFileSync(path, `responses:\n${steps}\n  - node: coder\n    content: "done"\n`);
  return path;
}

interface Worker {
  child: ChildProcess;
  done: ReturnType<typeof collect>;
  stderr: () => string;
}

function startWorker(env: NodeJS.ProcessEnv): Worker {
  const child = spawnCli(["worker"], { env });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = collect(child);
  onCleanup(() => void child.kill("SIGKILL"));
  return { child, done, stderr: () => stderr };
}

async function stopWorker(worker: Worker): Promise<void> {
  worker.child.kill("SIGTERM");
  expect((await worker.done).code, worker.stderr()).toBe(0);
}

/** A fresh "machine": its own scratch directory for workspaces. */
function machine(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
}

describeOnPostgres("queued runs on a repository", "the repository workspace tests", (server) => {
  it("a worker clones the repository, runs in the clone and pushes the result to loopgraph/<thread>; patch, replay and wait work from another directory", async () => {
    const repo = origin();
    const url = server().createDatabase("repo_push");
    const here = tempWorkspace();
    const coder = script(here.root, "coder.script.yaml", [
      `{ name: write_file, args: { path: hello.txt, contents: "hello from the coder\\n" } }`,
      `{ name: shell, args: { command: "echo line 2 >> src.txt && printf '\\\\001\\\\002' > new.bin" } }`,
    ]);
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: machine(repo.root, "m1") });
    const queued = await runCli(
      [
        "run",
        "coder",
        "--queue",
        "--thread",
        "on-repo",
        "--task",
        "add hello",
        "--repo",
        repo.bare,
        "--ref",
        "main",
        "--model",
        `scripted:${coder}`,
        "--approval",
        "auto",
      ],
      { env, cwd: here.dir },
    );
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout.trim()).toBe("on-repo");
    // Nothing was written where the run was queued.
    expect(readdirSync(here.dir)).toEqual([]);

    const worker = startWorker(env);
    const elsewhere = tempWorkspace();
    const other = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: machine(elsewhere.root, "m2") });
    const waited = await runCli(["wait", "on-repo", "--json"], { env: other, cwd: elsewhere.dir });
    expect(waited.code, waited.stderr + worker.stderr()).toBe(0);
    const result = JSON.parse(waited.stdout) as { status: string; result: { branch: string; commit: string; base: string; repo: string } };
    expect(result).toMatchObject({ status: "finished", result: { branch: "loopgraph/on-repo", base: repo.main, repo: repo.bare } });
    await stopWorker(worker);
    expect(worker.stderr()).toMatch(/on-repo: pushed [0-9a-f]{12} to loopgraph\/on-repo in /);

    // The branch: one commit on main holding the run's changes, binary files byte for byte; main is untouched.
    expect(git(repo.bare, "rev-parse", "main").trim()).toBe(repo.main);
    expect(git(repo.bare, "rev-parse", "loopgraph/on-repo").trim()).toBe(result.result.commit);
    expect(git(repo.bare, "rev-parse", "loopgraph/on-repo^").trim()).toBe(repo.main);
    expect(git(repo.bare, "show", "loopgraph/on-repo:hello.txt")).toBe("hello from the coder\n");
    expect(git(repo.bare, "show", "loopgraph/on-repo:src.txt")).toBe("line 1\nline 2\n");
    expect(git(repo.bare, "diff", "--name-status", "main", "loopgraph/on-repo").trim().split("\n").sort()).toEqual([
      "A\thello.txt",
      "A\tnew.bin",
      "M\tsrc.txt",
    ]);
    expect(git(repo.bare, "cat-file", "blob", "loopgraph/on-repo:new.bin")).toBe("\u0001\u0002");
    // Nothing of loopgraph's went into the commit.
    expect(
      git(repo.bare, "ls-tree", "-r", "--name-only", "loopgraph/on-repo")
        .split("\n")
        .filter((path) => path.startsWith(".loopgraph")),
    ).toEqual([]);

    // The patch, from another directory: applied to a fresh clone of main, it gives the branch's tree.
    const patch = await runCli(["patch", "on-repo"], { env: other, cwd: elsewhere.dir });
    expect(patch.code, patch.stderr).toBe(0);
    expect(patch.stderr).toContain("pushed");
    const fresh = join(elsewhere.root, "fresh");
    git(elsewhere.root, "clone", "--quiet", "--branch", "main", repo.bare, fresh);
    writeFileSync(join(elsewhere.root, "run.patch"), patch.stdout);
    git(fresh, "apply", "--binary", join(elsewhere.root, "run.patch"));
    git(fresh, "add", "-A");
    expect(git(fresh, "write-tree").trim()).toBe(git(repo.bare, "rev-parse", "loopgraph/on-repo^{tree}").trim());

    // A recorded replay needs no workspace: it runs from a directory that has none.
    const replay = await runCli(["replay", "on-repo", "--recorded", "--json"], { env: other, cwd: elsewhere.dir });
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain(`"divergences":[]`);
    // Its files are on the workers' machines: rewind says so in one line.
    const listed = await runCli(["rewind", "on-repo", "--list", "--json"], { env: other, cwd: elsewhere.dir });
    expect(listed.code, listed.stderr).toBe(0);
    const points = JSON.parse(listed.stdout) as { tool: string; paths: string[]; checkpointId: string }[];
    expect(points.map((point) => [point.tool, point.paths])).toEqual([
      ["write_file", ["hello.txt"]],
      ["shell", ["new.bin", "src.txt"]],
    ]);
    const rewound = await runCli(["rewind", "on-repo", points[0]!.checkpointId], { env: other, cwd: elsewhere.dir });
    expect(rewound.code).toBe(2);
    expect(rewound.stderr).toMatch(/works on a clone of a repository .* cannot be rewound from here/);
    expect(hasStackTrace(rewound.stderr)).toBe(false);
  }, 120_000);

  it("without push access the run still finishes and keeps its patch; loopgraph patch gives it, ready for git apply", async () => {
    const repo = origin({ pushDenied: true });
    const url = server().createDatabase("repo_denied");
    const coder = script(repo.root, "coder.script.yaml", [`{ name: write_file, args: { path: docs/new.md, contents: "new page\\n" } }`]);
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: machine(repo.root, "m1") });
    const queued = await runCli(
      [
        "run",
        "coder",
        "--queue",
        "--thread",
        "denied",
        "--task",
        "write docs",
        "--repo",
        repo.bare,
        "--model",
        `scripted:${coder}`,
        "--approval",
        "auto",
      ],
      { env },
    );
    expect(queued.code, queued.stderr).toBe(0);
    const worker = startWorker(env);
    const waited = await runCli(["wait", "denied"], { env });
    expect(waited.code, waited.stderr + worker.stderr()).toBe(0);
    expect(waited.stderr).toMatch(
      /not pushed to .*origin\.git \(.*push denied for this user.*\): get the patch with loopgraph patch denied/,
    );
    await stopWorker(worker);
    expect(git(repo.bare, "branch", "--list", "loopgraph/*").trim()).toBe("");

    const patch = await runCli(["patch", "denied"], { env });
    expect(patch.code, patch.stderr).toBe(0);
    expect(patch.stdout).toContain("+++ b/docs/new.md");
    const fresh = join(repo.root, "fresh");
    git(repo.root, "clone", "--quiet", repo.bare, fresh);
    writeFileSync(join(repo.root, "denied.patch"), patch.stdout);
    git(fresh, "apply", join(repo.root, "denied.patch"));
    expect(readFileSync(join(fresh, "docs/new.md"), "utf8")).toBe("new page\n");
  }, 120_000);

  it("a worker killed mid-run: a worker on another machine makes the workspace again from the saved patch and finishes; the branch holds every step once", async () => {
    const repo = origin();
    const url = server().createDatabase("repo_takeover");
    const coder = script(repo.root, "coder.script.yaml", [
      `{ name: write_file, args: { path: a.txt, contents: "first step\\n" } }`,
      `{ name: shell, args: { command: "echo begin >> b.txt; sleep 3; echo end >> b.txt" } }`,
    ]);
    const first = machine(repo.root, "m1");
    const second = machine(repo.root, "m2");
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const queued = await runCli(
      [
        "run",
        "coder",
        "--queue",
        "--thread",
        "moved",
        "--task",
        "two steps",
        "--repo",
        repo.bare,
        "--ref",
        "main",
        "--model",
        `scripted:${coder}`,
        "--approval",
        "auto",
      ],
      { env },
    );
    expect(queued.code, queued.stderr).toBe(0);

    const victim = startWorker({ ...env, LOOPGRAPH_WORKSPACES: first });
    const b = join(first, "moved", "workspace", "b.txt");
    await eventually(
      () => existsSync(b) && readFileSync(b, "utf8").includes("begin"),
      (begun) => begun,
      60_000,
    );
    // The first step's files are in the store by now (saved when the step ended).
    const saved = await queryRows<{ patch: Buffer }>(url, "SELECT patch FROM loopgraph_repo_workspaces WHERE thread_id = 'moved'");
    expect(saved[0]!.patch.toString()).toContain("+++ b/a.txt");
    victim.child.kill("SIGKILL");
    await victim.done;

    const rescuer = startWorker({ ...env, LOOPGRAPH_WORKSPACES: second });
    const waited = await runCli(["wait", "moved", "--json"], { env });
    expect(waited.code, waited.stderr + rescuer.stderr()).toBe(0);
    expect(rescuer.stderr()).toMatch(/moved: running/);
    await stopWorker(rescuer);
    expect(existsSync(join(second, "moved", "workspace", "a.txt"))).toBe(true);
    expect(git(repo.bare, "show", "loopgraph/moved:a.txt")).toBe("first step\n");
    // The step in flight at the kill ran again on the second machine, on the files as they were saved.
    expect(git(repo.bare, "show", "loopgraph/moved:b.txt")).toBe("begin\nend\n");
  }, 120_000);

  it("a run that asks for approval pauses; resume --approve on another machine makes the workspace there, finishes and pushes", async () => {
    const repo = origin();
    const url = server().createDatabase("repo_approve");
    const coder = script(repo.root, "coder.script.yaml", [
      `{ name: write_file, args: { path: notes.txt, contents: "before the approval\\n" } }`,
      `{ name: shell, args: { command: "echo approved >> notes.txt" } }`,
    ]);
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: machine(repo.root, "m1") });
    const queued = await runCli(
      [
        "run",
        "coder",
        "--queue",
        "--thread",
        "asks",
        "--task",
        "ask first",
        "--repo",
        repo.bare,
        "--model",
        `scripted:${coder}`,
        "--approval",
        "auto-edit",
      ],
      { env },
    );
    expect(queued.code, queued.stderr).toBe(0);
    const worker = startWorker(env);
    const paused = await runCli(["wait", "asks"], { env });
    expect(paused.code, paused.stderr + worker.stderr()).toBe(3);
    await stopWorker(worker);

    const elsewhere = tempWorkspace();
    const other = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: machine(elsewhere.root, "m2") });
    const approved = await runCli(["resume", "asks", "--approve"], { env: other, cwd: elsewhere.dir });
    expect(approved.code, approved.stderr).toBe(0);
    expect(readFileSync(join(elsewhere.root, "m2", "asks", "workspace", "notes.txt"), "utf8")).toBe("before the approval\napproved\n");
    expect(git(repo.bare, "show", "loopgraph/asks:notes.txt")).toBe("before the approval\napproved\n");
    expect(readdirSync(elsewhere.dir)).toEqual([]);
  }, 120_000);

  it("the repository is recorded before its thread: a row left by a queueing killed in between is replaced; an existing thread's is kept", async () => {
    const repo = origin();
    const url = server().createDatabase("repo_half_queued");
    const env = cleanEnv({ LOOPGRAPH_DB: url });
    const model = `scripted:${script(repo.root, "coder.script.yaml", [])}`;
    const queue = (thread: string, ref: string) =>
      runCli(["run", "coder", "--queue", "--thread", thread, "--task", "t", "--model", model, "--repo", repo.bare, "--ref", ref], { env });
    const rows = () =>
      queryRows<{ thread_id: string; repo: string; ref: string; commit: string; patch: Buffer | null }>(
        url,
        "SELECT thread_id, repo, ref, commit, patch FROM loopgraph_repo_workspaces ORDER BY thread_id",
      );
    git(repo.bare, "branch", "other", "main");
    const first = await queue("first", "main");
    expect(first.code, first.stderr).toBe(0);
    // What a `run --queue` killed after writing the repository and before the thread leaves: a row of its own.
    await queryRows(
      url,
      "INSERT INTO loopgraph_repo_workspaces (thread_id, repo, ref, commit, patch, updated_at) VALUES ('half', '/gone', 'gone', 'dead', 'x', 'then')",
    );
    const again = await queue("half", "main");
    expect(again.code, again.stderr).toBe(0);
    const source = { repo: repo.bare, ref: "main", commit: repo.main, patch: null };
    expect(await rows()).toEqual([
      { thread_id: "first", ...source },
      { thread_id: "half", ...source },
    ]);
    // Queued again under an existing thread's id: refused, and that thread's repository is left as it was.
    const twice = await queue("first", "other");
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/thread "first" already exists/);
    expect((await rows())[0]).toEqual({ thread_id: "first", ...source });
  }, 60_000);

  it("refuses in one line, before anything is recorded: a URL with a password, no repository, an unknown ref, --repo without --queue, with --workspace", async () => {
    const repo = origin();
    const url = server().createDatabase("repo_refusals");
    const env = cleanEnv({ LOOPGRAPH_DB: url });
    const queue = (...args: string[]) => runCli(["run", "coder", "--task", "t", "--model", "scripted:none.yaml", ...args], { env });
    const cases: [string[], RegExp][] = [
      [["--queue", "--repo", "https://me:s3cret-token@example.invalid/x.git"], /the URL holds a password/],
      [["--queue", "--repo", join(repo.root, "missing")], /no repository at/],
      [["--queue", "--repo", "ext::sh -c touch% /tmp/pwned"], /remote helpers \(ext::\) are not supported/],
      [["--queue", "--repo", repo.bare, "--ref", "no-such-branch"], /--ref no-such-branch: no such branch or tag/],
      [["--repo", repo.bare], /--repo and --ref are for a queued run/],
      [["--queue", "--repo", repo.bare, "--workspace", repo.root], /--repo and --workspace exclude each other/],
    ];
    for (const [args, message] of cases) {
      const result = await queue(...args);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain("s3cret-token");
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
    const threads = await queryRows<{ thread_id: string }>(url, "SELECT thread_id FROM loopgraph_threads").catch(() => []);
    expect(threads).toEqual([]);
  }, 60_000);
});
