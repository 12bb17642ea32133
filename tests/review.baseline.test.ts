import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { captureBaseline, changesSinceBaseline, diffSinceBaseline } from "../src/nodes/review/baseline.js";
import { git } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** An empty directory, not a repository. */
const scratch = (): string => tempWorkspace({ prefix: "loopgraph-review-" }).dir;

/** A repository with one commit: tracked.txt, doomed.txt, .gitignore (ignoring *.log). */
const repository = (): string =>
  tempWorkspace({
    prefix: "loopgraph-review-",
    git: true,
    files: { "tracked.txt": "one\n", "doomed.txt": "bye\n", ".gitignore": "*.log\n" },
  }).dir;

/** Everything of the user's repository the snapshots must leave alone. */
function repositoryView(dir: string) {
  const index = join(dir, ".git", "index");
  return {
    status: git(dir, "status", "--porcelain=v1", "--untracked-files=all"),
    index: createHash("sha256").update(readFileSync(index)).digest("hex"),
    head: git(dir, "rev-parse", "HEAD"),
    refs: git(dir, "for-each-ref"),
    stash: git(dir, "stash", "list"),
  };
}

describe("workspace baseline and diff in a git repository", () => {
  it("shows edits, new untracked files and deletions, and leaves the index, HEAD, refs and stash alone", async () => {
    const dir = repository();
    writeFileSync(join(dir, "staged.txt"), "staged\n");
    git(dir, "add", "staged.txt");
    const untouched = repositoryView(dir);
    const baseline = await captureBaseline(dir);
    expect(baseline).toMatch(/^git:[0-9a-f]{40}$/);
    expect(repositoryView(dir)).toEqual(untouched);

    appendFileSync(join(dir, "tracked.txt"), "two\n");
    writeFileSync(join(dir, "new.txt"), "fresh\n");
    unlinkSync(join(dir, "doomed.txt"));
    writeFileSync(join(dir, "debug.log"), "ignored\n");
    mkdirSync(join(dir, ".loopgraph"));
    writeFileSync(join(dir, ".loopgraph", "loopgraph.db"), "our own state\n");
    const before = repositoryView(dir);

    const changes = await changesSinceBaseline(dir, baseline);

    expect(changes.files).toEqual([
      { path: "doomed.txt", added: 0, removed: 1 },
      { path: "new.txt", added: 1, removed: 0 },
      { path: "tracked.txt", added: 1, removed: 0 },
    ]);
    expect(changes.patch).toContain("diff --git a/tracked.txt b/tracked.txt");
    expect(changes.patch).toContain("+two");
    expect(changes.patch).toMatch(/new file mode 100644[\s\S]*\+fresh/);
    expect(changes.patch).toMatch(/deleted file mode 100644[\s\S]*-bye/);
    expect(changes.patch).not.toContain("staged.txt");
    expect(changes.patch).not.toContain("debug.log");
    expect(changes.patch).not.toContain(".loopgraph");
    expect(repositoryView(dir)).toEqual(before);
    expect(git(dir, "diff", "--cached", "--name-only")).toBe("staged.txt\n");
  });

  it("an unchanged workspace has an empty diff", async () => {
    const dir = repository();
    writeFileSync(join(dir, "untracked-before.txt"), "already here\n");
    const baseline = await captureBaseline(dir);
    expect(await diffSinceBaseline(dir, baseline)).toBe("");
  });

  it("in a subdirectory of a repository, shows only the workspace's changes, with paths relative to it", async () => {
    const dir = repository();
    const workspace = join(dir, "pkg");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "a.txt"), "a\n");
    const baseline = await captureBaseline(workspace);
    appendFileSync(join(workspace, "a.txt"), "b\n");
    appendFileSync(join(dir, "tracked.txt"), "outside the workspace\n");

    const changes = await changesSinceBaseline(workspace, baseline);
    expect(changes.files).toEqual([{ path: "a.txt", added: 1, removed: 0 }]);
    expect(changes.patch).toContain("diff --git a/a.txt b/a.txt");
  });

  it("a workspace that ignores .loopgraph/ in its .gitignore still snapshots", async () => {
    const dir = repository();
    writeFileSync(join(dir, ".gitignore"), "*.log\n.loopgraph/\n");
    mkdirSync(join(dir, ".loopgraph"));
    const baseline = await captureBaseline(dir);
    writeFileSync(join(dir, ".loopgraph", "state"), "x\n");
    writeFileSync(join(dir, "b.txt"), "b\n");
    expect((await changesSinceBaseline(dir, baseline)).files.map((file) => file.path)).toEqual(["b.txt"]);
  });

  it("reports binary files without line counts", async () => {
    const dir = repository();
    const baseline = await captureBaseline(dir);
    writeFileSync(join(dir, "image.bin"), Buffer.from([0, 1, 2, 0, 255]));
    const changes = await changesSinceBaseline(dir, baseline);
    expect(changes.files).toEqual([{ path: "image.bin" }]);
    expect(changes.patch).toContain("Binary files");
  });
});

describe("workspace baseline and diff outside git", () => {
  it("keeps a shadow repository under .loopgraph/ and never creates .git in the workspace", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "notes.txt"), "first\n");
    writeFileSync(join(dir, "old.txt"), "old\n");
    mkdirSync(join(dir, "node_modules"));
    writeFileSync(join(dir, "node_modules", "dep.js"), "dependency\n");
    const baseline = await captureBaseline(dir);
    expect(baseline).toMatch(/^shadow:[0-9a-f]{40}$/);
    expect(existsSync(join(dir, ".loopgraph", "shadow.git", "HEAD"))).toBe(true);

    appendFileSync(join(dir, "notes.txt"), "second\n");
    writeFileSync(join(dir, "added.txt"), "new\n");
    rmSync(join(dir, "old.txt"));
    writeFileSync(join(dir, "node_modules", "dep.js"), "changed dependency\n");

    const changes = await changesSinceBaseline(dir, baseline);
    expect(changes.files.map((file) => file.path)).toEqual(["added.txt", "notes.txt", "old.txt"]);
    expect(changes.patch).toContain("+second");
    expect(existsSync(join(dir, ".git"))).toBe(false);
  });

  it("respects a .gitignore in a workspace without a repository", async () => {
    const dir = scratch();
    writeFileSync(join(dir, ".gitignore"), "build/\n");
    const baseline = await captureBaseline(dir);
    mkdirSync(join(dir, "build"));
    writeFileSync(join(dir, "build", "out.js"), "generated\n");
    writeFileSync(join(dir, "src.js"), "source\n");
    expect((await changesSinceBaseline(dir, baseline)).files.map((file) => file.path)).toEqual(["src.js"]);
  });

  it("a shadow baseline still diffs after the workspace becomes a repository", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const baseline = await captureBaseline(dir);
    git(dir, "init", "-q");
    writeFileSync(join(dir, "b.txt"), "b\n");
    expect((await changesSinceBaseline(dir, baseline)).files.map((file) => file.path)).toEqual(["b.txt"]);
  });

  it("fails clearly when the workspace is gone or the baseline is not one", async () => {
    const dir = scratch();
    const baseline = await captureBaseline(dir);
    await expect(diffSinceBaseline(dir, "HEAD")).rejects.toThrow(/invalid workspace baseline "HEAD"/);
    rmSync(dir, { recursive: true, force: true });
    await expect(diffSinceBaseline(dir, baseline)).rejects.toThrow(/workspace not found/);
  });
});
