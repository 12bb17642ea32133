/**
 * Cancellation: one Ctrl-C (SIGINT) stops a run at once, whatever its step waits on (a model
 * request that hangs, a long shell command), with the thread recorded as interrupted and the
 * resume command printed; the step in flight re-runs on resume. A second Ctrl-C quits at once and
 * still leaves the thread interrupted. `--model-timeout` bounds a model request that hangs.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { cleanEnv, eventually, hasStackTrace, parseEvents, processAlive, runCli } from "./helpers/cli.js";
import { finalState, recordedStatus, resumeWith, runArgs, startRun, type RunSpec } from "./helpers/e2e.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** Long enough to stand for "never answers": the request stays open until the client gives up. */
const HANGS = { delayMs: 600_000 };
/** How fast one Ctrl-C must end the process: about 1 s, with room for a loaded 2-core machine. */
const STOP_WITHIN_MS = 3_000;

let server: MockOpenAIServer;

beforeEach(async () => {
  server = await startMockOpenAI();
  onCleanup(() => server.close());
});

const modelEnv = (extra: NodeJS.ProcessEnv = {}) => cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url, ...extra });
const repo = (): Workspace => tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });

/** A Coder run on the mock server. */
const coderOnServer = (thread: string, extra: Partial<RunSpec> = {}): RunSpec => ({
  graph: "coder",
  task: "do the task",
  thread,
  model: "openai:gpt-test",
  approval: "auto",
  ...extra,
});

/** A Coder run on a scripted model whose one tool call is `command`, then "Done.": the shell runs unconfined and unasked. */
function shellScript(ws: Workspace, command: string): string {
  const file = join(ws.root, "shell.script.yaml");
  writeFileSync(
    file,
    [
      "responses:",
      "  - node: coder",
      "    tool_calls:",
      "      - name: shell",
      `        args: { command: ${JSON.stringify(command)} }`,
      "  - node: coder",
      '    content: "Done."',
    ].join("\n"),
  );
  return file;
}

interface CoderOutput {
  status: string;
  summary: string;
  toolCalls: Array<{ name: string; ok: boolean }>;
}
const coderOutput = async (db: string, thread: string) =>
  (await finalState<{ outputs?: { coder?: CoderOutput } }>(db, thread)).outputs?.coder;

describe("one Ctrl-C stops a run at once; the step in flight re-runs on resume", () => {
  it("a model request that hangs: exit 130 within a second or so, thread interrupted, resume re-runs the model step", async () => {
    const ws = repo();
    server.enqueue(HANGS);
    const running = startRun(ws, coderOnServer("hang", { json: false }), { env: modelEnv() });
    expect(
      await eventually(
        () => server.requests.length,
        (n) => n === 1,
        30_000,
      ),
    ).toBe(1);

    const sent = performance.now();
    const stopped = await running.kill("SIGINT");
    const latency = performance.now() - sent;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(latency).toBeLessThan(STOP_WITHIN_MS);
    expect(stopped.stdout).toContain("■ interrupted");
    expect(stopped.stdout).toContain("Continue with: loopgraph resume hang");
    expect(hasStackTrace(stopped.stdout + stopped.stderr)).toBe(false);
    expect(await recordedStatus(ws.db, "hang")).toBe("interrupted");
    // The aborted model step left no result: no failure was made of it.
    expect(await coderOutput(ws.db, "hang")).toBeUndefined();

    server.enqueue({ text: "Nothing to change: the task is done." });
    const resumed = await resumeWith({ env: modelEnv() }, ws, "hang", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    const output = await coderOutput(ws.db, "hang");
    expect(output).toMatchObject({ status: "success", summary: "Nothing to change: the task is done." });
    expect(await recordedStatus(ws.db, "hang")).toBe("finished");
  });

  it("SIGTERM stops a run as Ctrl-C does", async () => {
    const ws = repo();
    server.enqueue(HANGS);
    const running = startRun(ws, coderOnServer("term", { json: false }), { env: modelEnv() });
    await eventually(
      () => server.requests.length,
      (n) => n === 1,
      30_000,
    );
    const stopped = await running.kill("SIGTERM");
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stdout).toContain("Continue with: loopgraph resume term");
    expect(await recordedStatus(ws.db, "term")).toBe("interrupted");
  });

  it("a long shell command: exit 130 at once, the command's processes are dead, resume runs the command again", async () => {
    const ws = repo();
    const marker = "sleep 29.8761";
    // The first time it runs, it waits; run again, it ends at once.
    const script = shellScript(ws, `echo start >> log.txt; [ -e again ] || { touch again; ${marker}; }; echo done >> log.txt`);
    const running = startRun(ws, {
      graph: "coder",
      task: "do the task",
      thread: "shell",
      script,
      approval: "auto",
      extra: ["--no-sandbox"],
    });
    await running.waitForEvent("tool_call", (line) => line.includes("sleep"));
    expect(
      await eventually(
        () => processAlive(marker),
        (alive) => alive,
      ),
    ).toBe(true);

    const sent = performance.now();
    const stopped = await running.kill("SIGINT");
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(performance.now() - sent).toBeLessThan(STOP_WITHIN_MS);
    expect(parseEvents(stopped.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "interrupted", exitCode: 130 });
    // No "cancelled" result reached the model or the record.
    expect(parseEvents(stopped.stdout).filter((e) => e.type === "tool_result")).toHaveLength(0);
    expect(processAlive(marker)).toBe(false);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("start\n");
    expect(await recordedStatus(ws.db, "shell")).toBe("interrupted");

    const resumed = await resumeWith({}, ws, "shell", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseEvents(resumed.stdout).filter((e) => e.type === "tool_call")).toHaveLength(1);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("start\nstart\ndone\n");
    const output = await coderOutput(ws.db, "shell");
    expect(output?.status).toBe("success");
    expect(output?.toolCalls).toEqual([expect.objectContaining({ name: "shell", ok: true })]);
  });

  it("a second Ctrl-C quits at once: exit 130, the resume command printed, the thread interrupted (not running)", async () => {
    const ws = repo();
    const marker = "sleep 29.8762";
    // A command that ignores SIGTERM holds the first Ctrl-C for the 2 s before it is killed.
    const script = shellScript(ws, `trap '' TERM; ${marker}`);
    const running = startRun(ws, {
      graph: "coder",
      task: "do the task",
      thread: "twice",
      script,
      approval: "auto",
      json: false,
      extra: ["--no-sandbox"],
    });
    let stderr = "";
    running.child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    expect(
      await eventually(
        () => processAlive(marker),
        (alive) => alive,
        40_000,
      ),
    ).toBe(true);

    running.child.kill("SIGINT");
    expect(
      await eventually(
        () => stderr,
        (text) => text.includes("Stopping now"),
      ),
    ).toContain("Stopping now");
    const stopped = await running.kill("SIGINT");
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stdout).toContain("Continue with: loopgraph resume twice");
    expect(await recordedStatus(ws.db, "twice")).toBe("interrupted");
    expect(
      await eventually(
        () => processAlive(marker),
        (alive) => !alive,
      ),
    ).toBe(false);
  });
});

describe("--model-timeout", () => {
  it("abandons an attempt that receives nothing for that long, and retries it", async () => {
    const ws = repo();
    server.enqueue(HANGS, HANGS, HANGS);
    const running = startRun(ws, coderOnServer("timeout", { extra: ["--model-timeout", "1"] }), { env: modelEnv() });
    await eventually(
      () => server.requests.length,
      (n) => n >= 1,
      30_000,
    );
    const line = await running.waitForEvent("retry", undefined, { timeoutMs: 20_000 });
    const waited = performance.now() - server.requests[0]!.receivedAt;
    expect(JSON.parse(running.lines[line]!)).toMatchObject({
      type: "retry",
      node: "coder",
      attempt: 1,
      message: expect.stringMatching(/no data from .* for 1 s/),
    });
    // Measured from when the server had the request: the client's second started a little before.
    expect(waited).toBeGreaterThan(500);
    expect(waited).toBeLessThan(10_000);
    expect(
      await eventually(
        () => server.requests.length,
        (n) => n >= 2,
      ),
    ).toBeGreaterThanOrEqual(2);
    expect((await running.kill("SIGINT")).code).toBe(130);
  });

  it("LOOPGRAPH_MODEL_TIMEOUT sets it too", async () => {
    const ws = repo();
    server.enqueue(HANGS, HANGS);
    const running = startRun(ws, coderOnServer("env-timeout"), { env: modelEnv({ LOOPGRAPH_MODEL_TIMEOUT: "1" }) });
    const line = await running.waitForEvent("retry", undefined, { timeoutMs: 20_000 });
    expect(JSON.parse(running.lines[line]!).message).toMatch(/for 1 s/);
    expect((await running.kill("SIGINT")).code).toBe(130);
  });

  it("an invalid value exits 2 with one line, before anything runs", async () => {
    const ws = repo();
    for (const value of ["0", "abc", "-3"]) {
      const result = await runCli(runArgs(ws, coderOnServer(`bad-${value}`, { extra: [`--model-timeout=${value}`] })), { env: modelEnv() });
      expect(result.code, value).toBe(2);
      expect(result.stderr.split("\n")[0]).toMatch(/--model-timeout.*invalid.*number of seconds above 0/);
    }
    const fromEnv = await runCli(runArgs(ws, coderOnServer("bad-env")), { env: modelEnv({ LOOPGRAPH_MODEL_TIMEOUT: "soon" }) });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toBe('loopgraph: invalid LOOPGRAPH_MODEL_TIMEOUT "soon": use a number of seconds above 0 and at most 86400\n');
    expect(server.requests).toHaveLength(0);
    expect(existsSync(ws.db) ? await recordedStatus(ws.db, "bad-env") : undefined).toBeUndefined();
  });
});
