import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyTrusted, hasStackTrace, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { historyOf, run, startRun, stateAt } from "./helpers/e2e.js";
import { exampleCopy as copy, runExample, type CheckpointJson, type ExampleCopy } from "./helpers/replay.js";
import { tempWorkspace } from "./helpers/workspace.js";

interface ExampleState {
  task: string;
  visits: Record<string, number>;
  outputs: Record<string, unknown>;
  messages: Array<{ id?: string; type: string; content: string }>;
}

const fork = (ws: ExampleCopy, thread: string, ...args: string[]) => runCli(["replay", thread, ...args, "--db", ws.db], { cwd: ws.dir });

/** The first checkpoint at which `node` had run (the example's first critique says "revise"). */
const firstOf = (checkpoints: CheckpointJson[], node: string): CheckpointJson => checkpoints.find((c) => c.nodes.includes(node))!;

describe("replay --from (live fork)", () => {
  it("forks with --set task from a checkpoint: a new branch runs, the original branch's checkpoints and final state are unchanged", async () => {
    const ws = copy();
    expect((await runExample(ws, "t")).code).toBe(0);
    const before = await historyOf(ws.db, "t");
    const originalTip = before.checkpoints.at(-1)!;
    const originalFinal = await stateAt<ExampleState>(ws.db, "t", originalTip.checkpointId);
    const critique = firstOf(before.checkpoints, "critique");

    const forked = await fork(
      ws,
      "t",
      "--from",
      critique.checkpointId.slice(0, 13),
      "--set",
      "task=Explain loopgraph to managers",
      "--json",
    );
    expect(forked.code, forked.stderr).toBe(0);
    const events = parseEvents(forked.stdout);
    expect(events[0]).toMatchObject({ type: "run_started", threadId: "t", resumed: true, forkedFrom: critique.checkpointId });
    const plan = events.find((e) => e.type === "fork")!;
    // The critique asked for a revision: revise runs again, then critique, then the stats function.
    expect(plan.rerun).toEqual([
      { node: "revise", effects: [] },
      { node: "critique", effects: [] },
      { node: "stats", effects: ["runs text-stats.ts:textStats"] },
    ]);
    expect(events.filter((e) => e.type === "node_started").map((e) => e.node)).toEqual(["revise", "critique", "stats"]);
    expect(events.at(-1)).toMatchObject({ type: "run_finished", status: "finished", exitCode: 0 });

    const after = await historyOf(ws.db, "t");
    // Every checkpoint of the original run is still there, unchanged, on branch 0.
    const strip = ({ head: _head, ...rest }: CheckpointJson) => rest;
    expect(after.checkpoints.slice(0, before.checkpoints.length).map(strip)).toEqual(before.checkpoints.map(strip));
    expect(await stateAt(ws.db, "t", originalTip.checkpointId)).toEqual(originalFinal);

    // The new branch grows from the critique checkpoint, starting with the edit.
    expect(after.branches).toHaveLength(2);
    expect(after.branches[1]).toMatchObject({ branch: 1, forkedFrom: critique.checkpointId, first: plan.checkpointId });
    const branch = after.checkpoints.filter((c) => c.branch === 1);
    expect(branch.map((c) => c.nodes)).toEqual([["update"], ["revise"], ["critique"], ["stats"]]);
    expect(branch[0]).toMatchObject({ parentId: critique.checkpointId, step: critique.step + 1, source: "update" });
    expect(branch[0]!.changes).toContainEqual(
      expect.objectContaining({ path: "task", kind: "changed", value: "Explain loopgraph to managers" }),
    );
    expect(after.head).toBe(branch.at(-1)!.checkpointId);
    expect(after.checkpoints.filter((c) => c.head).map((c) => c.checkpointId)).toEqual([after.head]);

    // The responses consumed after the fork point were consumed again (the fork calls the models again).
    const forkFinal = await stateAt<ExampleState & { scripted: Record<string, Record<string, number>> }>(ws.db, "t", after.head!);
    expect(forkFinal.task).toBe("Explain loopgraph to managers");
    expect(Object.values(forkFinal.scripted)).toEqual([{ draft: 1, critique: 2, revise: 1 }]);
    expect(forkFinal.visits).toEqual(originalFinal.visits);

    // inspect draws the tree: the original branch and the fork side by side under the critique checkpoint.
    const shown = await runCli(["inspect", "t", "--db", ws.db]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("2 branches");
    expect(shown.stdout).toMatch(/├─ revise/);
    expect(shown.stdout).toMatch(/└─ update/);
    expect(shown.stdout).toMatch(new RegExp(`${after.head}\\s+← head`));
  });

  it("an edit that changes routing is routed again: approving at the first critique skips the revision", async () => {
    const ws = copy();
    expect((await runExample(ws, "approve")).code).toBe(0);
    const critique = firstOf((await historyOf(ws.db, "approve")).checkpoints, "critique");

    const forked = await fork(ws, "approve", "--from", critique.checkpointId, "--set", "outputs.critique.verdict=approve", "--json");
    expect(forked.code, forked.stderr).toBe(0);
    expect(parseEvents(forked.stdout).find((e) => e.type === "fork")?.rerun).toEqual([
      { node: "stats", effects: ["runs text-stats.ts:textStats"] },
    ]);
    const after = await historyOf(ws.db, "approve");
    const final = await stateAt<ExampleState>(ws.db, "approve", after.head!);
    expect(final.visits).toEqual({ draft: 1, critique: 1, stats: 1 });
    expect(final.outputs.stats).toMatchObject({ revised: false });
  });

  it("from the run's input, --set task replaces the task and its message; values parse as JSON, else as text", async () => {
    const ws = copy();
    expect((await runExample(ws, "input")).code).toBe(0);
    const input = (await historyOf(ws.db, "input")).checkpoints[0]!;
    expect(input.nodes).toEqual(["input"]);

    const forked = await fork(
      ws,
      "input",
      "--from",
      input.checkpointId,
      "--set",
      'task="Explain forks"',
      "vars.audience={not json",
      "--json",
    );
    expect(forked.code, forked.stderr).toBe(0);
    const after = await historyOf(ws.db, "input");
    const final = await stateAt<ExampleState & { vars: Record<string, unknown> }>(ws.db, "input", after.head!);
    expect(final.task).toBe("Explain forks");
    expect(final.messages[0]).toMatchObject({ id: "task", type: "human", content: "Explain forks" });
    expect(final.vars.audience).toBe("{not json");
    expect(final.visits).toEqual({ draft: 1, critique: 2, revise: 1, stats: 1 });
  });

  it("says beforehand that the Coder will re-run with its side effects (coder-review)", async () => {
    const repo = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const script = join(ROOT, "tests/fixtures/looper/two-rounds.script.yaml");
    const recorded = await run(repo, { graph: "coder-review", task: "write add() in app.js", thread: "cr", script, approval: "auto" });
    expect(recorded.code, recorded.stderr).toBe(0);
    const start = (await historyOf(repo.db, "cr")).checkpoints.find((c) => c.nodes.includes("start"))!;

    const forked = await runCli([
      "replay",
      "cr",
      "--from",
      start.checkpointId,
      "--set",
      "task=write add() and sub() in app.js",
      "--db",
      repo.db,
    ]);
    expect(forked.code, forked.stderr).toBe(0);
    expect(forked.stdout).toContain("will re-run: looper, coder (writes files, runs shell, commits to git), review, judge");
    expect(forked.stdout.indexOf("will re-run")).toBeLessThan(forked.stdout.indexOf("● looper"));
    expect(forked.stdout).toContain("round 1/5 started: write add() and sub() in app.js");
  });

  it("resume continues the newest branch: a fork that pauses at a breakpoint is resumed on its own branch", async () => {
    const temp = tempWorkspace();
    copyTrusted(join(ROOT, "tests/fixtures/engine"), temp.dir);
    const db = temp.db;
    const args = ["--db", db];
    const first = await run(temp, {
      graph: join(temp.dir, "breakpoint.yaml"),
      task: "t",
      thread: "bp",
      script: join(temp.dir, "breakpoint.script.yaml"),
      json: false,
    });
    expect(first.code, first.stderr).toBe(3);
    expect((await runCli(["resume", "bp", ...args])).code).toBe(0);
    const original = await historyOf(db, "bp");

    const forked = await runCli(["replay", "bp", "--from", original.checkpoints[0]!.checkpointId, ...args]);
    expect(forked.code, forked.stdout + forked.stderr).toBe(3);
    expect(forked.stdout).toContain("loopgraph resume bp");
    const resumed = await runCli(["resume", "bp", ...args]);
    expect(resumed.code, resumed.stderr).toBe(0);

    const after = await historyOf(db, "bp");
    expect(after.thread.status).toBe("finished");
    const head = after.checkpoints.find((c) => c.checkpointId === after.head)!;
    expect(head).toMatchObject({ branch: 1, nodes: ["last"] });
    expect(after.checkpoints.filter((c) => c.branch === 1).map((c) => c.nodes)).toEqual([["update"], ["first"], ["last"]]);
  });

  it("warns when the graph's files changed since the run started, and only then", async () => {
    const ws = copy();
    expect((await runExample(ws, "w")).code).toBe(0);
    const critique = firstOf((await historyOf(ws.db, "w")).checkpoints, "critique");
    const warnings = (stdout: string) => parseEvents(stdout).filter((e) => e.type === "warning");

    const unchanged = await fork(ws, "w", "--from", critique.checkpointId, "--json");
    expect(unchanged.code, unchanged.stderr).toBe(0);
    expect(warnings(unchanged.stdout)).toEqual([]);

    appendFileSync(join(ws.dir, "prompts/example/revise.md"), "Keep it short.\n");
    const changed = await fork(ws, "w", "--from", critique.checkpointId, "--json");
    expect(changed.code, changed.stderr).toBe(0);
    expect(warnings(changed.stdout)).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          /graph's files .*example-review\.yaml.* changed since this run started: the new branch follows the new version/,
        ),
      }),
    ]);
    const human = await fork(ws, "w", "--from", critique.checkpointId);
    expect(human.stdout).toMatch(/⚠ the graph's files .* changed since this run started/);
  });

  it("refuses to fork a thread that is running in another process", async () => {
    const ws = copy();
    const slow = join(ws.dir, "slow.script.yaml");
    // The draft waits for a gate the test never opens: the thread is running until the test kills it.
    writeFileSync(slow, 'responses:\n  - { node: draft, wait_for: never-opened, content: "slow draft" }\n');
    const running = startRun(ws, { graph: ws.graph, task: "t", thread: "busy", script: slow }, { cwd: ws.dir });
    await running.waitForNode("draft");
    const input = (await historyOf(ws.db, "busy")).checkpoints[0]!;
    const refused = await fork(ws, "busy", "--from", input.checkpointId);
    await running.kill("SIGKILL");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/thread "busy" is running in process \d+/);
    expect((await historyOf(ws.db, "busy")).branches).toHaveLength(1);
  });

  it("bad input: unknown thread or checkpoint, bad --set: one line, exit 2, no stack trace, nothing written", async () => {
    const ws = copy();
    expect((await runExample(ws, "bad")).code).toBe(0);
    const before = await historyOf(ws.db, "bad");
    const critique = firstOf(before.checkpoints, "critique").checkpointId;
    const cases: Array<[string[], RegExp]> = [
      [["--from", "ffffffff"], /no checkpoint of thread "bad" matches "ffffffff"/],
      [["--from", "1"], /more than one checkpoint of thread "bad" matches "1"/],
      [["--from", critique, "--set", "nosuch.path=1"], /--set nosuch\.path: unknown state channel "nosuch"/],
      [["--from", critique, "--set", "vars.colour=red"], /--set vars\.colour: .* has no state field "colour"/],
      [["--from", critique, "--set", "task"], /--set "task": expected path=value/],
      [["--from", critique, "--set", "task.inner=1"], /--set task\.inner: task is a string, not an object/],
      [["--from", critique, "--set", "messages.9.content=x"], /--set messages\.9\.content: messages is a list of 3/],
      [["--set", "task=x"], /replay needs --from <checkpoint>/],
      [["--verify", "--from", critique], /--verify checks the whole recorded run/],
    ];
    for (const [args, message] of cases) {
      const result = await fork(ws, "bad", ...args);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
    const unknown = await fork(ws, "nosuch", "--from", critique);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no thread "nosuch"/);
    expect((await historyOf(ws.db, "bad")).checkpoints).toEqual(before.checkpoints);
    // Eleven CLI runs one after the other (each claims the thread, so they cannot overlap).
  }, 150_000);
});
