/**
 * Truthful outcomes: every run ends finished (0), failed with a reason (1), paused (3), ended by
 * a limit before the work was judged done (4) or interrupted (130); the reason is printed last,
 * is in `run_finished` and in `inspect`; a failed step is retried by `resume`.
 */
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { RunnableGraph } from "../src/engine/compile.js";
import { settledOutcome } from "../src/engine/outcome.js";
import { loadGraph } from "../src/graph/load.js";
import { cleanEnv, hasStackTrace, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { resume, run, threadsOf } from "./helpers/e2e.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/outcomes");
const LOOPER = join(ROOT, "tests/fixtures/looper");

/** The last non-empty line a process printed on `stream`. */
const lastLine = (text: string): string => text.trimEnd().split("\n").at(-1) ?? "";

async function statusOf(db: string, thread: string): Promise<{ status: string; error?: string }> {
  const found = (await threadsOf(db)).find((t) => t.threadId === thread);
  return { status: found!.status, error: found!.error };
}

describe("a run's outcome tells the truth", () => {
  it("run coder against a server that answers 500 five times exits 1 with the reason last; resume after it recovers finishes (exit 0)", async () => {
    const server = await startMockOpenAI();
    onCleanup(() => server.close());
    const ws = tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });
    const env = cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    const failing = { status: 500, headers: { "retry-after-ms": "10" }, error: { message: "upstream overloaded" } };
    server.enqueue(failing, failing, failing, failing, failing);
    const failed = await run(
      ws,
      { graph: "coder", thread: "down", model: "openai:gpt-test", task: "say done", approval: "auto", json: false },
      { env },
    );
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    expect(server.requests).toHaveLength(5);
    expect(lastLine(failed.stderr)).toMatch(
      /^✖ failed {2}thread down {2}\([^)]*\): node "coder" failed: .*500.*\(gave up after 5 attempts\)$/,
    );
    expect(failed.stderr).toContain("Retry the failed step with: loopgraph resume down");
    expect(failed.stdout).not.toContain("finished");
    expect(hasStackTrace(failed.stderr)).toBe(false);
    expect(await statusOf(ws.db, "down")).toMatchObject({ status: "failed", error: expect.stringMatching(/gave up after 5 attempts/) });

    server.enqueue({ text: "done" });
    const resumed = await runCli(["resume", "down", "--db", ws.db], { env });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(lastLine(resumed.stdout)).toMatch(/^✔ finished {2}thread down {2}\(\d+ tokens in, \d+ out, \d+\.\d s\)$/);
    expect(server.requests).toHaveLength(6);
    expect(await statusOf(ws.db, "down")).toMatchObject({ status: "finished" });
  });

  it("run coder against a 429 that asks to wait beyond the retry limit fails (exit 1) with that reason, not 'finished'", async () => {
    const server = await startMockOpenAI();
    onCleanup(() => server.close());
    const ws = tempWorkspace({ git: "init" });
    const env = cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    server.enqueue({ status: 429, headers: { "retry-after": "120" }, error: { message: "slow down" } });
    const failed = await run(
      ws,
      { graph: "coder", thread: "wait", model: "openai:gpt-test", task: "t", approval: "auto", json: false },
      { env },
    );
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    expect(lastLine(failed.stderr)).toMatch(
      /^✖ failed {2}thread wait {2}\([^)]*\): node "coder" failed: .*retry after 120 s, longer than the 60 s retry limit\)$/,
    );
  });

  it("a node whose max_visits is used up ends the run by that limit: exit 4, which limit, and nothing to resume", async () => {
    const ws = tempWorkspace();
    const result = await run(ws, {
      graph: join(FIXTURES, "visits.yaml"),
      thread: "v",
      script: join(FIXTURES, "visits.script.yaml"),
      task: "t",
    });
    expect(result.code, result.stderr).toBe(4);
    const finished = parseEvents(result.stdout).at(-1);
    expect(finished).toMatchObject({ type: "run_finished", outcome: "limited", exitCode: 4 });
    expect(finished!.reason).toMatch(/^node "work" reached its max_visits \(2\) and the run ended before the work was judged done/);
    const again = await resume(ws, "v");
    expect(again.code).toBe(2);
    expect(again.stderr.trim()).toMatch(/^loopgraph: nothing to resume: thread "v" ended \(limited: node "work" reached its max_visits/);
  });

  it("limits.max_steps ends the run by the step limit (exit 4, resumable): resume runs the next steps", async () => {
    const ws = tempWorkspace();
    const result = await run(ws, {
      graph: join(FIXTURES, "steps.yaml"),
      thread: "s",
      script: join(FIXTURES, "steps.script.yaml"),
      task: "t",
      json: false,
    });
    expect(result.code, result.stdout + result.stderr).toBe(4);
    expect(lastLine(result.stderr)).toMatch(
      /^■ ended by a limit {2}thread s {2}\([^)]*\): the run reached limits\.max_steps \(3\) of .*steps\.yaml/,
    );
    expect(result.stderr).toContain("Continue with: loopgraph resume s");
    const state = await statusOf(ws.db, "s");
    expect(state.status).toBe("limited");
    const resumed = await resume(ws, "s", "--json");
    expect(resumed.code, resumed.stderr).toBe(4);
    // The resume went on from visit 4 of the node, for another round of steps.
    expect(parseEvents(resumed.stdout).find((e) => e.type === "node_started")).toMatchObject({ node: "work", visit: 4 });
  });

  it("a loop at its round limit exits 4 with the limit last; inspect shows the outcome and its reason", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const result = await run(ws, {
      graph: "coder-review",
      thread: "r",
      script: join(LOOPER, "always-continue.script.yaml"),
      task: "write notes",
      approval: "auto",
      json: false,
      extra: ["--max-rounds", "2"],
    });
    expect(result.code, result.stdout + result.stderr).toBe(4);
    expect(lastLine(result.stderr)).toMatch(
      /^■ ended by a limit {2}thread r {2}\([\d.k]+ tokens in, [\d.k]+ out, [\d.]+ s; round 1: [\d.k]+ in, [\d.k]+ out · round 2: [\d.k]+ in, [\d.k]+ out\): the loop reached its round limit \(2 of 2 rounds\) before the Judge judged the work done$/,
    );
    const inspect = await runCli(["inspect", "r", "--db", ws.db]);
    expect(inspect.stdout).toContain("status limited");
    expect(inspect.stdout).toContain("reason: the loop reached its round limit (2 of 2 rounds)");
  });

  it("a loop the Judge ends after a failed Coder fails the run (exit 1): the work was not done", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const result = await run(ws, {
      graph: "coder-review",
      thread: "g",
      script: join(FIXTURES, "coder-gives-up.script.yaml"),
      task: "write notes",
      approval: "auto",
    });
    expect(result.code, result.stderr).toBe(1);
    const finished = parseEvents(result.stdout).at(-1);
    expect(finished).toMatchObject({ type: "run_finished", outcome: "failed", exitCode: 1 });
    expect(finished!.reason).toMatch(/^the Judge ended the loop after the Coder failed: the Coder failed \(model_exhausted/);
  });
});

describe("settledOutcome", () => {
  it("decodes the state once: the parent checkpoint's visit counts are read alone, and the state comes with the outcome", async () => {
    const graph = await loadGraph(join(ROOT, "tests/fixtures/good-graphs/example-review.yaml"));
    const state = { visits: { review: 2 }, messages: [] };
    const getState = vi.fn(async () => ({
      values: state,
      next: [],
      tasks: [],
      parentConfig: { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "parent-1" } },
    }));
    const readVisits = vi.fn(async () => ({ review: 1 }));
    const settled = await settledOutcome(
      { getState } as unknown as RunnableGraph,
      { configurable: { thread_id: "t" } },
      graph,
      "t",
      readVisits,
    );
    expect(settled).toMatchObject({ status: "finished", ended: true });
    expect(settled.state).toBe(state);
    expect(getState).toHaveBeenCalledTimes(1);
    expect(readVisits).toHaveBeenCalledWith("parent-1");

    // Where the counts cannot be read alone (not stored as plain JSON), the parent's state is decoded.
    const fallback = await settledOutcome(
      { getState } as unknown as RunnableGraph,
      { configurable: { thread_id: "t" } },
      graph,
      "t",
      async () => undefined,
    );
    expect(fallback.status).toBe("finished");
    expect(getState).toHaveBeenCalledTimes(3);
  });
});
