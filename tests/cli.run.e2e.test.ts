import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyTrusted, hasStackTrace, lastCheckpointState, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, gatedScript, historyOf, resume, run, startRun, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace as workspace, type Workspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/engine");
const DURABLE = join(FIXTURES, "durable.yaml");
const DURABLE_GATED = join(FIXTURES, "durable-gated.script.yaml");

interface HistoryJson {
  thread: { status: string };
  checkpoints: Array<{ checkpointId: string; step: number; nodes: string[]; tokens: { inputTokens: number; outputTokens: number } }>;
}

/** `loopgraph inspect <thread> --json`, through the CLI: this file tests the commands themselves. */
async function history(db: string, thread: string): Promise<HistoryJson> {
  const result = await runCli(["inspect", thread, "--json", "--db", db]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as HistoryJson;
}

/** A durable run in `ws` whose slow step answers once `open("gate-slow")` (a copy of the script in `ws`'s folder). */
function durable(ws: Workspace, thread: string): { spec: RunSpec; open: (gate: string) => void } {
  const { script, open } = gatedScript(ws, DURABLE_GATED);
  return { spec: { graph: DURABLE, task: "prove durability", thread, script }, open };
}

describe("loopgraph run (scripted)", () => {
  it("finishes the example graph with exit 0, and inspect lists its checkpoints in order with nodes and tokens", async () => {
    const ws = workspace();
    const run = await runCli([
      "run",
      "example-review",
      "--task",
      "Explain loopgraph",
      "--thread",
      "t1",
      "--model",
      "scripted:examples/example-review.script.yaml",
      "--db",
      ws.db,
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const events = parseEvents(run.stdout);
    expect(events[0]).toMatchObject({ type: "run_started", threadId: "t1" });
    expect(events.at(-1)).toMatchObject({ type: "run_finished", status: "finished", exitCode: 0 });
    expect(events.filter((e) => e.type === "message" && typeof e.delta === "string").length).toBeGreaterThan(0);

    const { thread, checkpoints } = await history(ws.db, "t1");
    expect(thread.status).toBe("finished");
    const steps = checkpoints.map((c) => c.step);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    expect(checkpoints.map((c) => c.nodes)).toEqual([["input"], ["start"], ["draft"], ["critique"], ["revise"], ["critique"], ["stats"]]);
    const draft = checkpoints.find((c) => c.nodes.includes("draft"))!;
    expect(draft.tokens.inputTokens).toBeGreaterThan(0);
    expect(draft.tokens.outputTokens).toBeGreaterThan(0);

    const state = await lastCheckpointState(ws.db, "t1");
    expect((state.outputs as Record<string, unknown>).stats).toMatchObject({ revised: true });

    // The human view: one line per step (node, what it did, tokens, time) and the run's token total;
    // --diff adds the state changes, the scripted-model bookkeeping only with --internal.
    const compact = await runCli(["inspect", "t1", "--db", ws.db]);
    expect(compact.code, compact.stderr).toBe(0);
    const lines = compact.stdout.trimEnd().split("\n");
    const total = checkpoints.reduce((sum, c) => sum + c.tokens.inputTokens, 0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^tokens: ${total} in, \\d+ out`)));
    const header = lines.findIndex((line) => line.startsWith("#"));
    expect(lines[header]).toMatch(/NODE\s+WHAT IT DID\s+TOKENS\s+TIME/);
    expect(lines.slice(header + 1)).toHaveLength(checkpoints.length);
    expect(lines.find((line) => /^\d+\s+\d+\s+draft\s/.test(line))).toMatch(/draft\s+\S.*\d+→\d+\s+\d+\.\ds/);
    expect(compact.stdout).not.toMatch(/^\s+[+~-] /m);
    const diff = await runCli(["inspect", "t1", "--diff", "--db", ws.db]);
    expect(diff.stdout).toMatch(/\+ outputs\.draft|\+ outputs: /);
    expect(diff.stdout).not.toMatch(/[+~] scripted/);
    expect((await runCli(["inspect", "t1", "--diff", "--internal", "--db", ws.db])).stdout).toMatch(/[+~] scripted/);
  });

  it("without a model exits 2 and says what to set and how to try offline", async () => {
    const ws = workspace();
    const run = await runCli(["run", "example-review", "--task", "x", "--db", ws.db]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("LOOPGRAPH_MODEL");
    expect(run.stderr).toContain("--model scripted:");
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it("a breakpoint pauses with exit 3 and resume completes the run", async () => {
    const ws = workspace();
    const args = ["--db", ws.db];
    const run = await runCli([
      "run",
      join(FIXTURES, "breakpoint.yaml"),
      "--task",
      "t",
      "--thread",
      "bp",
      "--workspace",
      ws.dir,
      "--model",
      `scripted:${join(FIXTURES, "breakpoint.script.yaml")}`,
      ...args,
    ]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain("loopgraph resume bp");
    const answered = await runCli(["resume", "bp", "--answer", "yes", ...args]);
    expect(answered.code).toBe(2);
    expect(answered.stderr).toContain("not waiting for an answer");
    const resumed = await runCli(["resume", "bp", ...args]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((await history(ws.db, "bp")).thread.status).toBe("finished");
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\n");

    const again = await runCli(["resume", "bp", ...args]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("has finished");
  });

  it("resume warns when the graph's files changed since the run started, and only then", async () => {
    const ws = workspace();
    const graphDir = join(ws.dir, "graph");
    copyTrusted(FIXTURES, graphDir);
    const start = (thread: string) =>
      runCli([
        "run",
        join(graphDir, "breakpoint.yaml"),
        "--task",
        "t",
        "--thread",
        thread,
        "--workspace",
        ws.dir,
        "--model",
        `scripted:${join(graphDir, "breakpoint.script.yaml")}`,
        "--db",
        ws.db,
        "--json",
      ]);
    const resume = (thread: string) => runCli(["resume", thread, "--db", ws.db, "--json"]);
    const warnings = (stdout: string) => parseEvents(stdout).filter((e) => e.type === "warning");

    expect((await start("same")).code).toBe(3);
    const unchanged = await resume("same");
    expect(unchanged.code, unchanged.stderr).toBe(0);
    expect(warnings(unchanged.stdout)).toEqual([]);

    expect((await start("edited")).code).toBe(3);
    appendFileSync(join(graphDir, "prompts/step.md"), "Be brief.\n");
    const edited = await resume("edited");
    expect(edited.code, edited.stderr).toBe(0);
    expect(warnings(edited.stdout)).toHaveLength(1);
    expect(warnings(edited.stdout)[0]!.message).toContain("changed since this run started");
  });

  it("a breakpoint after a node pauses once that node has run", async () => {
    const ws = workspace();
    const run = await runCli([
      "run",
      join(FIXTURES, "breakpoint-after.yaml"),
      "--thread",
      "bpa",
      "--workspace",
      ws.dir,
      "--db",
      ws.db,
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(3);
    expect(parseEvents(run.stdout).find((e) => e.type === "interrupt")).toMatchObject({
      reason: "breakpoint",
      when: "after",
      node: "first",
    });
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\n");
    const resumed = await runCli(["resume", "bpa", "--db", ws.db]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\nsecond\n");
  });

  it("rejects unknown threads, reused thread ids and hostile thread ids with exit 2", async () => {
    const ws = workspace();
    const noStore = await runCli(["resume", "nope", "--db", ws.db]);
    expect(noStore.code).toBe(2);
    expect(noStore.stderr).toContain(`no store at ${ws.db}`);
    expect(existsSync(ws.db)).toBe(false);
    const graph = join(FIXTURES, "breakpoint-after.yaml");
    const first = await runCli(["run", graph, "--thread", "same", "--workspace", ws.dir, "--db", ws.db]);
    expect(first.code).toBe(3);
    const unknown = await runCli(["resume", "nope", "--db", ws.db]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no thread "nope"');
    const reused = await runCli(["run", graph, "--thread", "same", "--workspace", ws.dir, "--db", ws.db]);
    expect(reused.code).toBe(2);
    expect(reused.stderr).toContain("loopgraph resume same");
    const missing = await runCli(["run", graph, "--workspace", join(ws.dir, "nope"), "--db", ws.db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("is not a directory");
    expect(existsSync(join(ws.dir, "nope"))).toBe(false);
    const hostile = await runCli(["run", graph, "--thread", "../../etc/passwd", "--db", ws.db]);
    expect(hostile.code).toBe(2);
    expect(hostile.stderr).toContain("invalid thread id");
    expect(hasStackTrace(unknown.stderr + reused.stderr + hostile.stderr)).toBe(false);
  });
});

describe("durability", () => {
  it("kill -9 during a slow step, then resume: same final state as an uninterrupted run, no completed step re-run", async () => {
    const reference = workspace();
    const ws = workspace();
    // The uninterrupted reference run (its gate open from the start) and the run to kill (killed at its gate) go side by side.
    const ref = durable(reference, "ref");
    ref.open("gate-slow");
    const uninterrupted = run(reference, ref.spec);
    const crash = durable(ws, "crash");
    const crashing = startRun(ws, crash.spec);
    await crashing.waitForNode("slow");
    const killed = await crashing.kill("SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    crash.open("gate-slow");
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\n");
    const finished = await uninterrupted;
    expect(finished.code, finished.stderr).toBe(0);

    // Its process is gone: readers say interrupted, not running, and a command waits for a resume.
    const listed = JSON.parse((await runCli(["inspect", "--json", "--db", ws.db])).stdout) as Array<{
      threadId: string;
      status: string;
      error?: string;
    }>;
    expect(listed.find((t) => t.threadId === "crash")).toMatchObject({
      status: "interrupted",
      error: `process ${crashing.child.pid}, which ran it, is gone`,
    });
    expect((await runCli(["inspect", "crash", "--db", ws.db])).stdout).toContain("status interrupted");
    const status = await runCli(["status", "crash", "--db", ws.db]);
    expect(status.stdout).toContain(
      `(interrupted: process ${crashing.child.pid}, which ran it, is gone; \`loopgraph resume crash\` continues it)`,
    );
    const sent = await runCli(["send", "crash", "add: one more thing", "--db", ws.db]);
    expect(sent.stdout).toContain("the thread is interrupted: it takes the command when it continues");

    const resumed = await resume(ws, "crash", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    const started = parseEvents(resumed.stdout)
      .filter((e) => e.type === "node_started")
      .map((e) => e.node);
    expect(started).toEqual(["slow", "second", "last"]);
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\nsecond\n");

    // The workspaces and the script copies beside them are at other paths.
    const normalise = (state: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(state).replaceAll(reference.root, "ROOT").replaceAll(ws.root, "ROOT"));
    expect(normalise(await finalState(ws.db, "crash"))).toEqual(normalise(await finalState(reference.db, "ref")));
  });

  it("SIGINT stops at the next step boundary with exit 130, and resume completes the run", async () => {
    const ws = workspace();
    const { spec, open } = durable(ws, "sigint");
    const running = startRun(ws, spec);
    await running.waitForNode("slow");
    // Ctrl-C while the slow step waits at its gate: it aborts the step in flight.
    const interrupted = await running.kill("SIGINT");
    expect(interrupted.code).toBe(130);
    expect(parseEvents(interrupted.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "interrupted" });
    open("gate-slow");

    const resumed = await resume(ws, "sigint", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    const started = parseEvents(resumed.stdout)
      .filter((e) => e.type === "node_started")
      .map((e) => e.node);
    expect(started).not.toContain("first");
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\nsecond\n");
    expect((await historyOf(ws.db, "sigint")).thread.status).toBe("finished");
  });
});
