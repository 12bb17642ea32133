import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyTrusted, hasStackTrace, ROOT, runCli } from "./helpers/cli.js";
import { historyOf, run } from "./helpers/e2e.js";
import { exampleCopy as copy, runExample, type ExampleCopy } from "./helpers/replay.js";
import { tempWorkspace } from "./helpers/workspace.js";

const ALWAYS_REVISE = join(ROOT, "tests/fixtures/engine/always-revise.script.yaml");

const verify = (ws: ExampleCopy, thread: string, ...args: string[]) =>
  runCli(["replay", thread, "--verify", "--db", ws.db, ...args], { cwd: ws.dir });

interface VerifyJson {
  consistent: boolean;
  checked: number;
  graphFile: string;
  graphChanged?: string;
  missingNodes: string[];
  divergence?: {
    step: number;
    checkpointId: string;
    kind: string;
    after: string[];
    recorded: string[];
    expected: string[];
    location?: { file: string; line: number; col: number; what: string };
  };
}

const verifyJson = async (ws: ExampleCopy, thread: string): Promise<{ code: number | null; result: VerifyJson }> => {
  const run = await verify(ws, thread, "--json");
  expect(run.stderr).toBe("");
  return { code: run.code, result: JSON.parse(run.stdout) as VerifyJson };
};

/** Replaces `from` (which must occur once) in the copy's graph file; returns the 1-based line of the replacement. */
function editGraph(ws: ExampleCopy, from: string, to: string): number {
  const text = readFileSync(ws.graph, "utf8");
  expect(text.split(from)).toHaveLength(2);
  writeFileSync(ws.graph, text.replace(from, to));
  return text.slice(0, text.indexOf(from)).split("\n").length;
}

describe("replay --verify", () => {
  it("is consistent on an unchanged graph (exit 0), and after an edge is redirected names that edge's file:line (exit 1)", async () => {
    const ws = copy();
    expect((await runExample(ws, "v")).code).toBe(0);

    const same = await verify(ws, "v");
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toMatch(/^consistent: 6 routing decisions of thread v match graphs\/example-review\.yaml$/m);
    expect(same.stdout).not.toContain("note:");

    // The copy now sends revise straight to stats: the recorded run went from revise to critique.
    const line = editGraph(ws, "- { from: revise, to: critique }", "- { from: revise, to: stats }");
    const redirected = await verify(ws, "v");
    expect(redirected.code, redirected.stderr).toBe(1);
    expect(redirected.stdout).toMatch(
      /^note: the graph's files .* changed since this run started: checking the recorded run against the current version$/m,
    );
    expect(redirected.stdout).toMatch(
      /^divergence at step 3 \(checkpoint [0-9a-f-]+\): after revise the current graph goes to stats, the recorded run went to critique$/m,
    );
    expect(redirected.stdout).toContain(`graphs/example-review.yaml:${line}:`);
    expect(redirected.stdout).toContain("edge revise → stats");

    const { code, result } = await verifyJson(ws, "v");
    expect(code).toBe(1);
    const revise = (await historyOf(ws.db, "v")).checkpoints.find((c) => c.nodes.includes("revise"))!;
    expect(result).toMatchObject({
      consistent: false,
      graphFile: "graphs/example-review.yaml",
      graphChanged: expect.stringContaining("changed since this run started"),
      missingNodes: [],
      divergence: {
        step: 3,
        checkpointId: revise.checkpointId,
        kind: "routing",
        after: ["revise"],
        recorded: ["critique"],
        expected: ["stats"],
        location: { file: "graphs/example-review.yaml", line, what: "edge revise → stats" },
      },
    });
  });

  it("evaluates conditional branches on the recorded state and names the branch that now decides", async () => {
    const ws = copy();
    expect((await runExample(ws, "branch")).code).toBe(0);
    // The first critique said "revise": with the condition flipped, the first branch (→ stats) now matches it.
    editGraph(ws, "when: { path: outputs.critique.verdict, eq: approve }", "when: { path: outputs.critique.verdict, eq: revise }");
    const text = readFileSync(ws.graph, "utf8").split("\n");
    const branchLine = text.findIndex((l, i) => l.includes("to: stats") && text[i - 1]!.includes("eq: revise")) + 1;
    const { code, result } = await verifyJson(ws, "branch");
    expect(code).toBe(1);
    expect(result.divergence).toMatchObject({
      step: 2,
      after: ["critique"],
      recorded: ["revise"],
      expected: ["stats"],
      location: { line: branchLine, what: "branch 1 of the edge from critique → stats" },
    });
  });

  it("applies visit limits: a lower max_visits diverges where on_limit now takes over, at the node's max_visits line", async () => {
    const ws = copy();
    expect((await runExample(ws, "limits", ALWAYS_REVISE)).code).toBe(0);
    expect((await verify(ws, "limits")).code).toBe(0);
    const line = editGraph(ws, "max_visits: 3", "max_visits: 2");
    const { code, result } = await verifyJson(ws, "limits");
    expect(code).toBe(1);
    // critique runs at steps 2, 4, 6: the third time, revise (2 visits) is used up and on_limit sends the run to stats.
    expect(result.divergence).toMatchObject({
      step: 6,
      after: ["critique"],
      recorded: ["revise"],
      expected: ["stats"],
      location: { line, what: "max_visits of revise is used up: on_limit → stats" },
    });
  });

  it("reports recorded nodes that the graph no longer has", async () => {
    const ws = copy();
    expect((await runExample(ws, "renamed")).code).toBe(0);
    writeFileSync(
      ws.graph,
      readFileSync(ws.graph, "utf8")
        .replaceAll("revise:", "rewrite:")
        .replaceAll("to: revise", "to: rewrite")
        .replace("from: revise", "from: rewrite"),
    );
    const run = await verify(ws, "renamed");
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toContain("nodes in the record that the graph no longer has: revise");
    const { result } = await verifyJson(ws, "renamed");
    expect(result.missingNodes).toEqual(["revise"]);
    expect(result.divergence).toMatchObject({ step: 2, recorded: ["revise"], expected: ["rewrite"] });
  });

  it("works on a failed run: the node it failed in counts as where it went", async () => {
    const ws = copy();
    const script = join(ws.dir, "short.script.yaml");
    writeFileSync(script, 'responses:\n  - { node: draft, content: "only a draft" }\n');
    const failed = await runExample(ws, "failed", script);
    expect(failed.code).toBe(1);
    const consistent = await verifyJson(ws, "failed");
    expect(consistent).toMatchObject({ code: 0, result: { consistent: true, checked: 2 } });

    // A new node between draft and critique: the run went from draft to critique (and failed there).
    editGraph(ws, "- { from: draft, to: critique }", "- { from: draft, to: polish }\n  - { from: polish, to: critique }");
    editGraph(ws, "  stats:\n", "  polish:\n    kind: agent\n    prompt: ../prompts/example/draft.md\n  stats:\n");
    const { code, result } = await verifyJson(ws, "failed");
    expect(code).toBe(1);
    expect(result.divergence).toMatchObject({ step: 1, after: ["draft"], recorded: ["critique"], expected: ["polish"] });
  });

  it("works on a paused run, and an unknown thread or broken graph is a one-line error (exit 2)", async () => {
    const temp = tempWorkspace();
    copyTrusted(join(ROOT, "tests/fixtures/engine"), temp.dir);
    const db = temp.db;
    const paused = await run(temp, {
      graph: join(temp.dir, "breakpoint.yaml"),
      task: "t",
      thread: "bp",
      script: join(temp.dir, "breakpoint.script.yaml"),
      json: false,
    });
    expect(paused.code).toBe(3);
    const checked = await runCli(["replay", "bp", "--verify", "--db", db]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain("consistent: 2 routing decisions");

    // The paused run waits before `last`: a graph with a node between first and last diverges there.
    const graph = join(temp.dir, "breakpoint.yaml");
    const original = readFileSync(graph, "utf8");
    writeFileSync(
      graph,
      original
        .replace("- { from: first, to: last }", "- { from: first, to: middle }\n  - { from: middle, to: last }")
        .replace("  last: {", "  middle: { kind: agent, prompt: ./prompts/step.md }\n  last: {"),
    );
    const diverged = await runCli(["replay", "bp", "--verify", "--db", db, "--json"]);
    expect(diverged.code, diverged.stderr).toBe(1);
    expect(JSON.parse(diverged.stdout)).toMatchObject({
      divergence: { step: 1, after: ["first"], recorded: ["last"], expected: ["middle"] },
    });

    writeFileSync(graph, original.replace("- { from: first, to: last }", "- { from: first, to: lsat }"));
    const broken = await runCli(["replay", "bp", "--verify", "--db", db]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/breakpoint\.yaml:\d+:\d+: .*lsat/);
    expect(hasStackTrace(broken.stderr)).toBe(false);

    const unknown = await runCli(["replay", "nosuch", "--verify", "--db", db]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(hasStackTrace(unknown.stderr)).toBe(false);
  });
});
