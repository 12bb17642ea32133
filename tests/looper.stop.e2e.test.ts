import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, startRun } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { withStore } from "../src/store/store.js";

const SCRIPT = join(ROOT, "tests/fixtures/looper/slow-shell.script.yaml");

interface StoppedState {
  inboxCursor: number;
  loopState: { value: unknown; context: { endReason?: string } };
  outputs: { coder: { status: string; failureKind?: string; toolCalls: unknown[] } };
  visits: Record<string, number>;
  messages: Array<{ content: unknown }>;
}

describe("stop takes effect at the Coder's next step (issue 13)", () => {
  it("loopgraph stop mid-turn: status says stopping at once, the tool call in flight finishes and nothing more runs, exit 130; a stop on the idle loop queues nothing; the recorded replay reproduces the run", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const db = ["--db", ws.db];
    const running = startRun(ws, {
      graph: "coder-review",
      task: "append five lines to lines.txt",
      thread: "halt",
      script: SCRIPT,
      approval: "auto",
    });
    // The first shell call starts: it writes line-1, then waits for the test's `go`.
    await running.waitForEvent("tool_call", (line) => line.includes("line-1"));

    const stop = await runCli(["stop", "halt", ...db]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain('"command":"stop"');
    const status = await runCli(["status", "halt", "--json", ...db]);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: "RUNNING", subState: "WAITING_CODER", shouldStop: true });
    const text = await runCli(["status", "halt", ...db]);
    expect(text.stdout).toContain("state: RUNNING (stopping)");
    writeFileSync(join(ws.dir, "go"), "");

    const result = await running.done;
    expect(result.code, result.stderr + result.stdout.slice(-2000)).toBe(130);
    // The call in flight finished; no model call and no tool call after it.
    const lines = readFileSync(join(ws.dir, "lines.txt"), "utf8").split("\n").filter(Boolean);
    expect(lines).toEqual(["line-1"]);
    const events = parseEvents(result.stdout);
    expect(events.filter((e) => e.type === "tool_call").length).toBe(lines.length);
    const state = await finalState<StoppedState>(ws.db, "halt");
    expect(state.loopState.value).toBe("IDLE");
    expect(state.loopState.context.endReason).toBe("stopped by user");
    expect(state.outputs.coder).toMatchObject({ status: "failure", failureKind: "stopped" });
    expect(state.visits.review).toBeUndefined();
    expect(state.visits.judge).toBeUndefined();
    const auto = state.messages.flatMap((m) => (typeof m.content === "string" && m.content.startsWith("[AUTO]") ? [m.content] : []));
    expect(auto.slice(-2)).toEqual([
      "[AUTO] coder stopped by the stop command before its next step",
      "[AUTO] loop ended: stopped by user (after round 1/5)",
    ]);

    // The loop is idle now: a stop has nothing to stop, and nothing is queued.
    for (const args of [
      ["stop", "halt"],
      ["send", "halt", "stop"],
    ]) {
      const idle = await runCli([...args, ...db]);
      expect(idle.code, idle.stderr).toBe(0);
      expect(idle.stdout.trim()).toBe("no loop is running: nothing to stop.");
    }
    const waiting = await withStore({ db: ws.db, env: {} }, "read", async (store) => store.inbox.after("halt", state.inboxCursor));
    expect(waiting).toEqual([]);
    const idleStatus = JSON.parse((await runCli(["status", "halt", "--json", ...db])).stdout);
    expect(idleStatus).toMatchObject({ state: "IDLE", shouldStop: false, endReason: "stopped by user" });

    // The recorded replay takes the same stop check answers: exit 130 like the run, no divergence.
    const before = readFileSync(join(ws.dir, "lines.txt"), "utf8");
    const replay = await runCli(["replay", "halt", "--recorded", ...db, "--json"]);
    const replayed = parseEvents(replay.stdout).find((e) => e.type === "replay_result") as
      | { divergences: unknown[]; exitCode: number }
      | undefined;
    expect(replayed?.divergences, replay.stdout.slice(-3000)).toEqual([]);
    expect(replay.code, replay.stderr).toBe(130);
    expect(readFileSync(join(ws.dir, "lines.txt"), "utf8")).toBe(before);
    expect(existsSync(join(ws.dir, "notes.txt"))).toBe(true);
  });
});
