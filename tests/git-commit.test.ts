/**
 * The commits loopgraph makes for the agent (git/commit.ts, tools/git-commit.ts), in process with
 * real git: which branch they go onto, what they take, whose identity they carry, what a hostile
 * repository can make them run (nothing), and how `rewind` undoes them.
 */
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commitWorkspace, rewindCommits, type CommitRequest } from "../src/git/commit.js";
import { pruneBranches } from "../src/git/worktrees/index.js";
import { evaluatePolicy } from "../src/policy/evaluate.js";
import type { SnapshotTable } from "../src/runs/snapshot-log.js";
import { createToolStepSnapshots } from "../src/snapshots/tool-step-hook.js";
import { executeToolCall } from "../src/tools/registry.js";
import type { ToolContext } from "../src/tools/types.js";
import { git } from "./helpers/cli.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const ME = { GIT_AUTHOR_NAME: "Ada User", GIT_AUTHOR_EMAIL: "ada@example.com", HOME: "/nonexistent" };

function repo(branch = "feature"): Workspace {
  const ws = tempWorkspace({ git: true, files: { "tracked.txt": "one\n", "other.txt": "mine\n" } });
  git(ws.dir, "checkout", "-q", "-B", branch);
  return ws;
}

const commit = (ws: Workspace, extra: Partial<CommitRequest> = {}) =>
  commitWorkspace({ workspace: ws.dir, threadId: "t1", message: "Change tracked.txt", key: "call-1", env: ME, ...extra });

const head = (dir: string) => git(dir, "rev-parse", "HEAD").trim();
const branchOf = (dir: string) => git(dir, "symbolic-ref", "--short", "-q", "HEAD").trim();
const status = (dir: string) => git(dir, "status", "--porcelain").trim();

function toolContext(ws: Workspace, thread = "t1"): ToolContext {
  return { workspace: ws.dir, env: ME, artifactsDir: join(ws.dir, ".loopgraph", "artifacts", thread), threadId: thread };
}

describe("git_commit: loopgraph commits for the agent", () => {
  it("commits the named paths on the thread's branch, as the user, leaving the user's staged work out, and git status clean", async () => {
    const ws = repo();
    const start = head(ws.dir);
    writeFileSync(join(ws.dir, "tracked.txt"), "two\n");
    writeFileSync(join(ws.dir, "new.txt"), "new\n");
    writeFileSync(join(ws.dir, "other.txt"), "staged by the user\n");
    writeFileSync(join(ws.dir, "staged-new.txt"), "a new file the user staged\n");
    git(ws.dir, "add", "other.txt", "staged-new.txt");

    const made = await commit(ws, { paths: ["tracked.txt", "new.txt"], message: "Change tracked.txt\n\nAnd add new.txt.\n\n" });
    expect(made).toMatchObject({ status: "committed", branch: "feature", files: ["new.txt", "tracked.txt"], redacted: 0 });
    expect(branchOf(ws.dir)).toBe("feature");
    expect(git(ws.dir, "rev-parse", "HEAD~1").trim()).toBe(start);
    expect(git(ws.dir, "log", "-1", "--format=%an <%ae>|%cn|%B").trim()).toBe(
      "Ada User <ada@example.com>|Ada User|Change tracked.txt\n\nAnd add new.txt.",
    );
    expect(git(ws.dir, "show", "HEAD:other.txt")).toBe("mine\n");
    // The committed files are clean; the user's staged change is still staged.
    expect(status(ws.dir)).toBe("M  other.txt\nA  staged-new.txt");

    // Nothing left to commit for those paths.
    expect(await commit(ws, { paths: ["tracked.txt"] })).toEqual({ status: "nothing", branch: "feature" });
    // Without paths: every change (the user's staged file too), new folders included.
    mkdirSync(join(ws.dir, "dir"));
    writeFileSync(join(ws.dir, "dir/x.txt"), "x\n");
    expect(await commit(ws, { message: "All of it" })).toMatchObject({
      status: "committed",
      files: ["dir/x.txt", "other.txt", "staged-new.txt"],
    });
    expect(status(ws.dir)).toBe("");
  });

  it("on main or master, the first commit makes loopgraph/<thread> at HEAD and moves HEAD there; HEAD elsewhere is refused", async () => {
    const ws = repo("main");
    const start = head(ws.dir);
    writeFileSync(join(ws.dir, "tracked.txt"), "two\n");
    const first = await commit(ws);
    expect(first).toMatchObject({ status: "committed", branch: "loopgraph/t1", createdFrom: "main" });
    expect(branchOf(ws.dir)).toBe("loopgraph/t1");
    expect(git(ws.dir, "rev-parse", "main").trim()).toBe(start);
    expect(status(ws.dir)).toBe("");

    writeFileSync(join(ws.dir, "tracked.txt"), "three\n");
    expect(await commit(ws)).toMatchObject({ status: "committed", branch: "loopgraph/t1" });

    // The user switched back to main: the agent does not commit there, and says where it would.
    git(ws.dir, "checkout", "-q", "main");
    writeFileSync(join(ws.dir, "other.txt"), "four\n");
    const onMain = await commit(ws);
    expect(onMain.status).toBe("refused");
    expect(onMain.status === "refused" && onMain.reason).toMatch(/HEAD is on main, not on loopgraph\/t1.*git switch loopgraph\/t1/);
    // Another branch, or a detached HEAD: refused too.
    git(ws.dir, "checkout", "-q", "-b", "someone-else");
    expect((await commit(ws)).status).toBe("refused");
    git(ws.dir, "checkout", "-q", "--detach");
    expect((await commit(ws)).status).toBe("refused");
    expect(git(ws.dir, "rev-parse", "main").trim()).toBe(start);
    // Deleting the thread's branch worktrees (threads delete, prune) keeps the branch of its commits.
    expect(await pruneBranches(ws.dir, "t1")).toEqual([]);
    expect(git(ws.dir, "branch", "--list", "loopgraph/t1").trim()).toBe("loopgraph/t1");

    // A thread whose worktree Coders have branches loopgraph/<thread>/…: git cannot make loopgraph/<thread> beside them.
    git(ws.dir, "checkout", "-q", "main");
    git(ws.dir, "branch", "loopgraph/t3/coder-0");
    const clash = await commit(ws, { threadId: "t3" });
    expect(clash.status === "refused" && clash.reason).toMatch(/^git would not move loopgraph\/t3: .*loopgraph\/t3/);
    expect(branchOf(ws.dir)).toBe("main");

    // A thread that started on a feature branch never commits on another one: its branch is noted at its first file-changing step.
    const feature = repo("feature");
    const snapshots = createToolStepSnapshots({ threadId: "t2", workspace: feature.dir, log: {} as SnapshotTable, warn: () => undefined });
    await snapshots.around({ node: "coder", tool: "write_file", toolCallId: "w" }, async () => undefined);
    git(feature.dir, "checkout", "-q", "-b", "moved");
    writeFileSync(join(feature.dir, "tracked.txt"), "x\n");
    const moved = await commit(feature, { threadId: "t2" });
    expect(moved.status === "refused" && moved.reason).toMatch(/HEAD is on moved, not on feature, the branch this thread started on/);
  });

  it("a hostile repository runs nothing: hooks, fsmonitor, filters, signing, an include are ignored, as its user.*; a core.worktree elsewhere is refused", async () => {
    const ws = repo();
    const canary = join(ws.root, "canary");
    const program = join(ws.root, "evil.sh");
    writeFileSync(program, `#!/bin/sh\necho "$0 $*" >> '${canary}'\ncat\n`);
    chmodSync(program, 0o755);
    const hooks = join(ws.dir, ".git", "evil-hooks");
    mkdirSync(hooks);
    for (const hook of ["pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change", "post-checkout"]) {
      writeFileSync(join(hooks, hook), `#!/bin/sh\n'${program}' ${hook}\n`);
      chmodSync(join(hooks, hook), 0o755);
      writeFileSync(join(ws.dir, ".git", "hooks", hook), `#!/bin/sh\n'${program}' default-${hook}\n`);
      chmodSync(join(ws.dir, ".git", "hooks", hook), 0o755);
    }
    const elsewhere = join(ws.root, "elsewhere");
    mkdirSync(elsewhere);
    const included = join(ws.root, "included.config");
    writeFileSync(included, `[core]\n\tpager = ${program}\n[filter "inc"]\n\tclean = ${program}\n`);
    // Every setting that could run a program while loopgraph commits, or put another identity or work tree on the commit.
    const planted: Record<string, Record<string, string>> = {
      core: { fsmonitor: program, hooksPath: hooks, worktree: elsewhere, editor: program },
      'filter "evil"': { clean: program, smudge: program, required: "true" },
      commit: { gpgSign: "true" },
      gpg: { program },
      user: { name: "Planted Name", email: "planted@evil.example" },
      [`includeIf "gitdir:${ws.dir}/"`]: { path: included },
    };
    const sections = Object.entries(planted).map(
      ([section, keys]) =>
        `[${section}]\n${Object.entries(keys)
          .map(([key, value]) => `\t${key} = ${value}\n`)
          .join("")}`,
    );
    appendFileSync(join(ws.dir, ".git", "config"), sections.join(""));
    writeFileSync(join(ws.dir, ".gitattributes"), "*.txt filter=evil\n*.md filter=inc\n");
    writeFileSync(join(ws.dir, "tracked.txt"), "two\n");
    writeFileSync(join(ws.dir, "readme.md"), "# hi\n");

    // A work tree elsewhere: not this workspace's repository any more, so nothing is committed.
    const elsewhereRefused = await commit(ws, { env: { HOME: "/nonexistent" } });
    expect(elsewhereRefused.status === "refused" && elsewhereRefused.reason).toMatch(/not the top folder of a git repository/);
    git(ws.dir, "config", "--unset", "core.worktree");

    const made = await commit(ws, { env: { HOME: "/nonexistent" } });
    expect(made).toMatchObject({ status: "committed", files: [".gitattributes", "readme.md", "tracked.txt"] });
    expect(existsSync(canary) ? readFileSync(canary, "utf8") : "").toBe("");
    expect(git(ws.dir, "-c", "filter.evil.smudge=cat", "show", "HEAD:tracked.txt")).toBe("two\n");
    // Not the repository's user.*: no identity of the user's, so loopgraph's own.
    expect(git(ws.dir, "log", "-1", "--format=%an <%ae>").trim()).toBe("loopgraph <loopgraph@localhost>");
  });

  it("the tool refuses paths into .git, .loopgraph, outside the workspace or through a symbolic link; the policy asks but in auto", async () => {
    const ws = repo();
    symlinkSync(ws.root, join(ws.dir, "up"));
    const call = (args: Record<string, unknown>) => executeToolCall({ id: "c", name: "git_commit", args }, toolContext(ws));
    const cases: [unknown, string][] = [
      [[".git/config"], "protected_path"],
      [["sub/.git/hooks"], "protected_path"],
      [[".loopgraph/commits/t1.json"], "protected_path"],
      [["../outside.txt"], "outside_workspace"],
      [["up/repo/tracked.txt"], "invalid_arguments"],
      [["up/canary"], "outside_workspace"],
    ];
    for (const [paths, kind] of cases)
      expect(await call({ message: "m", paths }), JSON.stringify(paths)).toMatchObject({ ok: false, errorKind: kind });
    expect(await call({ message: "--amend", paths: ["--all"] })).toMatchObject({ ok: false, errorKind: "failed" });
    expect(git(ws.dir, "log", "--format=%s").trim()).toBe("init");

    writeFileSync(join(ws.dir, "tracked.txt"), "two\n");
    const done = await call({ message: "-m --amend\n--no-verify", paths: ["tracked.txt"] });
    expect(done).toMatchObject({ ok: true });
    expect(done.content).toMatch(/^Committed [0-9a-f]{12} on feature: 1 file \(tracked\.txt\)/);
    expect(git(ws.dir, "log", "-1", "--format=%B").trim()).toBe("-m --amend\n--no-verify");

    // A folder inside the repository (a branch worktree's is one) and a folder without git commit nothing.
    const inner = join(ws.dir, ".loopgraph", "worktrees", "t1", "coder-0");
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(inner, "x.txt"), "x\n");
    for (const workspace of [inner, tempWorkspace().dir]) {
      const refused = await commitWorkspace({ workspace, threadId: "t1", message: "m", key: "k", env: ME });
      expect(refused.status === "refused" && refused.reason, workspace).toMatch(/not the top folder of a git repository/);
    }

    const decide = (mode: "ask" | "auto-edit" | "auto" | "deny") =>
      evaluatePolicy({ name: "git_commit", args: { message: "m" } }, { rules: [], mode, workspace: ws.dir, sandbox: "none" }).decision;
    expect([decide("ask"), decide("auto-edit"), decide("auto"), decide("deny")]).toEqual(["ask", "ask", "allow", "deny"]);
  });

  it("rewind moves the branch back to before the thread's commits, or deletes the branch it made and puts HEAD back", async () => {
    const ws = repo();
    const start = head(ws.dir);
    writeFileSync(join(ws.dir, "tracked.txt"), "two\n");
    await commit(ws);
    const since = new Date().toISOString();
    writeFileSync(join(ws.dir, "tracked.txt"), "three\n");
    const second = await commit(ws);
    expect(second.status).toBe("committed");
    // A dry run changes nothing; the commits before `since` stay.
    expect(await rewindCommits(ws.dir, "t1", since, true)).toEqual([
      { branch: "feature", action: "moved", from: head(ws.dir), to: git(ws.dir, "rev-parse", "HEAD~1").trim() },
    ]);
    const afterFirst = git(ws.dir, "rev-parse", "HEAD~1").trim();
    await rewindCommits(ws.dir, "t1", since, false);
    expect(head(ws.dir)).toBe(afterFirst);
    // The work tree is the file rewind's: the index follows the branch, so the change shows as not staged.
    expect(status(ws.dir)).toBe("M tracked.txt");
    // Rewound commits are forgotten; the first one again, all the way back.
    expect(await rewindCommits(ws.dir, "t1", since, false)).toEqual([]);
    await rewindCommits(ws.dir, "t1", "", false);
    expect(head(ws.dir)).toBe(start);

    // A branch moved by someone since is left as it is.
    writeFileSync(join(ws.dir, "tracked.txt"), "four\n");
    await commit(ws);
    git(ws.dir, "commit", "-q", "--allow-empty", "-m", "the user's own");
    const [kept] = await rewindCommits(ws.dir, "t1", "", false);
    expect(kept).toMatchObject({ branch: "feature", action: "kept", reason: expect.stringMatching(/has moved since/) });

    // A log not written by loopgraph (an option for a branch, a name for a commit) gives git no argument.
    const tip = head(ws.dir);
    for (const forged of [
      { commits: [{ key: "k", at: "2000-01-01", branch: "--no-deref", after: tip }] },
      { commits: [{ key: "k", at: "2000-01-01", branch: "refs/heads/feature", before: "HEAD~5", after: tip }] },
      { runBranch: "-D", commits: [] },
    ]) {
      writeFileSync(join(ws.dir, ".loopgraph/commits/t9.json"), JSON.stringify(forged));
      await expect(rewindCommits(ws.dir, "t9", "", false)).rejects.toThrow(/is not a commit log loopgraph wrote/);
      await expect(commit(ws, { threadId: "t9" })).rejects.toThrow(/is not a commit log loopgraph wrote/);
    }
    expect(head(ws.dir)).toBe(tip);

    // On main: the branch the thread made is deleted and HEAD goes back to main.
    const trunk = repo("main");
    writeFileSync(join(trunk.dir, "tracked.txt"), "two\n");
    await commit(trunk);
    expect(branchOf(trunk.dir)).toBe("loopgraph/t1");
    expect(await rewindCommits(trunk.dir, "t1", "", false)).toMatchObject([{ branch: "loopgraph/t1", action: "deleted", to: "main" }]);
    expect(branchOf(trunk.dir)).toBe("main");
    expect(git(trunk.dir, "branch", "--list", "loopgraph/*").trim()).toBe("");
    expect(status(trunk.dir)).toBe("M tracked.txt");
  });
});
