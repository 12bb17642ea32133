import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyRewind } from "../src/snapshots/apply-rewind.js";
import { openSnapshotRepository, SNAPSHOTS_GIT_DIR } from "../src/snapshots/shadow-repo.js";
import { git } from "./helpers/cli.js";
import { fingerprint } from "./helpers/fingerprint.js";
import { tempWorkspace } from "./helpers/workspace.js";

const workspace = (): string => tempWorkspace({ prefix: "loopgraph-snap-" }).dir;

const isExecutable = (path: string): boolean => (statSync(path).mode & 0o100) !== 0;

describe("the snapshot repository", () => {
  it("captures the workspace in .loopgraph/snapshots.git without a .git, leaving out .loopgraph/, node_modules/ and ignored files", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "a.txt"), "a\n");
    writeFileSync(join(dir, ".gitignore"), "*.log\n");
    writeFileSync(join(dir, "debug.log"), "noise\n");
    mkdirSync(join(dir, "node_modules/pkg"), { recursive: true });
    writeFileSync(join(dir, "node_modules/pkg/index.js"), "x\n");
    const repo = await openSnapshotRepository(dir);
    const tree = await repo.capture();
    expect(tree).toMatch(/^[0-9a-f]{40}$/);
    expect(existsSync(join(dir, SNAPSHOTS_GIT_DIR, "HEAD"))).toBe(true);
    expect(existsSync(join(dir, ".git"))).toBe(false);
    const files = git(dir, `--git-dir=${join(dir, SNAPSHOTS_GIT_DIR)}`, "ls-tree", "-r", "--name-only", tree)
      .trim()
      .split("\n");
    expect(files.sort()).toEqual([".gitignore", "a.txt"]);
    // The same content is the same tree; a change is a new one.
    expect(await repo.capture()).toBe(tree);
    writeFileSync(join(dir, "a.txt"), "b\n");
    expect(await repo.capture()).not.toBe(tree);
  });

  it("lists added, deleted and changed paths between two trees, mode changes included", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "keep.txt"), "same\n");
    writeFileSync(join(dir, "edit.txt"), "old\n");
    writeFileSync(join(dir, "gone.txt"), "bye\n");
    writeFileSync(join(dir, "tool.sh"), "#!/bin/sh\n");
    const repo = await openSnapshotRepository(dir);
    const before = await repo.capture();
    writeFileSync(join(dir, "edit.txt"), "new\n");
    rmSync(join(dir, "gone.txt"));
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub/new.txt"), "hi\n");
    chmodSync(join(dir, "tool.sh"), 0o755);
    const after = await repo.capture();
    const changes = await repo.diff(before, after);
    expect(changes.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "edit.txt", status: "M" },
      { path: "gone.txt", status: "D" },
      { path: "sub/new.txt", status: "A" },
      { path: "tool.sh", status: "M" },
    ]);
    expect(await repo.diff(after, after)).toEqual([]);
  });

  it("restores content byte for byte, the executable bit and symlinks, recreates deleted files and deletes new ones", async () => {
    const dir = workspace();
    const binary = Buffer.from([0, 1, 2, 255, 13, 10, 10, 13, 0]);
    writeFileSync(join(dir, "crlf.txt"), "one\r\ntwo\r\n");
    writeFileSync(join(dir, "blob.bin"), binary);
    writeFileSync(join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
    chmodSync(join(dir, "run.sh"), 0o755);
    writeFileSync(join(dir, "doomed.txt"), "keep me\n");
    symlinkSync("crlf.txt", join(dir, "link"));
    // A workspace asking for end-of-line conversion: snapshots must not convert anything.
    writeFileSync(join(dir, ".gitattributes"), "* text=auto eol=lf\n");
    const original = fingerprint(dir, (path) => path.startsWith(".loopgraph"));
    const repo = await openSnapshotRepository(dir);
    const tree = await repo.capture();

    writeFileSync(join(dir, "crlf.txt"), "changed\n");
    writeFileSync(join(dir, "blob.bin"), "text now");
    chmodSync(join(dir, "run.sh"), 0o644);
    rmSync(join(dir, "doomed.txt"));
    rmSync(join(dir, "link"));
    writeFileSync(join(dir, "link"), "a file where the link was\n");
    mkdirSync(join(dir, "new/deep"), { recursive: true });
    writeFileSync(join(dir, "new/deep/file.txt"), "agent's\n");

    await applyRewind(repo, tree, [
      { action: "restore", path: "crlf.txt" },
      { action: "restore", path: "blob.bin" },
      { action: "restore", path: "run.sh" },
      { action: "recreate", path: "doomed.txt" },
      { action: "restore", path: "link" },
      { action: "delete", path: "new/deep/file.txt" },
    ]);
    expect(fingerprint(dir, (path) => path.startsWith(".loopgraph"))).toEqual(original);
    expect(readFileSync(join(dir, "blob.bin"))).toEqual(binary);
    expect(isExecutable(join(dir, "run.sh"))).toBe(true);
    expect(lstatSync(join(dir, "link")).isSymbolicLink()).toBe(true);
    // Folders the deletion emptied go too.
    expect(existsSync(join(dir, "new"))).toBe(false);
  });

  it("turns a folder the agent made back into the file it replaced, but never clears a folder holding other files", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "thing"), "a file\n");
    const repo = await openSnapshotRepository(dir);
    const tree = await repo.capture();
    rmSync(join(dir, "thing"));
    mkdirSync(join(dir, "thing/deep"), { recursive: true });
    writeFileSync(join(dir, "thing/deep/agent.txt"), "agent\n");
    const plan = [
      { action: "restore" as const, path: "thing" },
      { action: "delete" as const, path: "thing/deep/agent.txt" },
    ];
    writeFileSync(join(dir, "thing/mine.txt"), "the user's\n");
    await expect(applyRewind(repo, tree, plan)).rejects.toThrow(/cannot restore thing: .*did not write/);
    expect(readFileSync(join(dir, "thing/deep/agent.txt"), "utf8")).toBe("agent\n");

    rmSync(join(dir, "thing/mine.txt"));
    await applyRewind(repo, tree, plan);
    expect(readFileSync(join(dir, "thing"), "utf8")).toBe("a file\n");
  });

  it("never touches the user's repository: HEAD, index, config, refs and objects stay as they were", async () => {
    const dir = workspace();
    git(dir, "init", "-q");
    writeFileSync(join(dir, "tracked.txt"), "one\n");
    git(dir, "add", "-A");
    git(dir, "commit", "-qm", "initial");
    writeFileSync(join(dir, "untracked.txt"), "mine\n");
    writeFileSync(join(dir, "tracked.txt"), "edited, not staged\n");
    const dotGit = fingerprint(join(dir, ".git"));
    const status = git(dir, "status", "--porcelain");

    const repo = await openSnapshotRepository(dir);
    const before = await repo.capture();
    writeFileSync(join(dir, "tracked.txt"), "agent\n");
    await repo.capture();
    await repo.keep([before], "test");
    await applyRewind(repo, before, [{ action: "restore", path: "tracked.txt" }]);

    expect(readFileSync(join(dir, "tracked.txt"), "utf8")).toBe("edited, not staged\n");
    expect(fingerprint(join(dir, ".git"))).toEqual(dotGit);
    expect(git(dir, "status", "--porcelain")).toBe(status);
  });

  it("keeps trees reachable as commits without a git identity", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const repo = await openSnapshotRepository(dir);
    const before = await repo.capture();
    writeFileSync(join(dir, "a.txt"), "b\n");
    const after = await repo.capture();
    const home = workspace();
    const previous = {
      HOME: process.env.HOME,
      XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME,
      GIT_CONFIG_NOSYSTEM: process.env.GIT_CONFIG_NOSYSTEM,
    };
    Object.assign(process.env, { HOME: home, XDG_CONFIG_HOME: home, GIT_CONFIG_NOSYSTEM: "1" });
    try {
      const commit = await repo.keep([before, after], "step 1");
      const gitDir = `--git-dir=${join(dir, SNAPSHOTS_GIT_DIR)}`;
      expect(git(dir, gitDir, "rev-parse", `${commit}^{tree}`).trim()).toBe(after);
      expect(git(dir, gitDir, "rev-parse", `${commit}^^{tree}`).trim()).toBe(before);
      expect(git(dir, gitDir, "for-each-ref", "--format=%(objectname)", "refs/loopgraph/").trim()).toBe(commit);
    } finally {
      for (const [key, value] of Object.entries(previous)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it("will not open a missing repository when asked not to create one", async () => {
    const dir = workspace();
    await expect(openSnapshotRepository(dir, { create: false })).rejects.toThrow(/no snapshot repository/);
    expect(existsSync(join(dir, SNAPSHOTS_GIT_DIR))).toBe(false);
  });
});
