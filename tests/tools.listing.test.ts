import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeWorkspace, sharedToolWorkspace, type TestWorkspace } from "./helpers/tool-workspace.js";

/** A git repository with nested .gitignore files, a negation, a re-included directory and the usual noise. */
const PROJECT: Record<string, string> = {
  ".gitignore": "*.log\nbuild/\n/secret.env\ncache/\n!keep.log\n",
  ".github/workflows/ci.yml": "on: push\n",
  "README.md": "# demo\n",
  "secret.env": "KEY=1\n",
  "debug.log": "noise\n",
  "keep.log": "kept\n",
  "build/out.js": "built\n",
  "src/index.ts": "export {};\n",
  "src/app.log": "noise\n",
  "src/.gitignore": "generated/\n!important.log\n",
  "src/important.log": "kept too\n",
  "src/generated/types.ts": "export type T = 1;\n",
  "src/cache/.gitignore": "", // inside an ignored directory: never read
  "lib/secret.env": "anchored rule does not apply here\n",
  "packages/a/.gitignore": "!cache/\n",
  "packages/a/cache/data.json": "{}\n",
  "node_modules/dep/index.js": "module.exports = 1;\n",
  ".loopgraph/artifacts/t/x.txt": "artifact\n",
  "a.txt": "sorting\n",
  "a/b.txt": "sorting\n",
};
const project = (): TestWorkspace => makeWorkspace(PROJECT, { git: true });

/** Shared by the tests that only read it. */
const shared = sharedToolWorkspace(PROJECT, { git: true });

describe("list_dir", () => {
  it("lists type, size and name, sorted, without .git, node_modules, .loopgraph or ignored entries", async () => {
    const ws = shared;
    const result = await ws.call("list_dir", {});
    expect(result.content.split("\n")).toEqual([
      "./ (9 entries; 6 not shown: .git, node_modules, .loopgraph or ignored)",
      "dir              -  .github/",
      "file            42  .gitignore",
      "file             7  README.md",
      "dir              -  a/",
      "file             8  a.txt",
      "file             5  keep.log",
      "dir              -  lib/",
      "dir              -  packages/",
      "dir              -  src/",
    ]);
  });

  it("applies nested .gitignore files and their negations", async () => {
    const ws = shared;
    const src = await ws.call("list_dir", { path: "src" });
    expect(
      src.content
        .split("\n")
        .slice(1)
        .map((line) => line.trim().split(/\s+/).pop()),
    ).toEqual([".gitignore", "important.log", "index.ts"]);
  });

  it("shows symlinks with their target, and lists an ignored directory it is pointed at", async () => {
    const ws = project(); // own workspace: it adds a symlink
    ws.symlink("current", "src");
    const root = await ws.call("list_dir", {});
    expect(root.content).toContain("symlink          -  current -> src");
    const build = await ws.call("list_dir", { path: "build" });
    expect(build.content).toBe("build/ (1 entry)\nfile             6  out.js");
    const deps = await ws.call("list_dir", { path: "node_modules/dep" });
    expect(deps.content).toContain("index.js");
  });

  it("errors clearly on a file or a missing directory", async () => {
    const ws = shared;
    expect(await ws.call("list_dir", { path: "README.md" })).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
    expect(await ws.call("list_dir", { path: "nope" })).toMatchObject({ ok: false, errorKind: "file_not_found" });
  });
});

describe("glob", () => {
  it("returns visible files sorted depth-first, dotfiles included, ignored and skipped folders left out", async () => {
    const ws = shared;
    const result = await ws.call("glob", { pattern: "**/*" });
    expect(result.content.split("\n")).toEqual([
      ".github/workflows/ci.yml",
      ".gitignore",
      "README.md",
      "a/b.txt",
      "a.txt",
      "keep.log",
      "lib/secret.env",
      "packages/a/.gitignore",
      "packages/a/cache/data.json",
      "src/.gitignore",
      "src/important.log",
      "src/index.ts",
    ]);
  });

  it("matches relative to the workspace root, with braces and a literal base directory", async () => {
    const ws = shared;
    expect((await ws.call("glob", { pattern: "*.md" })).content).toBe("README.md");
    expect((await ws.call("glob", { pattern: "src/**/*.{ts,log}" })).content).toBe("src/important.log\nsrc/index.ts");
    expect((await ws.call("glob", { pattern: "**/*.yml" })).content).toBe(".github/workflows/ci.yml");
    expect((await ws.call("glob", { pattern: join(ws.root, "src", "*.ts") })).content).toBe("src/index.ts");
    expect((await ws.call("glob", { pattern: "src/index.ts" })).content).toBe("src/index.ts");
  });

  it("looks inside an ignored directory only when the pattern names it", async () => {
    const ws = shared;
    expect((await ws.call("glob", { pattern: "**/*.js" })).content).toBe("No files match **/*.js");
    expect((await ws.call("glob", { pattern: "node_modules/dep/*.js" })).content).toBe("node_modules/dep/index.js");
    expect((await ws.call("glob", { pattern: "build/**" })).content).toBe("build/out.js");
  });

  it("says when it is capped", async () => {
    const ws = makeWorkspace(Object.fromEntries(Array.from({ length: 510 }, (_, i) => [`many/f${String(i).padStart(3, "0")}.txt`, ""])));
    const result = await ws.call("glob", { pattern: "many/*.txt" });
    const lines = result.content.split("\n");
    expect(lines).toHaveLength(501);
    expect(lines[500]).toBe("(showing the first 500 matches; more exist: narrow the pattern)");
  });

  it("rejects negations and `..` after a wildcard; a missing base matches nothing", async () => {
    const ws = shared;
    expect(await ws.call("glob", { pattern: "!*.ts" })).toMatchObject({ errorKind: "invalid_arguments" });
    expect(await ws.call("glob", { pattern: "src/**/../../x" })).toMatchObject({ errorKind: "invalid_arguments" });
    expect((await ws.call("glob", { pattern: "nope/**" })).content).toBe("No files match nope/**");
  });
});

describe("ignore rules", () => {
  it("honour .gitignore only inside a git repository (as ripgrep does), .ignore files always", async () => {
    const ws = makeWorkspace({ ".gitignore": "*.log\n", ".ignore": "*.tmp\n", "a.log": "", "b.tmp": "", "c.txt": "" });
    expect((await ws.call("glob", { pattern: "*" })).content).toBe(".gitignore\n.ignore\na.log\nc.txt");
  });

  it("read .git/info/exclude, and the repository's .gitignore from a workspace in a subfolder", async () => {
    const ws = makeWorkspace({ ".gitignore": "*.log\n", "pkg/a.log": "", "pkg/b.tmp": "", "pkg/c.txt": "" }, { git: true });
    writeFileSync(join(ws.root, ".git", "info", "exclude"), "*.tmp\n");
    const pkg = { ...ws.ctx, workspace: join(ws.root, "pkg") };
    const { executeToolCall } = await import("../src/tools/registry.js");
    const result = await executeToolCall({ id: "1", name: "glob", args: { pattern: "*" } }, pkg);
    expect(result.content).toBe("c.txt");
  });

  it("stop git rules at a nested repository's root", async () => {
    const ws = makeWorkspace({ ".gitignore": "*.log\n", "vendor/x/a.log": "" }, { git: true });
    mkdirSync(join(ws.root, "vendor/x/.git"));
    expect((await ws.call("glob", { pattern: "vendor/**" })).content).toBe("vendor/x/a.log");
  });
});
