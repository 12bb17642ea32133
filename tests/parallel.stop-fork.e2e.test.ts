/**
 * Two acceptance points of parallel graphs, through the CLI. Ctrl-C (SIGINT) or SIGTERM during a
 * superstep stops all its branches: a map's worktree Coders (their shell commands' process groups
 * die, no instance's write is stored) and a fan-out's agent and function; resume runs each
 * interrupted step once. A fork from a checkpoint before, or of, a map's or a fan-out's step runs
 * its branch to the end with the right gathered outputs, the original branch unchanged; a map of
 * agents replays (`--recorded`) and verifies (`--verify`) consistently.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { inExecutionOrder } from "../src/replay/record-source.js";
import type { Recording } from "../src/runs/recordings.js";
import { withStore } from "../src/store/store.js";
import { eventually, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, gatedScript, historyOf, recordedStatus, resume, run, startRun, stateAt } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

/** How fast one signal must end the run: its commands stop on SIGTERM, well before the 2 s kill grace. */
const STOP_WITHIN_MS = 1_800;

/** The channels of the writes stored so far for the tasks of the thread's next step (the superstep in flight). */
function pendingWrites(db: string, thread: string): Promise<string[]> {
  return withStore({ db, env: {} }, "read", async (store) => {
    const tuple = await store.saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    return (tuple?.pendingWrites ?? []).map(([, channel]) => channel);
  });
}

/** The pending write LangGraph stores for a task that ended without a result (here: aborted by the signal). */
const ABORTED = "__error__";

/** Whether process `pid` runs (a zombie, killed but not yet reaped, does not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The process group of the running process `pid` (the fifth field of /proc/<pid>/stat). */
const groupOf = (pid: number): number =>
  Number(
    readFileSync(`/proc/${pid}/stat`, "utf8")
      .replace(/^.*\) /, "")
      .split(" ")[2],
  );

/** Whether any live process (zombies aside) is in the process group `pgid`. */
function groupAlive(pgid: number): boolean {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .some((pid) => alive(pid) && groupOrNone(pid) === pgid);
}

function groupOrNone(pid: number): number | undefined {
  try {
    return groupOf(pid);
  } catch {
    return undefined;
  }
}

describe("a signal during a superstep stops all its branches", () => {
  it("Ctrl-C during a map of two worktree Coders: exit 130 at once, every shell group dead, nothing stored; resume runs each waiting step once", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const instances = [0, 1];
    const script = join(ws.root, "stop.script.yaml");
    const waiting = (i: number) => `echo $$ > pid-${i}; while [ ! -e go-${i} ]; do sleep 0.05; done; echo ${i} > gated-${i}.txt`;
    const instance = (i: number) => [
      { node: `fix[${i}]`, tool_calls: [{ name: "shell", args: { command: `echo ${i} >> early-${i}.txt` } }] },
      { node: `fix[${i}]`, tool_calls: [{ name: "shell", args: { command: waiting(i) } }] },
      { node: `fix[${i}]`, content: `part ${i} done` },
    ];
    writeFileSync(script, stringify({ responses: instances.flatMap(instance) }));
    const worktree = (i: number) => join(ws.dir, ".loopgraph/worktrees/stop", `fix-${i}`);

    const running = startRun(ws, { graph: fixture("map-worktree-coders.yaml"), thread: "stop", task: "x y", script, approval: "auto" });
    const pids = await eventually(
      () =>
        instances.map((i) => Number(existsSync(join(worktree(i), `pid-${i}`)) ? readFileSync(join(worktree(i), `pid-${i}`), "utf8") : 0)),
      (found) => found.every((pid) => pid > 0),
    );
    expect(pids.every((pid) => pid > 0 && alive(pid))).toBe(true);
    const groups = pids.map(groupOf);

    const sent = performance.now();
    const stopped = await running.kill("SIGINT");
    const latency = performance.now() - sent;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(latency).toBeLessThan(STOP_WITHIN_MS);
    expect(parseEvents(stopped.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "interrupted", exitCode: 130 });
    // Every instance's command is gone, its whole process group with it.
    expect(pids.filter(alive)).toEqual([]);
    expect(groups.filter(groupAlive)).toEqual([]);
    // No instance's write was stored as finished: the map's step holds only each instance's abort, no output.
    expect(await pendingWrites(ws.db, "stop")).toEqual(instances.map(() => ABORTED));
    expect((await finalState<{ outputs: Record<string, unknown> }>(ws.db, "stop")).outputs.fix).toBeUndefined();
    expect(await recordedStatus(ws.db, "stop")).toBe("interrupted");
    for (const i of instances) expect(existsSync(join(worktree(i), `gated-${i}.txt`))).toBe(false);

    for (const i of instances) writeFileSync(join(worktree(i), `go-${i}`), "");
    const resumed = await resume(ws, "stop", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    // Each instance ran its waiting command once more, and nothing else: the first commands did not run again.
    const calls = parseEvents(resumed.stdout).filter((event) => event.type === "tool_call");
    expect(calls.map((event) => (event.args as { command?: string }).command).sort()).toEqual(instances.map(waiting));

    const state = await finalState<{ outputs: { fix: { status: string; branch: string }[] } }>(ws.db, "stop");
    expect(state.outputs.fix.map((out) => [out.status, out.branch])).toEqual(instances.map((i) => ["success", `loopgraph/stop/fix-${i}`]));
    for (const i of instances) {
      expect(readFileSync(join(ws.dir, `early-${i}.txt`), "utf8")).toBe(`${i}\n`);
      expect(readFileSync(join(ws.dir, `gated-${i}.txt`), "utf8")).toBe(`${i}\n`);
    }
    // A recorded replay follows the record: each instance's worktree, opened again on resume, then its steps kept from before the signal.
    const replayed = await runCli(["replay", "stop", "--recorded", "--db", ws.db]);
    expect(replayed.code, replayed.stderr + replayed.stdout).toBe(0);
    expect(replayed.stdout).toContain("consistent: the replay followed the record");
  });

  it("SIGTERM during a fan-out of an agent and a function, both waiting: exit 130 at once, neither stored; resume runs both once, then the join", async () => {
    const ws = tempWorkspace();
    const { script, open } = gatedScript(ws, fixture("fan-out-slow.script.yaml"));
    const running = startRun(ws, { graph: fixture("fan-out-slow.yaml"), thread: "term", task: "maps", script });
    await running.waitForNode("a");
    await eventually(
      () => existsSync(join(ws.dir, "ran.log")),
      (started) => started,
    );

    const sent = performance.now();
    const stopped = await running.kill("SIGTERM");
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(performance.now() - sent).toBeLessThan(STOP_WITHIN_MS);
    expect(parseEvents(stopped.stdout).filter((event) => event.type === "node_finished")).toEqual([]);
    expect(await pendingWrites(ws.db, "term")).toEqual([ABORTED, ABORTED]);
    expect(readFileSync(join(ws.dir, "ran.log"), "utf8")).toBe("start b\n");

    open("gate-a");
    writeFileSync(join(ws.dir, "open-b"), "");
    const resumed = await resume(ws, "term", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "ran.log"), "utf8")).toBe("start b\nstart b\ndone b\n");
    const state = await finalState<{ outputs: Record<string, unknown>; visits: Record<string, number>; vars: { log: string[] } }>(
      ws.db,
      "term",
    );
    expect(state.visits).toEqual({ a: 1, b: 1, c: 1 });
    expect(state.outputs.a).toBe("a line about maps");
    expect(state.vars.log).toEqual(["b", "c"]);
  });
});

interface Checkpoint {
  checkpointId: string;
  parentId?: string;
  nodes: string[];
  branch: number;
  step: number;
}

describe("a fork from inside a parallel step", () => {
  it("forks before the map (with --set over its list), of the map's step and of the fan-out's step: each branch ends with the right outputs", async () => {
    const ws = tempWorkspace();
    const graph = fixture("map-fan-out.yaml");
    const recorded = await run(ws, { graph, thread: "f", task: "a b c" });
    expect(recorded.code, recorded.stderr).toBe(0);
    const before = await historyOf(ws.db, "f");
    const original = before.checkpoints as unknown as Checkpoint[];
    expect(original.map((c) => c.nodes)).toEqual([["input"], ["start"], ["plan"], ["work"], ["left", "right"], ["report"]]);
    const originalFinal = await stateAt(ws.db, "f", original.at(-1)!.checkpointId);
    const at = (node: string) => original.find((c) => c.nodes.includes(node))!;

    const fork = async (from: Checkpoint, ...set: string[]) => {
      const result = await runCli(["replay", "f", "--from", from.checkpointId, ...set, "--json", "--db", ws.db]);
      expect(result.code, result.stderr + result.stdout).toBe(0);
      const history = await historyOf(ws.db, "f");
      const state = await stateAt<{ outputs: Record<string, unknown>; visits: Record<string, number>; vars: { log: string[] } }>(
        ws.db,
        "f",
        history.head!,
      );
      return { events: parseEvents(result.stdout), history, state };
    };
    const started = (events: Record<string, unknown>[]) =>
      events
        .filter((event) => event.type === "node_started")
        .map((event) => `${event.node}${event.instance === undefined ? "" : `[${event.instance}]`}`);

    // Before the map, over another list: two instances, gathered in order.
    const overList = await fork(at("plan"), "--set", 'outputs.plan.subtasks=["x","y"]');
    expect(overList.state.outputs.work).toEqual(["did x (1/2)", "did y (2/2)"]);
    expect(overList.state.outputs.report).toMatchObject({ gathered: ["did x (1/2)", "did y (2/2)"] });
    expect(overList.state.visits).toEqual({ plan: 1, work: 2, left: 1, right: 1, report: 1 });
    expect(overList.state.vars.log).toEqual(["x", "y", "left", "right"]);

    // Of the map's own step: its gathered list as it was, the fan-out and the join again.
    const ofMap = await fork(at("work"));
    expect(started(ofMap.events).sort()).toEqual(["left", "report", "right"]);
    expect(ofMap.state.outputs.work).toEqual(["did a (1/3)", "did b (2/3)", "did c (3/3)"]);
    expect(ofMap.state.outputs.report).toMatchObject({ gathered: ["did a (1/3)", "did b (2/3)", "did c (3/3)"] });
    expect(ofMap.state.visits).toEqual({ plan: 1, work: 3, left: 1, right: 1, report: 1 });

    // Of the fan-out's own step: only the join runs.
    const ofFanOut = await fork(at("left"));
    expect(started(ofFanOut.events)).toEqual(["report"]);
    expect(ofFanOut.state.outputs.report).toMatchObject({ gathered: ["did a (1/3)", "did b (2/3)", "did c (3/3)"] });
    expect(ofFanOut.state.visits).toEqual({ plan: 1, work: 3, left: 1, right: 1, report: 1 });

    const after = ofFanOut.history;
    expect(after.branches.map((b) => [b.branch, b.forkedFrom])).toEqual([
      [0, undefined],
      [1, at("plan").checkpointId],
      [2, at("work").checkpointId],
      [3, at("left").checkpointId],
    ]);
    const branch = (n: number) => (after.checkpoints as unknown as Checkpoint[]).filter((c) => c.branch === n).map((c) => c.nodes);
    expect(branch(1)).toEqual([["update"], ["work"], ["left", "right"], ["report"]]);
    expect(branch(2)).toEqual([["update"], ["left", "right"], ["report"]]);
    expect(branch(3)).toEqual([["update"], ["report"]]);
    // The original branch is unchanged.
    const strip = ({ head: _head, ...rest }: Checkpoint & { head?: boolean }) => rest;
    expect((after.checkpoints as unknown as Checkpoint[]).filter((c) => c.branch === 0).map(strip)).toEqual(original.map(strip));
    expect(await stateAt(ws.db, "f", original.at(-1)!.checkpointId)).toEqual(originalFinal);
  });

  it("a map over an empty list: replay --verify follows its step, and a fork from that step goes on after the map (plan does not run again)", async () => {
    const ws = tempWorkspace();
    // A blank task plans no subtasks: the map's one instance runs nothing and counts no visit.
    const recorded = await run(ws, { graph: fixture("map-fan-out.yaml"), thread: "empty", task: " " });
    expect(recorded.code, recorded.stderr).toBe(0);
    const verified = await runCli(["replay", "empty", "--verify", "--db", ws.db]);
    expect(verified.code, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toContain("consistent");

    const mapStep = (await historyOf(ws.db, "empty")).checkpoints[3]!;
    expect((await stateAt<{ outputs: Record<string, unknown> }>(ws.db, "empty", mapStep.checkpointId)).outputs.work).toEqual([]);
    const forked = await runCli(["replay", "empty", "--from", mapStep.checkpointId, "--json", "--db", ws.db]);
    expect(forked.code, forked.stderr + forked.stdout).toBe(0);
    const events = parseEvents(forked.stdout);
    expect(events.find((event) => event.type === "fork")?.rerun).toEqual([
      { node: "left", effects: ["runs parallel.ts:note"] },
      { node: "right", effects: ["runs parallel.ts:note"] },
      { node: "report", effects: ["runs map.ts:report"] },
    ]);
    expect(events.filter((event) => event.type === "node_started").map((event) => event.node)).toEqual(["left", "right", "report"]);
    const history = await historyOf(ws.db, "empty");
    const state = await stateAt<{ outputs: Record<string, unknown>; visits: Record<string, number> }>(ws.db, "empty", history.head!);
    expect(state.visits).toEqual({ plan: 1, left: 1, right: 1, report: 1 });
    expect(state.outputs.report).toMatchObject({ gathered: [] });
  });

  it("a map of agents: replay --recorded follows each instance's record (write[i]), replay --verify is consistent", async () => {
    const ws = tempWorkspace();
    const recorded = await run(ws, {
      graph: fixture("map-agents.yaml"),
      thread: "agents",
      task: "red green blue",
      script: fixture("map-agents.script.yaml"),
    });
    expect(recorded.code, recorded.stderr).toBe(0);
    expect((await finalState<{ outputs: { write: string[] } }>(ws.db, "agents")).outputs.write).toEqual(["line 0", "line 1", "line 2"]);

    const exported = join(ws.root, "exported.script.yaml");
    const exportResult = await runCli(["inspect", "agents", "--export-script", exported, "--db", ws.db]);
    expect(exportResult.code, exportResult.stderr).toBe(0);
    // Each instance's answer is recorded under its own name, whatever order the instances answered in.
    const responses = (parse(readFileSync(exported, "utf8")) as { responses: { node: string; content: string }[] }).responses;
    expect(responses.map((response) => `${response.node}: ${response.content}`).sort()).toEqual([
      "write[0]: line 0",
      "write[1]: line 1",
      "write[2]: line 2",
    ]);

    const replayed = await runCli(["replay", "agents", "--recorded", "--db", ws.db]);
    expect(replayed.code, replayed.stderr + replayed.stdout).toBe(0);
    expect(replayed.stdout).toContain("consistent: the replay followed the record");
    const verified = await runCli(["replay", "agents", "--verify", "--db", ws.db]);
    expect(verified.code, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toContain("consistent");
  });
});

describe("the order a recorded replay takes a root task's records in", () => {
  /** A record of the root task `fix:t` (`own`) or of its subgraph's task `inner`, written `id`-th. */
  const record = (id: number, inner?: string): Recording =>
    ({ id, checkpointId: "c", taskPath: inner ? `fix:t|${inner}` : "fix:t", callIndex: 0, node: "fix[0]" }) as Recording;
  const order = (records: Recording[]) => inExecutionOrder(records).map((r) => `${r.id}${r.taskPath.includes("|") ? "" : "*"}`);

  it("a root task run again (its own records written anew, last) takes up its kept inner records where its subgraph went on", () => {
    // Before the signal: open the worktree (deleted since), a model call, a shell step; after: open again, the shell step again, commit.
    expect(order([record(2, "model:a"), record(3, "tools:b"), record(5), record(6, "tools:c"), record(7)])).toEqual([
      "5*",
      "2",
      "3",
      "6",
      "7*",
    ]);
  });

  it("a root task that ran once keeps the order of writing, its own records before or after its subgraph's", () => {
    expect(order([record(1), record(2, "model:a"), record(3, "tools:b"), record(4)])).toEqual(["1*", "2", "3", "4*"]);
    expect(order([record(1, "model:a"), record(2, "tools:b"), record(3)])).toEqual(["1", "2", "3*"]);
  });
});
