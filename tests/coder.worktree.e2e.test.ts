/**
 * Coders in their own branch worktrees (`workspace: worktree`) and the `merge` node, through the
 * CLI with scripted models: coders that run at the same time never see each other's files nor
 * change the workspace; merge applies their branches, or says the conflict; the worktree folders
 * go when the run ends, the branches when the thread is pruned; a resume after kill -9 continues
 * in the same folder.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { cleanEnv, git, parseEvents, ROOT, runCli, SANDBOX_AS_FOUND } from "./helpers/cli.js";
import { finalState, run, startResume, startRun, type RunSpec } from "./helpers/e2e.js";
import type { GraphDefinition } from "../src/format/types.js";
import type { MergeNodeDefinition } from "../src/nodes/merge/definition.js";
import { checkMergedCoders } from "../src/nodes/merge/node.js";
import { checkAttemptsMapped } from "../src/nodes/looper/attempts.js";
import type { LooperNodeDefinition } from "../src/nodes/looper/definition.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/worktree");
const TWO_CODERS = join(FIXTURES, "two-coders.yaml");
const ONE_CODER = join(FIXTURES, "one-coder.yaml");

interface ToolCall {
  name: string;
  args: unknown;
}

const repo = (): Workspace => tempWorkspace({ git: true, files: { "README.md": "# demo\n", "secret.txt": "the user's own\n" } });

/** A scripted model's file beside the workspace: each node's calls, one a step, then its closing answer. */
function script(ws: Workspace, name: string, calls: Record<string, ToolCall[]>): string {
  const responses = Object.entries(calls).flatMap(([node, steps]) => [
    ...steps.map((step) => ({ node, tool_calls: [step] })),
    { node, content: `${node} done` },
  ]);
  const file = join(ws.root, `${name}.script.yaml`);
  writeFileSync(file, stringify({ responses }));
  return file;
}

const write = (path: string, contents: string) => ({ name: "write_file", args: { path, contents } });
const shell = (command: string) => ({ name: "shell", args: { command } });

const spec = (graph: string, thread: string, scriptFile: string, extra: string[] = []): RunSpec => ({
  graph,
  thread,
  task: "do the task",
  script: scriptFile,
  approval: "auto",
  extra,
});

interface CoderOutput {
  status: string;
  branch: string;
  files: { path: string; status: string }[];
  toolCalls: { name: string; ok: boolean; preview: string }[];
}
type MergeOutput =
  | { status: "applied"; applied: string[]; withheld: unknown[] }
  | { status: "conflict"; conflict: { branch: string; paths: string[]; details: string[] } };

async function outputs(ws: Workspace, thread: string): Promise<Record<string, CoderOutput> & { merge: MergeOutput }> {
  return (await finalState<{ outputs: Record<string, CoderOutput> & { merge: MergeOutput } }>(ws.db, thread)).outputs;
}

const branches = (ws: Workspace): string[] =>
  git(ws.dir, "branch", "--list", "loopgraph/*", "--format=%(refname:short)").split("\n").filter(Boolean);
const worktreeOf = (ws: Workspace, thread: string, node: string): string => join(ws.dir, ".loopgraph/worktrees", thread, `${node}-0`);

describe("coders in their own worktrees, then merged", () => {
  it("two coders at once: neither sees the other's files, the workspace is untouched until merge applies both; the folders go at the end, the branches with threads prune", async () => {
    const ws = repo();
    const scriptFile = script(ws, "two", {
      coder_a: [
        write("a.txt", "from a\n"),
        // Waits (a while at most) for coder_b's file in its own folder, then looks at its own and at the workspace.
        shell(
          'for i in $(seq 200); do [ -e ../coder_b-0/b.txt ] && echo "b wrote" && break; sleep 0.05; done; echo "mine: $(ls | tr "\\n" " ")"; echo "main: $(ls ../../../.. | tr "\\n" " ")"',
        ),
      ],
      coder_b: [write("b.txt", "from b\n"), shell("cat b.txt")],
    });
    const result = await run(ws, spec(TWO_CODERS, "two", scriptFile));
    expect(result.code, result.stderr + result.stdout).toBe(0);

    const out = await outputs(ws, "two");
    const seen = out.coder_a!.toolCalls.find((call) => call.name === "shell")!.preview;
    expect(seen).toContain("b wrote");
    expect(seen).toContain("mine: README.md a.txt secret.txt");
    expect(seen).toContain("main: README.md secret.txt");
    expect(out.coder_b!.toolCalls.find((call) => call.name === "shell")!.preview).toContain("from b");
    expect(out.coder_a).toMatchObject({ status: "success", branch: "loopgraph/two/coder_a-0", files: [{ path: "a.txt", status: "A" }] });
    expect(out.coder_b).toMatchObject({ branch: "loopgraph/two/coder_b-0", files: [{ path: "b.txt", status: "A" }] });
    expect(out.merge).toEqual({
      status: "applied",
      applied: ["a.txt", "b.txt"],
      withheld: [],
      baseline: expect.stringMatching(/^git:[0-9a-f]{40}$/),
    });
    expect(out.on_conflict).toBeUndefined();

    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("from a\n");
    expect(readFileSync(join(ws.dir, "b.txt"), "utf8")).toBe("from b\n");
    expect(existsSync(join(ws.dir, ".loopgraph/worktrees/two"))).toBe(false);
    expect(branches(ws)).toEqual(["loopgraph/two/coder_a-0", "loopgraph/two/coder_b-0"]);
    expect(git(ws.dir, "status", "--porcelain")).toBe("?? a.txt\n?? b.txt\n");

    // A recorded replay takes the worktrees and the merge from the record: nothing in the workspace or its repository changes.
    const before = git(ws.dir, "for-each-ref");
    const replayed = await runCli(["replay", "two", "--recorded", "--db", ws.db, "--json"]);
    expect(replayed.code, replayed.stderr + replayed.stdout).toBe(0);
    expect(git(ws.dir, "for-each-ref")).toBe(before);
    expect(git(ws.dir, "status", "--porcelain")).toBe("?? a.txt\n?? b.txt\n");
    expect(existsSync(join(ws.dir, ".loopgraph/worktrees"))).toEqual(true);
    expect(readdirSync(join(ws.dir, ".loopgraph/worktrees"))).toEqual([]);

    await new Promise((done) => setTimeout(done, 1100));
    const pruned = await runCli(["threads", "prune", "--older-than", "1s", "--db", ws.db, "--json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(JSON.parse(pruned.stdout)).toContainEqual({ threadId: "two", branches: ["loopgraph/two/coder_a-0", "loopgraph/two/coder_b-0"] });
    expect(branches(ws)).toEqual([]);
  });

  it("a conflicting pair: merge's output names the branch and the path, the workspace is unchanged, the run finishes", async () => {
    const ws = repo();
    const scriptFile = script(ws, "clash", {
      coder_a: [write("same.txt", "a's version\n")],
      coder_b: [write("same.txt", "b's version\n")],
    });
    const result = await run(ws, spec(TWO_CODERS, "clash", scriptFile));
    expect(result.code, result.stderr + result.stdout).toBe(0);

    const { merge } = await outputs(ws, "clash");
    // The graph routes on the merge's status.
    expect((await finalState<{ vars: { log: string[] } }>(ws.db, "clash")).vars.log).toEqual(["on_conflict"]);
    expect(merge).toMatchObject({ status: "conflict", conflict: { branch: "loopgraph/clash/coder_b-0", paths: ["same.txt"] } });
    expect(existsSync(join(ws.dir, "same.txt"))).toBe(false);
    expect(git(ws.dir, "status", "--porcelain")).toBe("");
  });

  it("a merge naming a coder that works in the shared workspace is refused before anything runs (exit 2)", async () => {
    const ws = repo();
    const graph = join(ws.root, "shared-merge.yaml");
    writeFileSync(
      graph,
      stringify({
        version: 1,
        name: "shared-merge",
        nodes: { coder_a: { kind: "coder" }, merge: { kind: "merge", branches: ["coder_a"] } },
        edges: [
          { from: "START", to: "coder_a" },
          { from: "coder_a", to: "merge" },
          { from: "merge", to: "END" },
        ],
      }),
    );
    const result = await run(ws, spec(graph, "refused", script(ws, "refused", { coder_a: [] })));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('node "merge" merges the branch of "coder_a", which is not a coder with workspace: worktree');
  });
});

describe("a worktree coder's MCP servers", () => {
  it("start in its worktree: what a stdio server writes lands on the coder's branch, not in the run's workspace", async () => {
    const ws = repo();
    const home = join(ws.root, "config");
    mkdirSync(join(home, "loopgraph"), { recursive: true });
    const server = join(ROOT, "tests/fixtures/mcp/minimal-server.mjs");
    writeFileSync(
      join(home, "loopgraph", "config.yaml"),
      `mcp_servers:\n  minimal:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(server)}]\n`,
    );
    // An allow rule for its tools: MCP calls otherwise ask in every mode.
    writeFileSync(join(home, "loopgraph", "policy.yaml"), "rules:\n  - { tool: minimal__write, decision: allow }\n");
    const scriptFile = script(ws, "mcp", { coder_a: [{ name: "minimal__write", args: {} }] });
    const env = cleanEnv({ XDG_CONFIG_HOME: home });
    const result = await run(ws, { ...spec(ONE_CODER, "mcp", scriptFile), extra: ["--no-sandbox"] }, { env });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const out = await outputs(ws, "mcp");
    expect(out.coder_a!.toolCalls.map((call) => `${call.name}:${call.ok}`)).toEqual(["minimal__write:true"]);
    expect(out.coder_a!.files).toEqual([{ path: "planted-wrote", status: "A" }]);
    expect(git(ws.dir, "show", "loopgraph/mcp/coder_a-0:planted-wrote")).toBe("x");
  });
});

describe("a looper with attempts", () => {
  it("needs its coder mapped over them, in worktrees: a graph that would run one Coder in the workspace is refused", () => {
    const looper = {
      id: "looper",
      kind: "looper",
      maxRounds: 3,
      coder: "coder",
      review: "review",
      judge: "judge",
      attempts: 2,
    } as LooperNodeDefinition;
    const plain = { file: "g.yaml", nodes: { coder: { id: "coder", kind: "coder" } }, edges: [] } as unknown as GraphDefinition;
    expect(() => checkAttemptsMapped(looper, plain)).toThrow(
      'node "looper" has attempts, but its coder "coder" is not mapped over outputs.looper.attempts in g.yaml: route to it with',
    );
    const branches = [
      {
        when: { path: "outputs.looper.next", op: "eq", value: "coder" },
        to: ["coder"],
        map: { over: "outputs.looper.attempts", as: "attempt" },
      },
    ];
    const mapped = { ...plain, edges: [{ kind: "conditional", from: "looper", branches }] } as unknown as GraphDefinition;
    expect(() => checkAttemptsMapped(looper, mapped)).toThrow('its coder "coder" is not in worktrees (workspace: worktree)');
    const worktree = { ...mapped, nodes: { coder: { id: "coder", kind: "coder", workspace: "worktree" } } } as unknown as GraphDefinition;
    expect(() => checkAttemptsMapped(looper, worktree)).not.toThrow();
    expect(() => checkAttemptsMapped({ ...looper, attempts: undefined }, plain)).not.toThrow();
  });
});

describe("a merge that picks one instance", () => {
  it("names exactly one coder: picking among several coders' branches is refused", () => {
    const coder = { id: "c", kind: "coder", workspace: "worktree" };
    const graph = { file: "g.yaml", nodes: { a: { ...coder, id: "a" }, b: { ...coder, id: "b" } } } as unknown as GraphDefinition;
    const merge = { id: "apply", kind: "merge", branches: ["a", "b"], pick: "outputs.judge.index" } as MergeNodeDefinition;
    expect(() => checkMergedCoders(merge, graph)).toThrow(
      'node "apply" picks one instance (pick: outputs.judge.index) of one mapped coder: name only that coder in branches',
    );
    expect(() => checkMergedCoders({ ...merge, branches: ["a"] }, graph)).not.toThrow();
  });
});

describe("what a coder in a worktree can reach", () => {
  const probe = (ws: Workspace) =>
    script(ws, "probe", {
      coder_a: [shell("git status 2>&1; echo exit=$?"), shell("cat ../../../../secret.txt 2>&1; echo exit=$?")],
    });
  const previews = async (ws: Workspace, thread: string) =>
    (await outputs(ws, thread)).coder_a!.toolCalls.filter((call) => call.name === "shell").map((call) => call.preview);

  it("without a sandbox: git finds no repository (GIT_CEILING_DIRECTORIES), though the files above are not hidden", async () => {
    const ws = repo();
    const result = await run(ws, spec(ONE_CODER, "bare", probe(ws), ["--no-sandbox"]));
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const [status, cat] = await previews(ws, "bare");
    expect(status).toContain("not a git repository");
    expect(status).toContain("exit=128");
    // No confinement without the sandbox: only git's own search is stopped.
    expect(cat).toContain("the user's own");
  });

  it.skipIf(lacks("sandbox", "a worktree coder in bubblewrap"))(
    "in the sandbox: the worktree is all it sees, neither the repository nor the files above",
    async () => {
      const ws = repo();
      const result = await run(ws, spec(ONE_CODER, "boxed", probe(ws)), { env: cleanEnv(SANDBOX_AS_FOUND) });
      expect(result.code, result.stderr + result.stdout).toBe(0);
      expect(parseEvents(result.stdout).find((event) => event.type === "run_started")).toMatchObject({ sandbox: "bubblewrap" });
      const [status, cat] = await previews(ws, "boxed");
      expect(status).toContain("not a git repository");
      expect(cat).toContain("No such file or directory");
      expect(cat).not.toContain("the user's own");
    },
  );
});

describe("a crash in a worktree coder's turn", () => {
  it("kill -9, then resume: the coder continues in the same worktree, and no shell step runs twice", async () => {
    const ws = repo();
    const scriptFile = script(ws, "crash", {
      coder_a: [
        write("a.txt", "from a\n"),
        shell("echo one >> log.txt"),
        shell("while [ ! -e go ]; do sleep 0.1; done; rm go; echo two >> log.txt"),
      ],
    });
    const running = startRun(ws, spec(ONE_CODER, "crash", scriptFile));
    await running.waitForEvent("tool_call", (line) => line.includes("echo two"));
    await running.kill("SIGKILL");
    const folder = worktreeOf(ws, "crash", "coder_a");
    expect(readFileSync(join(folder, "a.txt"), "utf8")).toBe("from a\n");
    expect(readFileSync(join(folder, "log.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);

    const resuming = startResume(ws, "crash", "--json");
    await resuming.waitForEvent("tool_call", (line) => line.includes("echo two"));
    writeFileSync(join(folder, "go"), "");
    const resumed = await resuming.done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseEvents(resumed.stdout).filter((event) => event.type === "tool_call")).toHaveLength(1);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("from a\n");
    expect((await outputs(ws, "crash")).merge).toEqual({
      status: "applied",
      applied: ["a.txt", "log.txt"],
      withheld: [],
      baseline: expect.stringMatching(/^git:[0-9a-f]{40}$/),
    });
    expect(existsSync(folder)).toBe(false);
  });
});
