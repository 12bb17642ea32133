/**
 * graphs/split-and-merge.yaml through the CLI, with scripted models: the planner's subtasks each
 * get a Coder in its own worktree, the merge applies all of them, the Review reads the merged
 * change and runs the check in the workspace, the Judge ends it. A conflict between the parts,
 * and a Judge that does not judge the work done, each end the run failed.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { git, ROOT } from "./helpers/cli.js";
import { finalState, run, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const EXAMPLE_SCRIPT = join(ROOT, "examples/split-and-merge.script.yaml");

const spec = (thread: string, script: string): RunSpec => ({
  graph: "split-and-merge",
  thread,
  task: "Write isPalindrome in palindrome.js, with a test",
  script,
  approval: "auto",
  json: false,
});

interface Response {
  node: string;
  content?: string;
  tool_calls?: { name: string; args: { path?: string; contents?: string } }[];
}

/** The example's script, its second part writing only `path` with `contents`, in the test's folder. */
function secondPartWrites(ws: Workspace, path: string, contents: string): string {
  const { responses } = parse(readFileSync(EXAMPLE_SCRIPT, "utf8")) as { responses: Response[] };
  const write = { name: "write_file", args: { path, contents } };
  const changed = responses.map((response) =>
    response.node === "coder[1]" && response.tool_calls ? { ...response, tool_calls: [write] } : response,
  );
  const file = join(ws.root, "changed.script.yaml");
  writeFileSync(file, stringify({ responses: changed }));
  return file;
}

describe("split-and-merge", () => {
  it("two parts in their own worktrees are merged, then reviewed as one change with the check run in the workspace, and judged done", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const result = await run(ws, spec("sm", EXAMPLE_SCRIPT));
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const { outputs } = await finalState<{ outputs: Record<string, any> }>(ws.db, "sm");
    expect(outputs.plan.subtasks).toHaveLength(2);
    expect(outputs.merge).toMatchObject({ status: "applied", applied: ["package.json", "palindrome.js", "palindrome.test.js"] });
    // One review of the merged change: the workspace's diff since before the merge, and the tests, which need both parts.
    expect(outputs.review.rating).toBe("normal");
    expect(outputs.review.checks.git_diff.comments[0]).toMatch(/^3 files changed/);
    expect(outputs.review.checks.command).toMatchObject({ passed: true, exitCode: 0 });
    expect(outputs.judge).toMatchObject({ decision: "terminate" });
    expect(readFileSync(join(ws.dir, "palindrome.js"), "utf8")).toContain("isPalindrome");
    expect(git(ws.dir, "branch", "--list", "loopgraph/*", "--format=%(refname:short)")).toBe(
      "loopgraph/sm/coder-0\nloopgraph/sm/coder-1\n",
    );
  });

  it("parts that change the same file differently: the merge's conflict ends the run failed, the workspace untouched", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const script = secondPartWrites(ws, "palindrome.js", "export const isPalindrome = () => true;\n");
    const result = await run(ws, spec("clash", script));
    expect(result.code, result.stderr + result.stdout).toBe(1);
    expect(result.stderr).toContain(
      'node "merge" could not merge loopgraph/clash/coder-1 (a conflict in palindrome.js), and the graph ended there: the workspace is unchanged',
    );
    expect(git(ws.dir, "status", "--porcelain")).toBe("");
  });

  it("a check that fails: the Judge continues, and the graph ending there fails the run with what is left", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const script = secondPartWrites(ws, "package.json", '{ "scripts": { "test": "exit 1" } }\n');
    const result = await run(ws, spec("failing", script));
    expect(result.code, result.stderr + result.stdout).toBe(1);
    expect(result.stderr).toContain(
      "the Judge did not judge the work done and the graph ended there, without another round: Write isPalindrome in palindrome.js, with a test",
    );
  });
});
