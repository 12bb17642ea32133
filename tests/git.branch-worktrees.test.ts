/**
 * Branch worktrees (src/git/worktrees/): parallel coders' own copies of the workspace, plain
 * folders with no `.git`, on branches `loopgraph/<thread>/<node>-<index>`; their changes applied
 * back three-way, all or nothing; nothing the agent plants in a worktree (a link, a `.git`)
 * leads loopgraph's own reads, writes or git calls elsewhere. Real git, real files.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { GitError } from "../src/git/run.js";
import {
  applyBranch,
  branchDiff,
  commitBranch,
  commitBranchWorktrees,
  createBranchWorktree,
  linkLeadsAway,
  mergeBranches,
  openBranchWorktree,
  pruneBranches,
  removeBranchWorktrees,
  type ApplyResult,
} from "../src/git/worktrees/index.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });
}

/** Every file under `dir` (but `.git` and `.loopgraph`) with its bytes, links as `-> target`. */
function contents(dir: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (folder === dir && (entry.name === ".git" || entry.name === ".loopgraph")) continue;
      if (entry.isSymbolicLink()) found[relative(dir, path)] = `-> ${readlinkSync(path)}`;
      else if (entry.isDirectory()) walk(path);
      else found[relative(dir, path)] = readFileSync(path, "latin1");
    }
  };
  walk(dir);
  return found;
}

const branch = (threadId: string, node: string, index: number) => ({ threadId, node, index });

function applied(result: ApplyResult): { applied: string[]; withheld: { path: string; reason: string }[] } {
  if (result.status !== "applied") throw new Error(`expected the branch to apply: ${JSON.stringify(result.conflict)}`);
  return result;
}

function gitWorkspace(files: Record<string, string> = { "a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n" }): Workspace {
  return tempWorkspace({ git: true, files });
}

describe("creating branch worktrees", () => {
  it("from a git workspace: holds its uncommitted and untracked changes; the branch is in the user's repository; their status and index are untouched", async () => {
    const ws = gitWorkspace();
    writeFileSync(join(ws.dir, "a.txt"), "one\nTWO\nthree\n");
    writeFileSync(join(ws.dir, "untracked.txt"), "new\n");
    writeFileSync(join(ws.dir, "b.txt"), "staged\n");
    git(ws.dir, "add", "b.txt");
    const status = git(ws.dir, "status", "--porcelain");
    const index = readFileSync(join(ws.dir, ".git/index"));
    const head = git(ws.dir, "rev-parse", "HEAD").trim();

    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t1", "coder", 0) });

    expect(worktree.dir).toBe(join(ws.dir, ".loopgraph/worktrees/t1/coder-0"));
    expect(worktree.branch).toBe("loopgraph/t1/coder-0");
    expect(worktree.store).toBe("git");
    expect(contents(worktree.dir)).toEqual({ "a.txt": "one\nTWO\nthree\n", "b.txt": "staged\n", "untracked.txt": "new\n" });
    expect(existsSync(join(worktree.dir, ".git"))).toBe(false);
    expect(git(ws.dir, "rev-parse", "refs/heads/loopgraph/t1/coder-0").trim()).toBe(worktree.baseCommit);
    expect(git(ws.dir, "rev-parse", `${worktree.baseCommit}^`).trim()).toBe(head);
    expect(git(ws.dir, "status", "--porcelain")).toBe(status);
    expect(readFileSync(join(ws.dir, ".git/index")).equals(index)).toBe(true);
    expect(git(ws.dir, "rev-parse", "HEAD").trim()).toBe(head);
  });

  it("from a workspace without git: the branch is in loopgraph's shadow repository", async () => {
    const ws = tempWorkspace({ files: { "notes.md": "hello\n", "src/x.ts": "export {};\n" } });
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t2", "coder", 3) });
    expect(worktree.store).toBe("shadow");
    expect(contents(worktree.dir)).toEqual({ "notes.md": "hello\n", "src/x.ts": "export {};\n" });
    expect(existsSync(join(ws.dir, ".git"))).toBe(false);
    const shadow = join(ws.dir, ".loopgraph/branches.git");
    expect(git(ws.dir, `--git-dir=${shadow}`, "rev-parse", "refs/heads/loopgraph/t2/coder-3").trim()).toBe(worktree.baseCommit);
  });

  it("two worktrees of one workspace are independent, and a name is taken once", async () => {
    const ws = gitWorkspace();
    // Made at the same time, as parallel coders start.
    const [first, second] = await Promise.all([
      createBranchWorktree({ workspace: ws.dir, ...branch("t3", "coder", 0) }),
      createBranchWorktree({ workspace: ws.dir, ...branch("t3", "coder", 1) }),
    ]);
    writeFileSync(join(first.dir, "a.txt"), "first\n");
    await commitBranch(first, "first's change");
    expect(readFileSync(join(second.dir, "a.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect((await branchDiff(second)).files).toEqual([]);
    expect((await branchDiff(first)).files).toEqual([{ path: "a.txt", status: "M" }]);
    await expect(createBranchWorktree({ workspace: ws.dir, ...branch("t3", "coder", 0) })).rejects.toThrow(/already exists/);
  });

  it("opening one continues the folder a visit left (a resume), makes the folder again from the branch's tip when only the branch is left, and makes both when neither is", async () => {
    const ws = gitWorkspace();
    const made = await openBranchWorktree({ workspace: ws.dir, ...branch("t20", "coder", 0) });
    writeFileSync(join(made.dir, "new.txt"), "work in progress\n");
    const again = await openBranchWorktree({ workspace: ws.dir, ...branch("t20", "coder", 0) });
    expect(again).toEqual(made);
    expect(readFileSync(join(again.dir, "new.txt"), "utf8")).toBe("work in progress\n");

    await commitBranch(again, "visit 1");
    await removeBranchWorktrees(ws.dir, "t20");
    const later = await openBranchWorktree({ workspace: ws.dir, ...branch("t20", "coder", 0) });
    expect(later.baseCommit).toBe(made.baseCommit);
    expect(contents(later.dir)).toEqual({ "a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n", "new.txt": "work in progress\n" });
    expect((await branchDiff(later)).files).toEqual([{ path: "new.txt", status: "A" }]);

    // A folder left without its branch (a crash while it was being made) is made anew.
    mkdirSync(join(ws.dir, ".loopgraph/worktrees/t20/other-0"));
    writeFileSync(join(ws.dir, ".loopgraph/worktrees/t20/other-0/half.txt"), "x");
    const fresh = await openBranchWorktree({ workspace: ws.dir, ...branch("t20", "other", 0) });
    expect(contents(fresh.dir)).toEqual({ "a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n" });
  });

  it("refuses thread and node ids that are no single safe name", async () => {
    const ws = gitWorkspace();
    for (const [threadId, node] of [
      ["..", "coder"],
      ["../x", "coder"],
      ["a/b", "coder"],
      [".hidden", "coder"],
      ["t", "x..y"],
      ["t", "coder.lock"],
      ["t", ""],
      ["t", "a\\b"],
    ] as const) {
      await expect(createBranchWorktree({ workspace: ws.dir, threadId, node, index: 0 })).rejects.toThrow(GitError);
    }
    await expect(createBranchWorktree({ workspace: ws.dir, threadId: "t", node: "coder", index: -1 })).rejects.toThrow(GitError);
    await expect(removeBranchWorktrees(ws.dir, "../..")).rejects.toThrow(GitError);
    expect(existsSync(join(ws.dir, ".loopgraph/worktrees"))).toBe(false);
  });
});

describe("committing and diffing a branch", () => {
  it("commits the worktree's content (secrets redacted) and diffs it against the base", async () => {
    const ws = gitWorkspace();
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t4", "coder", 0) });
    writeFileSync(join(worktree.dir, "a.txt"), "one\ntwo\nthree\nfour\n");
    writeFileSync(join(worktree.dir, "added.txt"), "token=s3cr3t-value-123\n");
    rmSync(join(worktree.dir, "b.txt"));
    const commit = await commitBranch(worktree, "the coder's work", ["s3cr3t-value-123"]);
    expect(git(ws.dir, "rev-parse", "loopgraph/t4/coder-0").trim()).toBe(commit);
    expect(await commitBranch(worktree, "nothing new", ["s3cr3t-value-123"])).toBe(commit);
    const { patch, files } = await branchDiff(worktree);
    expect(files).toEqual([
      { path: "a.txt", status: "M" },
      { path: "added.txt", status: "A" },
      { path: "b.txt", status: "D" },
    ]);
    expect(patch).toContain("+four");
    expect(patch).not.toContain("s3cr3t-value-123");
    expect(git(ws.dir, "show", `${commit}:added.txt`)).not.toContain("s3cr3t-value-123");
  });
});

describe("applying branches to the workspace", () => {
  it("merges three-way with what changed in the workspace meanwhile", async () => {
    const ws = gitWorkspace();
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t5", "coder", 0) });
    writeFileSync(join(worktree.dir, "a.txt"), "ONE\ntwo\nthree\n");
    writeFileSync(join(worktree.dir, "new.txt"), "from the branch\n");
    await commitBranch(worktree, "work");
    writeFileSync(join(ws.dir, "a.txt"), "one\ntwo\nTHREE\n");
    writeFileSync(join(ws.dir, "mine.txt"), "the user's\n");

    const result = applied(await applyBranch({ workspace: ws.dir, branch: worktree }));

    expect(result.applied.sort()).toEqual(["a.txt", "new.txt"]);
    expect(contents(ws.dir)).toEqual({
      "a.txt": "ONE\ntwo\nTHREE\n",
      "b.txt": "bee\n",
      "new.txt": "from the branch\n",
      "mine.txt": "the user's\n",
    });
  });

  it("a conflict is a typed result and leaves the workspace as it was, byte for byte", async () => {
    const ws = gitWorkspace();
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t6", "coder", 0) });
    writeFileSync(join(worktree.dir, "a.txt"), "branch\ntwo\nthree\n");
    writeFileSync(join(worktree.dir, "b.txt"), "bee too\n");
    await commitBranch(worktree, "work");
    writeFileSync(join(ws.dir, "a.txt"), "workspace\ntwo\nthree\n");
    const before = contents(ws.dir);
    const status = git(ws.dir, "status", "--porcelain");

    const result = await applyBranch({ workspace: ws.dir, branch: worktree });

    expect(result).toMatchObject({ status: "conflict", conflict: { branch: "loopgraph/t6/coder-0", paths: ["a.txt"] } });
    if (result.status === "conflict") expect(result.conflict.details.join("\n")).toMatch(/CONFLICT \(content\).*a\.txt/);
    expect(contents(ws.dir)).toEqual(before);
    expect(git(ws.dir, "status", "--porcelain")).toBe(status);
  });

  it("merges two branches that change different files; a later conflict leaves the workspace as before the merge", async () => {
    const ws = gitWorkspace();
    const first = await createBranchWorktree({ workspace: ws.dir, ...branch("t7", "coder", 0) });
    const second = await createBranchWorktree({ workspace: ws.dir, ...branch("t7", "coder", 1) });
    const third = await createBranchWorktree({ workspace: ws.dir, ...branch("t7", "coder", 2) });
    writeFileSync(join(first.dir, "a.txt"), "one\ntwo\nthree\nfrom first\n");
    writeFileSync(join(second.dir, "b.txt"), "bee from second\n");
    writeFileSync(join(third.dir, "b.txt"), "bee from third\n");
    for (const worktree of [first, second, third]) await commitBranch(worktree, "work");
    const before = contents(ws.dir);

    const refused = await mergeBranches({ workspace: ws.dir, branches: [first, second, third] });
    expect(refused).toMatchObject({ status: "conflict", conflict: { branch: "loopgraph/t7/coder-2", paths: ["b.txt"] } });
    expect(contents(ws.dir)).toEqual(before);

    const result = applied(await mergeBranches({ workspace: ws.dir, branches: [first, second] }));
    expect(result.applied.sort()).toEqual(["a.txt", "b.txt"]);
    expect(contents(ws.dir)).toEqual({ "a.txt": "one\ntwo\nthree\nfrom first\n", "b.txt": "bee from second\n" });
  });

  it("in a workspace without git, through the shadow repository", async () => {
    const ws = tempWorkspace({ files: { "notes.md": "a\nb\nc\n" } });
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t8", "coder", 0) });
    writeFileSync(join(worktree.dir, "notes.md"), "A\nb\nc\n");
    mkdirSync(join(worktree.dir, "docs"));
    writeFileSync(join(worktree.dir, "docs/new.md"), "new\n");
    await commitBranch(worktree, "work");
    writeFileSync(join(ws.dir, "notes.md"), "a\nb\nC\n");
    applied(await applyBranch({ workspace: ws.dir, branch: worktree }));
    expect(contents(ws.dir)).toEqual({ "notes.md": "A\nb\nC\n", "docs/new.md": "new\n" });
  });

  it("a file loopgraph keeps only redacted (it holds a secret) is never overwritten: a conflict", async () => {
    const secrets = ["s3cr3t-value-456"];
    const ws = gitWorkspace({ "a.txt": "one\n" });
    writeFileSync(join(ws.dir, ".env"), "KEY=s3cr3t-value-456\nOTHER=1\n");
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t9", "coder", 0), secrets });
    // Untracked, so new to the repository: the worktree has what the repository keeps, the value redacted.
    expect(readFileSync(join(worktree.dir, ".env"), "utf8")).not.toContain("s3cr3t-value-456");
    writeFileSync(join(worktree.dir, ".env"), `${readFileSync(join(worktree.dir, ".env"), "utf8")}MORE=2\n`);
    await commitBranch(worktree, "work", secrets);
    const result = await applyBranch({ workspace: ws.dir, branch: worktree, secrets });
    expect(result).toMatchObject({ status: "conflict", conflict: { paths: [".env"] } });
    expect(readFileSync(join(ws.dir, ".env"), "utf8")).toBe("KEY=s3cr3t-value-456\nOTHER=1\n");
  });
});

describe("what the agent plants in its worktree", () => {
  it("a symbolic link leading outside is kept as a link, never followed, and not written into the workspace", async () => {
    const ws = gitWorkspace();
    const outside = join(ws.root, "outside.txt");
    writeFileSync(outside, "outside\n");
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t10", "coder", 0) });
    rmSync(join(worktree.dir, "b.txt"));
    symlinkSync(outside, join(worktree.dir, "b.txt"));
    symlinkSync("../../../../../outside.txt", join(worktree.dir, "escape"));
    symlinkSync("a.txt", join(worktree.dir, "inside"));
    symlinkSync("inside", join(worktree.dir, "via"));
    mkdirSync(join(worktree.dir, "dir"));
    symlinkSync("../b.txt", join(worktree.dir, "dir/up"));
    writeFileSync(join(worktree.dir, "a.txt"), "changed\n");
    await commitBranch(worktree, "work");
    expect(git(ws.dir, "ls-tree", "loopgraph/t10/coder-0", "b.txt")).toMatch(/^120000 /);

    const result = applied(await applyBranch({ workspace: ws.dir, branch: worktree }));

    expect(result.applied.sort()).toEqual(["a.txt", "inside"]);
    // b.txt is a link in the merged tree: dir/up leads through it.
    expect(result.withheld.map((change) => change.path).sort()).toEqual(["b.txt", "dir/up", "escape", "via"]);
    expect(result.withheld[0]!.reason).toMatch(/symbolic link/);
    expect(readFileSync(outside, "utf8")).toBe("outside\n");
    expect(readFileSync(join(ws.dir, "b.txt"), "utf8")).toBe("bee\n");
    expect(lstatSync(join(ws.dir, "b.txt")).isSymbolicLink()).toBe(false);
    expect(existsSync(join(ws.dir, "escape"))).toBe(false);
    expect(readlinkSync(join(ws.dir, "inside"))).toBe("a.txt");
    expect(existsSync(join(ws.dir, "via")) || existsSync(join(ws.dir, "dir"))).toBe(false);
  });

  it("judges a link's target by its text, strictly", () => {
    expect(linkLeadsAway("a", "b")).toBe(false);
    expect(linkLeadsAway("dir/a", "../b")).toBe(false);
    expect(linkLeadsAway("a", "../b")).toBe(true);
    expect(linkLeadsAway("a", "/etc/passwd")).toBe(true);
    expect(linkLeadsAway("a", "b/..")).toBe(true);
    expect(linkLeadsAway("a", "sub/.git/config")).toBe(true);
    expect(linkLeadsAway("a", ".loopgraph/x")).toBe(true);
  });

  it("a planted .git (folder or file) does not redirect loopgraph's git calls, and a repository's merge driver does not run", async () => {
    const ws = gitWorkspace();
    const marker = join(ws.root, "marker");
    const program = join(ws.root, "evil.sh");
    writeFileSync(program, `#!/bin/sh\necho "ran: $0 $*" >> '${marker}'\nexit 0\n`);
    chmodSync(program, 0o755);
    // A merge driver the user's repository defines, which a .gitattributes could assign to any file.
    execFileSync("git", ["config", "merge.evil.driver", `${program} %O %A %B`], { cwd: ws.dir });
    writeFileSync(join(ws.dir, ".gitattributes"), "* merge=evil\n");
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t11", "coder", 0) });

    const planted = join(worktree.dir, ".git");
    mkdirSync(join(planted, "hooks"), { recursive: true });
    writeFileSync(
      join(planted, "config"),
      `[core]\n\tfsmonitor = ${program}\n\thooksPath = ${join(planted, "hooks")}\n\tworktree = /\n[diff]\n\texternal = ${program}\n`,
    );
    for (const hook of ["pre-commit", "post-commit", "reference-transaction", "post-index-change"]) {
      writeFileSync(join(planted, "hooks", hook), `#!/bin/sh\n'${program}' ${hook}\n`);
      chmodSync(join(planted, "hooks", hook), 0o755);
    }
    writeFileSync(join(planted, "HEAD"), "ref: refs/heads/main\n");
    mkdirSync(join(planted, "objects"));
    mkdirSync(join(planted, "refs"));
    writeFileSync(join(worktree.dir, "a.txt"), "branch\ntwo\nthree\n");
    await commitBranch(worktree, "work");
    const { files } = await branchDiff(worktree);
    expect(files).toEqual([{ path: "a.txt", status: "M" }]);
    expect(existsSync(marker)).toBe(false);

    // The driver would "merge" by keeping one side; loopgraph's git makes it report a conflict.
    writeFileSync(join(ws.dir, "a.txt"), "workspace\ntwo\nthree\n");
    const result = await applyBranch({ workspace: ws.dir, branch: worktree });
    expect(result.status).toBe("conflict");
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("workspace\ntwo\nthree\n");
    expect(existsSync(marker)).toBe(false);

    // A nested `.git` naming the planted repository: git takes the folder for a submodule without a commit, and refuses.
    mkdirSync(join(worktree.dir, "sub"));
    writeFileSync(join(worktree.dir, "sub/.git"), `gitdir: ${planted}\n`);
    writeFileSync(join(worktree.dir, "sub/file.txt"), "in sub\n");
    await expect(commitBranch(worktree, "more")).rejects.toThrow(GitError);
    expect(existsSync(marker)).toBe(false);
  });

  it("what would configure git or loopgraph is not written: a folder two branches each make half a repository of, a loopgraph.yaml, a nested .loopgraph", async () => {
    const ws = gitWorkspace();
    const first = await createBranchWorktree({ workspace: ws.dir, ...branch("t12", "coder", 0) });
    const second = await createBranchWorktree({ workspace: ws.dir, ...branch("t12", "coder", 1) });
    // Neither worktree holds a folder git would take for a repository: the first has cfg/HEAD and a config, the second cfg/objects/ and cfg/refs/.
    mkdirSync(join(first.dir, "cfg"));
    writeFileSync(join(first.dir, "cfg/HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(first.dir, "cfg/config"), "[core]\n\tfsmonitor = touch planted\n");
    mkdirSync(join(second.dir, "cfg/objects/info"), { recursive: true });
    mkdirSync(join(second.dir, "cfg/refs/heads"), { recursive: true });
    writeFileSync(join(second.dir, "cfg/objects/info/packs"), "\n");
    writeFileSync(join(second.dir, "cfg/refs/heads/keep"), "\n");
    mkdirSync(join(second.dir, "pkg/.loopgraph"), { recursive: true });
    writeFileSync(join(second.dir, "pkg/.loopgraph/policy.yaml"), "rules: []\n");
    writeFileSync(join(second.dir, "pkg/loopgraph.yaml"), "hooks: {}\n");
    writeFileSync(join(second.dir, "pkg/ok.txt"), "ok\n");
    // An ignored folder of the workspace already holding a HEAD: a branch adding objects/ and refs/ there would complete it.
    writeFileSync(join(ws.dir, ".gitignore"), "data/HEAD\n");
    mkdirSync(join(ws.dir, "data"));
    writeFileSync(join(ws.dir, "data/HEAD"), "ref: refs/heads/main\n");
    mkdirSync(join(second.dir, "data/objects"), { recursive: true });
    mkdirSync(join(second.dir, "data/refs"), { recursive: true });
    writeFileSync(join(second.dir, "data/objects/x"), "\n");
    writeFileSync(join(second.dir, "data/refs/x"), "\n");
    for (const worktree of [first, second]) await commitBranch(worktree, "work");

    const result = applied(await mergeBranches({ workspace: ws.dir, branches: [first, second] }));

    expect(result.applied).toEqual(["pkg/ok.txt"]);
    expect(result.withheld.map((change) => change.path).sort()).toEqual([
      "cfg/HEAD",
      "cfg/config",
      "cfg/objects/info/packs",
      "cfg/refs/heads/keep",
      "data/objects/x",
      "data/refs/x",
      "pkg/.loopgraph/policy.yaml",
      "pkg/loopgraph.yaml",
    ]);
    expect(result.withheld.find((change) => change.path === "cfg/HEAD")!.reason).toMatch(/take for a repository/);
    expect(existsSync(join(ws.dir, "cfg"))).toBe(false);
    expect(readdirSync(join(ws.dir, "data"))).toEqual(["HEAD"]);
    expect(existsSync(join(ws.dir, "pkg/loopgraph.yaml")) || existsSync(join(ws.dir, "pkg/.loopgraph"))).toBe(false);
  });

  it("what the workspace ignores (no branch holds it) is never replaced: a file, a folder, a link where the branch adds a file", async () => {
    const ws = gitWorkspace();
    writeFileSync(join(ws.dir, ".gitignore"), ".env\ncache/\nbuild\n");
    writeFileSync(join(ws.dir, ".env"), "TOKEN=mine\n");
    mkdirSync(join(ws.dir, "cache"));
    writeFileSync(join(ws.dir, "cache/data.bin"), "kept\n");
    mkdirSync(join(ws.root, "elsewhere"));
    symlinkSync("../elsewhere", join(ws.dir, "build"));
    const worktree = await createBranchWorktree({ workspace: ws.dir, ...branch("t13", "coder", 0) });
    expect(existsSync(join(worktree.dir, ".env")) || existsSync(join(worktree.dir, "cache"))).toBe(false);
    writeFileSync(join(worktree.dir, ".gitignore"), "# nothing ignored\n");
    writeFileSync(join(worktree.dir, ".env"), "TOKEN=theirs\n");
    writeFileSync(join(worktree.dir, "cache"), "a file now\n");
    mkdirSync(join(worktree.dir, "build"));
    writeFileSync(join(worktree.dir, "build/out.txt"), "built\n");
    writeFileSync(join(worktree.dir, "new.txt"), "new\n");
    await commitBranch(worktree, "work");

    const result = applied(await applyBranch({ workspace: ws.dir, branch: worktree }));

    expect(result.applied).toEqual([".gitignore", "new.txt"]);
    expect(result.withheld.map((change) => change.path)).toEqual([".env", "build/out.txt", "cache"]);
    expect(result.withheld[0]!.reason).toMatch(/no branch holds/);
    expect(readFileSync(join(ws.dir, ".env"), "utf8")).toBe("TOKEN=mine\n");
    expect(readFileSync(join(ws.dir, "cache/data.bin"), "utf8")).toBe("kept\n");
    expect(readlinkSync(join(ws.dir, "build"))).toBe("../elsewhere");
    expect(readdirSync(join(ws.root, "elsewhere"))).toEqual([]);
  });
});

describe("ending a run", () => {
  it("removes the thread's worktrees but keeps its branches, until they are pruned", async () => {
    const ws = gitWorkspace();
    const first = await createBranchWorktree({ workspace: ws.dir, ...branch("t12", "coder", 0) });
    const second = await createBranchWorktree({ workspace: ws.dir, ...branch("t12", "review", 0) });
    const other = await createBranchWorktree({ workspace: ws.dir, ...branch("t13", "coder", 0) });
    mkdirSync(join(first.dir, "locked"));
    chmodSync(join(first.dir, "locked"), 0o500);

    expect((await removeBranchWorktrees(ws.dir, "t12")).sort()).toEqual([first.dir, second.dir]);
    expect(existsSync(first.dir) || existsSync(second.dir)).toBe(false);
    expect(existsSync(other.dir)).toBe(true);
    expect(
      git(ws.dir, "branch", "--list", "loopgraph/*")
        .split("\n")
        .map((line) => line.trim())
        .filter(Boolean),
    ).toEqual(["loopgraph/t12/coder-0", "loopgraph/t12/review-0", "loopgraph/t13/coder-0"]);
    expect(await removeBranchWorktrees(ws.dir, "t12")).toEqual([]);

    expect((await pruneBranches(ws.dir, "t12")).sort()).toEqual(["loopgraph/t12/coder-0", "loopgraph/t12/review-0"]);
    expect(git(ws.dir, "for-each-ref", "--format=%(refname)", "refs/heads/loopgraph/", "refs/loopgraph/").trim().split("\n")).toEqual([
      "refs/heads/loopgraph/t13/coder-0",
      "refs/loopgraph/worktree-bases/t13/coder-0",
    ]);
  });

  it("commits each of the thread's worktrees before they go, so a resume continues from what they held", async () => {
    const ws = gitWorkspace();
    const changed = await createBranchWorktree({ workspace: ws.dir, ...branch("t22", "coder", 0) });
    const untouched = await createBranchWorktree({ workspace: ws.dir, ...branch("t22", "other", 1) });
    writeFileSync(join(changed.dir, "late.txt"), "written after the visit's own commit\n");
    expect(await commitBranchWorktrees(ws.dir, "t22", "the run ended")).toEqual(["loopgraph/t22/coder-0"]);
    expect((await branchDiff(changed)).files).toEqual([{ path: "late.txt", status: "A" }]);
    expect((await branchDiff(untouched)).files).toEqual([]);
    expect(await commitBranchWorktrees(ws.dir, "t23", "none")).toEqual([]);
  });

  it("pruning a workspace without git that never had a branch makes no shadow repository", async () => {
    const ws = tempWorkspace({ files: { "a.txt": "a\n" } });
    expect(await pruneBranches(ws.dir, "t21")).toEqual([]);
    expect(existsSync(join(ws.dir, ".loopgraph/branches.git"))).toBe(false);
  });

  it("does not follow a .loopgraph that is a link", async () => {
    const ws = tempWorkspace({ files: { "a.txt": "a\n" } });
    const elsewhere = join(ws.root, "elsewhere");
    mkdirSync(join(elsewhere, "worktrees/t14/coder-0"), { recursive: true });
    symlinkSync(elsewhere, join(ws.dir, ".loopgraph"));
    await expect(createBranchWorktree({ workspace: ws.dir, ...branch("t14", "coder", 1) })).rejects.toThrow(/symbolic link/);
    await expect(removeBranchWorktrees(ws.dir, "t14")).rejects.toThrow(/symbolic link/);
    expect(existsSync(join(elsewhere, "worktrees/t14/coder-0"))).toBe(true);
  });
});
