import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveInWorkspace } from "../src/tools/workspace-paths.js";
import { makeWorkspace, type TestWorkspace } from "./helpers/tool-workspace.js";

function workspaceWithEscapes(): TestWorkspace {
  const ws = makeWorkspace({ "inside.txt": "inside\n" });
  ws.symlink("link-out", ws.outside);
  ws.symlink("secret-link.txt", join(ws.outside, "secret.txt"));
  ws.symlink("dangling-out.txt", join(ws.outside, "created-through-link.txt"));
  return ws;
}

/** One call per tool that takes a path, with `path` put where that tool takes it. */
const CALLS: Record<string, (path: string) => [string, Record<string, unknown>]> = {
  read_file: (path) => ["read_file", { path }],
  write_file: (path) => ["write_file", { path, contents: "pwned\n" }],
  edit_file: (path) => ["edit_file", { path, old_string: "top", new_string: "pwned" }],
  list_dir: (path) => ["list_dir", { path }],
  glob: (path) => ["glob", { pattern: `${path}/*` }],
  grep: (path) => ["grep", { pattern: "secret", path }],
};

describe("every path-taking tool stays inside the workspace", () => {
  const ESCAPES: Record<string, (ws: TestWorkspace) => string> = {
    "a ../ path": () => "../outside/secret.txt",
    "an absolute path elsewhere": () => "/etc/passwd",
    "a symlink to a directory outside": () => "link-out/secret.txt",
    "a symlink to a file outside": () => "secret-link.txt",
  };
  for (const [tool, callFor] of Object.entries(CALLS)) {
    for (const [label, pathFor] of Object.entries(ESCAPES)) {
      it(`${tool}: ${label} is outside_workspace`, async () => {
        const ws = workspaceWithEscapes();
        let path = pathFor(ws);
        // Directory-taking tools get the directory that holds the target.
        if (tool === "list_dir" || tool === "glob") path = path === "/etc/passwd" ? "/etc" : path.replace(/\/secret\.txt$/, "");
        if (tool === "list_dir" && path === "secret-link.txt") path = "link-out";
        const [name, args] = callFor(path);
        const result = await ws.call(name, args);
        expect(result).toMatchObject({ ok: false, errorKind: "outside_workspace" });
        expect(readFileSync(join(ws.outside, "secret.txt"), "utf8")).toBe("top secret\n");
      });
    }
  }

  it("write_file through a dangling symlink that points outside is refused (nothing is created)", async () => {
    const ws = workspaceWithEscapes();
    const result = await ws.call("write_file", { path: "dangling-out.txt", contents: "x" });
    expect(result).toMatchObject({ ok: false, errorKind: "outside_workspace", content: expect.stringContaining("through a symlink") });
    expect(existsSync(join(ws.outside, "created-through-link.txt"))).toBe(false);
  });

  it("a dangling symlink into a missing directory outside is refused too", async () => {
    const ws = workspaceWithEscapes();
    ws.symlink("dangling-dir", join(ws.outside, "not-yet", "deeper"));
    expect(await ws.call("write_file", { path: "dangling-dir/x.txt", contents: "x" })).toMatchObject({ errorKind: "outside_workspace" });
    expect(existsSync(join(ws.outside, "not-yet"))).toBe(false);
  });

  it("accepts absolute paths inside the workspace, also through an alias of it, and symlinks within it", async () => {
    const ws = workspaceWithEscapes();
    ws.symlink("alias-of-inside.txt", "inside.txt");
    const alias = join(ws.outside, "..", "ws-alias");
    symlinkSync(ws.root, alias);
    expect(await ws.call("read_file", { path: join(ws.root, "inside.txt") })).toMatchObject({ ok: true });
    expect(await ws.call("read_file", { path: join(alias, "inside.txt") })).toMatchObject({ ok: true });
    expect(await ws.call("read_file", { path: "alias-of-inside.txt" })).toMatchObject({ ok: true, content: "     1\tinside" });
    expect(resolveInWorkspace(ws.root, "sub/../inside.txt")).toBe(join(ws.root, "inside.txt"));
  });

  it("walks never follow a symlink out: glob lists the link itself, grep does not search behind it", async () => {
    const ws = workspaceWithEscapes();
    const globbed = await ws.call("glob", { pattern: "**/*" });
    expect(globbed.content.split("\n")).toEqual(["dangling-out.txt", "inside.txt", "link-out", "secret-link.txt"]);
    const grepped = await ws.call("grep", { pattern: "secret" });
    expect(grepped.content).toBe('No matches for "secret" in .');
  });

  it("a symlink loop is a clean failure", async () => {
    const ws = makeWorkspace();
    ws.symlink("loop-a", "loop-b");
    ws.symlink("loop-b", "loop-a");
    const result = await ws.call("read_file", { path: "loop-a" });
    expect(result.ok).toBe(false);
    expect(result.content).not.toContain("\n");
  });
});
