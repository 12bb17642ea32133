/**
 * Read-only calls of one model turn run at once, each its own task with its own checkpointed
 * result; writes and commands keep their order (real CLI processes, a local OpenAI mock, a
 * dependency-free MCP server whose tools answer only when calls meet, kill -9 and resume).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { withStore } from "../src/store/store.js";
import { cleanEnv, eventually, parseEvents, runCli } from "./helpers/cli.js";
import { resumeWith, run, startRun } from "./helpers/e2e.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

const RENDEZVOUS = join(import.meta.dirname, "fixtures", "mcp", "rendezvous-server.mjs");

/** A user config folder (XDG_CONFIG_HOME) declaring the rendezvous MCP server, its tools allowed as read-only by the user's policy. */
function rendezvousConfig(ws: Workspace): NodeJS.ProcessEnv {
  const home = join(ws.root, "config");
  mkdirSync(join(home, "loopgraph"), { recursive: true });
  const server = `mcp_servers:\n  rv:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(RENDEZVOUS)}]\n`;
  writeFileSync(join(home, "loopgraph", "config.yaml"), server);
  writeFileSync(join(home, "loopgraph", "policy.yaml"), "rules:\n  - { tool: 'rv__*', decision: allow, read_only: true }\n");
  return cleanEnv({ XDG_CONFIG_HOME: home });
}

/** The results of a batch of reads the Coder's latest checkpoint holds as written by finished tasks (its pending writes). */
async function savedReadResults(db: string, thread: string): Promise<string[]> {
  return withStore({ db, env: {} }, "read", async (store) => {
    const addresses = await store.checkpoints.checkpointsWithPrefix(thread, "");
    const coder = addresses.find((address) => address.ns.startsWith("coder:"))?.ns;
    if (coder === undefined) return [];
    const tuple = await store.saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: coder } });
    return (tuple?.pendingWrites ?? [])
      .filter(([, channel]) => channel === "readResults")
      .flatMap(([, , value]) => Object.keys(value as object));
  });
}

const indexOf = (events: Record<string, unknown>[], type: string, id: string): number =>
  events.findIndex((event) => event.type === type && event.id === id);

describe("read-only calls of one model turn run at once", () => {
  it("reads before a write run together and come back in the model's order; the write waits for them, the read after it sees what it wrote", async () => {
    const ws = tempWorkspace({ git: true, files: { "a.txt": "alpha\n", "b.txt": "beta\n" } });
    const server = await startMockOpenAI();
    onCleanup(() => server.close());
    server.enqueue(
      {
        toolCalls: [
          { id: "r1", name: "read_file", args: { path: "a.txt" } },
          { id: "r2", name: "read_file", args: { path: "b.txt" } },
          { id: "r3", name: "list_dir", args: {} },
          { id: "w4", name: "write_file", args: { path: "a.txt", contents: "ALPHA2\n" } },
          { id: "r5", name: "read_file", args: { path: "a.txt" } },
        ],
      },
      { text: "Read both, rewrote a.txt." },
    );
    const env = cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    const result = await run(
      ws,
      { graph: "coder", thread: "reads", model: "openai:gpt-4o-mini", task: "read and rewrite", approval: "auto" },
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    const events = parseEvents(result.stdout);
    // The three reads were all under way before any of them had a result: they ran at once.
    const firstResult = Math.min(...["r1", "r2", "r3"].map((id) => indexOf(events, "tool_result", id)));
    for (const id of ["r1", "r2", "r3"]) expect(indexOf(events, "tool_call", id)).toBeLessThan(firstResult);
    // The write started once every read before it had ended; the read after it ran after it.
    const lastRead = Math.max(...["r1", "r2", "r3"].map((id) => indexOf(events, "tool_result", id)));
    expect(indexOf(events, "tool_call", "w4")).toBeGreaterThan(lastRead);
    expect(indexOf(events, "tool_call", "r5")).toBeGreaterThan(indexOf(events, "tool_result", "w4"));
    // The model got every result, in the order of its calls, each its own.
    const sent = server.requests[1]!.body.messages.filter((message: { role: string }) => message.role === "tool");
    expect(sent.map((message: { tool_call_id: string }) => message.tool_call_id)).toEqual(["r1", "r2", "r3", "w4", "r5"]);
    expect(sent[0].content).toContain("alpha");
    expect(sent[1].content).toContain("beta");
    expect(sent[2].content).toContain("b.txt");
    expect(sent[4].content).toContain("ALPHA2");
    expect(sent[4].content).not.toContain("alpha");
  });

  it("MCP tools a user's allow rule marks read_only run at once too, and a recorded replay of the batch follows its record", async () => {
    const ws = tempWorkspace({ git: true });
    const env = rendezvousConfig(ws);
    const script = join(ws.root, "meet.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        "  - { node: coder, tool_calls: [ { name: rv__meet, args: { party: 2 } }, { name: rv__meet, args: { party: 2 } } ] }",
        '  - { node: coder, content: "We met." }',
        "",
      ].join("\n"),
    );
    const result = await run(ws, { graph: "coder", thread: "meet", script, task: "meet", approval: "auto" }, { env });
    expect(result.code, result.stderr).toBe(0);
    const results = parseEvents(result.stdout).filter((event) => event.type === "tool_result");
    // Run one after the other, each would have waited alone (3 s) for the other.
    expect(results.map((event) => event.result)).toEqual(["met 2 at once", "met 2 at once"]);
    const replay = await runCli(["replay", "meet", "--recorded", "--db", ws.db], { env });
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toContain("consistent");
  });

  it("a read of a batch that ended before a kill -9 is not run again on resume; the one in flight is", async () => {
    const ws = tempWorkspace({ git: true, files: { "a.txt": "alpha\n" } });
    const env = rendezvousConfig(ws);
    const gate = join(ws.root, "gate");
    const script = join(ws.root, "hold.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        `  - { node: coder, tool_calls: [ { name: read_file, args: { path: a.txt } }, { name: rv__hold, args: { gate: ${JSON.stringify(gate)} } } ] }`,
        '  - { node: coder, content: "Read and held." }',
        "",
      ].join("\n"),
    );
    const running = startRun(ws, { graph: "coder", thread: "hold", script, task: "read and hold", approval: "auto" }, { env });
    await running.waitForEvent("tool_result", (line) => line.includes('"name":"read_file"'));
    // Killed once the read's result is saved, while the MCP call beside it still waits.
    await eventually(
      () => savedReadResults(ws.db, "hold"),
      (saved) => saved.length === 1,
    );
    await running.kill("SIGKILL");
    writeFileSync(gate, "");
    const resumed = await resumeWith({ env }, ws, "hold", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseEvents(resumed.stdout);
    expect(events.filter((event) => event.type === "tool_call").map((event) => event.name)).toEqual(["rv__hold"]);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ name: "rv__hold", result: "held until the gate opened" });
  });
});
