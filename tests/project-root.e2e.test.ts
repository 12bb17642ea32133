/**
 * The project root: commands run from a subdirectory of a project use the project's store,
 * graphs and workspace, and create nothing in the subdirectory (real CLI processes).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../src/project.js";
import { cleanEnv, runCli, trustIn } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const GRAPH = [
  "version: 1",
  "name: hello",
  "description: counts one step",
  "nodes:",
  "  count: { kind: function, module: ./count.mjs }",
  "edges:",
  "  - { from: START, to: count }",
  "  - { from: count, to: END }",
  "",
].join("\n");

describe("projectRoot", () => {
  it("is the nearest directory up with loopgraph.yaml, .loopgraph/ or .git (a worktree's .git file too), else the directory itself", () => {
    const { root } = tempWorkspace();
    const deep = join(root, "a", "b", "c");
    mkdirSync(deep, { recursive: true });
    expect(projectRoot(deep)).toBe(deep);
    writeFileSync(join(root, "a", ".git"), "gitdir: /elsewhere/.git/worktrees/a\n");
    expect(projectRoot(deep)).toBe(join(root, "a"));
    mkdirSync(join(root, "a", "b", ".loopgraph"));
    expect(projectRoot(deep)).toBe(join(root, "a", "b"));
    writeFileSync(join(deep, "loopgraph.yaml"), "model: scripted:x.yaml\n");
    expect(projectRoot(deep)).toBe(deep);
    // A folder named like the config file is not one.
    mkdirSync(join(root, "x", "loopgraph.yaml"), { recursive: true });
    expect(projectRoot(join(root, "x"))).toBe(join(root, "x"));
  });
});

describe("commands in a subdirectory of a project", () => {
  it("run, inspect, status and graphs list use the project's store and graphs; the subdirectory stays as it was", async () => {
    const ws = tempWorkspace({
      git: true,
      files: {
        "graphs/hello.yaml": GRAPH,
        "graphs/count.mjs": "export default () => ({ output: 'counted' });\n",
        "src/app/main.ts": "export {};\n",
      },
    });
    const sub = join(ws.dir, "src", "app");
    const options = { cwd: sub, env: cleanEnv() };
    trustIn(ws.dir);

    const ran = await runCli(["run", "hello", "--thread", "p1"], options);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect(existsSync(join(ws.dir, ".loopgraph", "loopgraph.db"))).toBe(true);

    const listed = await runCli(["inspect"], options);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("p1");
    const status = await runCli(["status", "p1", "--json"], options);
    expect(status.code).toBe(0);
    const inspected = await runCli(["inspect", "p1", "--json"], options);
    expect(inspected.code).toBe(0);
    // The thread worked on the project, not on the subdirectory.
    expect(JSON.parse(inspected.stdout)).toMatchObject({ thread: { workspace: ws.dir } });
    const graphs = await runCli(["graphs", "list"], options);
    expect(graphs.stdout).toMatch(/hello\s+.*counts one step/);

    expect(existsSync(join(sub, ".loopgraph"))).toBe(false);
    expect(existsSync(join(ws.dir, "src", ".loopgraph"))).toBe(false);
  });
});
