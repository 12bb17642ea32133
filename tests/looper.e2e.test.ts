import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState as stateOf, resume, run, startRun, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/looper");

const repo = (): Workspace => tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });

const loop = (thread: string, script: string, ...extra: string[]): RunSpec => ({
  graph: "coder-review",
  task: "write add() in app.js",
  thread,
  script: join(SCRIPTS, script),
  approval: "auto",
  extra,
});

interface FinalState {
  outputs: Record<string, { endReason?: string; round?: number; decision?: string; source?: string; notes?: string[] }>;
  visits: Record<string, number>;
  task: string;
  loopState: { value: unknown; context: { pending: string[]; round: number; endReason?: string } };
  messages: Array<{ name?: string; content: string }>;
}

const finalState = (db: string, thread: string) => stateOf<FinalState>(db, thread);

const autoLines = (state: FinalState): string[] =>
  state.messages.filter((m) => typeof m.content === "string" && m.content.startsWith("[AUTO]")).map((m) => m.content);

describe("the Looper (coder-review), end to end", () => {
  it("runs two rounds: a critical review makes the Judge continue, a passing one lets it terminate", async () => {
    const ws = repo();
    const result = await run(ws, loop("two", "two-rounds.script.yaml"));
    expect(result.code, result.stderr + result.stdout.slice(-2000)).toBe(0);
    expect(existsSync(join(ws.dir, "app.js"))).toBe(true);
    expect(existsSync(join(ws.dir, "app.test.js"))).toBe(true);
    const state = await finalState(ws.db, "two");
    expect(state.visits).toMatchObject({ coder: 2, review: 2, judge: 2 });
    expect(state.loopState.value).toBe("IDLE");
    expect(state.loopState.context.endReason).toBe("the task is done and tested");
    const auto = autoLines(state).join("\n");
    expect(auto).toMatch(/round 2/);
    expect(parseEvents(result.stdout).some((e) => e.type === "message" && String(e.content).startsWith("[AUTO]"))).toBe(true);
  });

  it("status from another process shows RUNNING, the round and WAITING_CODER while the Coder works; add: is queued, drained at JUDGE exactly once across kill -9", async () => {
    const ws = repo();
    const running = startRun(ws, loop("busy", "gated-coder.script.yaml"));
    await running.waitForEvent("tool_call", (line) => line.includes("while"));

    const status = await runCli(["status", "busy", "--db", ws.db]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain("[Looper status]");
    expect(status.stdout).toContain("state: RUNNING");
    expect(status.stdout).toContain("round: 1/5");
    expect(status.stdout).toContain("sub-state: WAITING_CODER");

    const sent = await runCli(["send", "busy", "add: write a README", "--db", ws.db]);
    expect(sent.code, sent.stderr).toBe(0);
    const queued = await runCli(["status", "busy", "--json", "--db", ws.db]);
    expect(JSON.parse(queued.stdout)).toMatchObject({ pending: ["write a README"] });
    // The Coder's command in flight ends now.
    writeFileSync(join(ws.dir, "go"), "");

    // Right after JUDGE (the next looper step has started, so the Judge's checkpoint is saved): kill -9.
    const judged = await running.waitForNode("judge", "node_finished");
    await running.waitForNode("looper", "node_started", { after: judged });
    await running.kill("SIGKILL");

    const resumed = await resume(ws, "busy", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "README.md"), "utf8")).toBe("# demo\n");
    const state = await finalState(ws.db, "busy");
    expect(state.loopState.context.pending).toEqual([]);
    expect(state.outputs.judge).toBeDefined();
    const judgeMessages = state.messages.filter((m) => m.name === "judge").map((m) => m.content);
    expect(judgeMessages[0]).toContain("write a README");
    expect(autoLines(state).filter((line) => line.startsWith("[AUTO] queued: write a README"))).toHaveLength(1);
  });

  it("stop during round 1 ends the loop after the current node: reason 'stopped by user', exit 130 (the user interrupted the work)", async () => {
    const ws = repo();
    const running = startRun(ws, loop("halt", "gated-coder.script.yaml"));
    await running.waitForEvent("tool_call", (line) => line.includes("while"));
    const stop = await runCli(["stop", "halt", "--db", ws.db]);
    expect(stop.code, stop.stderr).toBe(0);
    // A second stop, read in the same step as the first: it has nothing left to stop.
    expect((await runCli(["stop", "halt", "--db", ws.db])).code).toBe(0);
    writeFileSync(join(ws.dir, "go"), "");
    const result = await running.done;
    expect(result.code, result.stderr).toBe(130);
    const state = await finalState(ws.db, "halt");
    expect(state.loopState.context.endReason).toBe("stopped by user");
    expect(state.visits.coder).toBe(1);
    expect(state.visits.review).toBeUndefined();
    // The log tells the user what happened, nothing internal: no ignored Coder result, no "nothing to stop";
    // the Coder's result comes before the end of the loop it ran in.
    const auto = autoLines(state);
    expect(auto.join("\n")).not.toMatch(/ignored|nothing to stop/);
    const coderLine = auto.findIndex((line) => line.startsWith("[AUTO] coder"));
    expect(coderLine).toBeGreaterThanOrEqual(0);
    expect(coderLine).toBeLessThan(auto.findIndex((line) => line.startsWith("[AUTO] loop ended")));
  });

  it("with --max-rounds 2 and a Judge that always continues, the loop ends after round 2: 'round limit', exit 4", async () => {
    const ws = repo();
    const result = await run(ws, loop("limit", "always-continue.script.yaml", "--max-rounds", "2"));
    expect(result.code, result.stderr).toBe(4);
    const state = await finalState(ws.db, "limit");
    expect(state.loopState.context.endReason).toBe("round limit");
    expect(state.visits.coder).toBe(2);

    // Each round's tokens: one round_finished per round, summing to every node's tokens; inspect lists the same.
    const events = parseEvents(result.stdout);
    const rounds = events.filter((e) => e.type === "round_finished") as Array<{
      round: number;
      usage: { inputTokens: number; outputTokens: number };
    }>;
    expect(rounds.map((e) => e.round)).toEqual([1, 2]);
    const used = (list: Array<{ usage?: { inputTokens: number; outputTokens: number } }>) =>
      list.reduce((sum, e) => sum + (e.usage?.inputTokens ?? 0) + (e.usage?.outputTokens ?? 0), 0);
    expect(rounds.every((e) => e.usage.inputTokens > 0 && e.usage.outputTokens > 0)).toBe(true);
    expect(used(rounds)).toBe(used(events.filter((e) => e.type === "node_finished") as never));
    const inspect = await runCli(["inspect", "limit", "--db", ws.db]);
    const shown = rounds.map((e) => `round ${e.round}: ${e.usage.inputTokens} in, ${e.usage.outputTokens} out`).join(" · ");
    expect(inspect.stdout).toContain(`rounds: ${shown}`);
  });

  it("a Coder failure (step limit) and a Review failure (a check that fails) both reach the Judge; the run does not crash", async () => {
    const ws = repo();
    const result = await run(ws, {
      graph: join(SCRIPTS, "failures.yaml"),
      task: "list the files",
      thread: "fail",
      script: join(SCRIPTS, "failures.script.yaml"),
      approval: "auto",
    });
    expect(result.code, result.stderr).toBe(0);
    const state = await finalState(ws.db, "fail");
    expect(state.visits).toMatchObject({ coder: 2, review: 1, judge: 2 });
    const judged = state.messages.filter((m) => m.name === "judge").map((m) => m.content);
    expect(judged[0]).toContain("continue");
    const review = state.outputs.review as unknown as { checks: { task_log: { ok: boolean; error?: string } } };
    expect(review.checks.task_log.ok).toBe(false);
    expect(state.loopState.context.endReason).toBe("done");
    expect(autoLines(state).join("\n")).toMatch(/coder failed/);
  });

  it("resuming after kill -9 restores the machine's exact sub-state (WAITING_CODER, round 1)", async () => {
    const ws = repo();
    const running = startRun(ws, loop("restore", "gated-coder.script.yaml"));
    await running.waitForEvent("tool_call", (line) => line.includes("while"));
    await running.kill("SIGKILL");
    writeFileSync(join(ws.dir, "go"), "");
    const status = await runCli(["status", "restore", "--json", "--db", ws.db]);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: "RUNNING", subState: "WAITING_CODER", round: 1 });
    const resumed = await resume(ws, "restore", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseEvents(resumed.stdout).find((e) => e.type === "node_started")).toMatchObject({ node: "coder" });
    expect((await finalState(ws.db, "restore")).loopState.value).toBe("IDLE");
  });

  it("invalid Judge output twice: the repair retry, then the fallback, both in the message log", async () => {
    const ws = repo();
    const result = await run(ws, loop("fallback", "invalid-judge.script.yaml"));
    expect(result.code, result.stderr).toBe(0);
    const state = await finalState(ws.db, "fallback");
    expect(state.outputs.judge).toMatchObject({ source: "fallback" });
    const judgeLog = state.messages
      .filter((m) => m.name === "judge")
      .map((m) => m.content)
      .join("\n");
    expect(judgeLog).toMatch(/asked once more with the validation error/);
    expect(judgeLog).toMatch(/fallback/i);
  });

  it("a multi-line [AUTO] entry keeps its further lines indented under the prefix, in the message log and in run's output", async () => {
    const ws = repo();
    const result = await run(ws, {
      ...loop("lines", "invalid-judge.script.yaml"),
      task: "write add() in app.js\nand test it",
      json: false,
    });
    expect(result.code, result.stderr).toBe(0);
    const auto = autoLines(await finalState(ws.db, "lines"));
    const started = auto.find((line) => line.includes("write add() in app.js"));
    expect(started).toMatch(/^\[AUTO\] round 1\/5 started: write add\(\) in app\.js\n {7}and test it/);
    for (const entry of auto) for (const further of entry.split("\n").slice(1)) expect(further, entry).toMatch(/^ {7}/);
    expect(result.stdout).toMatch(/^.*\[AUTO\] round 1\/5 started: write add\(\) in app\.js\n.* {7}and test it$/m);
    // The end line: the run's tokens and time, then the round's tokens.
    expect(result.stdout).toMatch(/✔ finished {2}thread lines {2}\(\S+ tokens in, \S+ out, [\d.]+ s; round 1: \S+ in, \S+ out\)$/m);
  });

  it("start while RUNNING is ignored with a message; add while IDLE starts the loop", async () => {
    const ws = repo();
    const running = startRun(ws, loop("cmds", "gated-coder.script.yaml"));
    await running.waitForEvent("tool_call", (line) => line.includes("while"));
    expect((await runCli(["send", "cmds", "start: something else", "--db", ws.db])).code).toBe(0);
    expect((await runCli(["stop", "cmds", "--db", ws.db])).code).toBe(0);
    writeFileSync(join(ws.dir, "go"), "");
    expect((await running.done).code).toBe(130);
    const stopped = await finalState(ws.db, "cmds");
    expect(autoLines(stopped).join("\n")).toMatch(/already running/);

    const sent = await runCli(["send", "cmds", "add: write a README", "--db", ws.db]);
    expect(sent.stdout).toContain("loopgraph resume cmds");
    const resumed = await resume(ws, "cmds", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    const restarted = await finalState(ws.db, "cmds");
    expect(restarted.task).toBe("write a README");
    expect(restarted.visits.coder).toBeGreaterThan(1);
  });
});
