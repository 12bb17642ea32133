import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import { END, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import type { CoderResult } from "../src/nodes/coder/types.js";
import { createModelCache, type RunContext } from "../src/runtime/context.js";
import type { RunEvent } from "../src/runtime/events.js";
import { ModelError } from "../src/errors.js";
import type { GraphDefinition } from "../src/format/types.js";
import type { ReviewResult } from "../src/state/looper.js";
import type { ChatModel } from "../src/models/types.js";
import { createReviewNode, type ReviewNodeDefinition } from "../src/nodes/review/node.js";
import { captureBaseline } from "../src/nodes/review/baseline.js";
import { buildReviewGraph } from "../src/nodes/review/graph.js";
import { GraphState, type GraphStateValue } from "../src/state/graph-state.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/review");
const TASK = "Add hello.js that prints hello";

const DEFINITION: ReviewNodeDefinition = {
  kind: "review",
  id: "review",
  coder: "coder",
  specsPrompt: join(ROOT, "prompts/review-specs.md"),
  taskLogPrompt: join(ROOT, "prompts/review-task-log.md"),
  maxDiffChars: 40_000,
};

const GRAPH: GraphDefinition = {
  version: 1,
  name: "review-test",
  file: join(FIXTURES, "none.yaml"),
  state: {},
  nodes: {},
  edges: [],
  breakpoints: { before: [], after: [] },
  limits: { maxSteps: 100 },
  policy: [],
};

const CODER_RESULT: CoderResult = {
  status: "success",
  summary: "Created hello.js and ran it: it prints hello.",
  filesChanged: ["hello.js"],
  steps: 3,
  toolCalls: [
    {
      id: "c1",
      name: "write_file",
      args: { path: "hello.js", contents: "console.log('hello');\n" },
      ok: true,
      preview: "wrote hello.js (1 line)",
    },
    { id: "c2", name: "shell", args: { command: "node hello.js" }, ok: false, errorKind: "timeout", preview: "timed out after 1000 ms" },
    { id: "c3", name: "shell", args: { command: "node hello.js" }, ok: true, preview: "hello" },
  ],
  todos: [{ content: "create hello.js", status: "completed" }],
};

/** A repository with a committed README, a baseline, then the Coder's change: hello.js. */
async function changedWorkspace(): Promise<{ dir: string; baseline: string }> {
  const { dir } = tempWorkspace({ prefix: "loopgraph-review-", git: "init", files: { "README.md": "# demo\n" } });
  const baseline = await captureBaseline(dir);
  writeFileSync(join(dir, "hello.js"), "console.log('hello');\n");
  return { dir, baseline };
}

interface ModelCall {
  node: string;
  messages: BaseMessage[];
}

interface ReviewRun {
  state: GraphStateValue;
  review: ReviewResult;
  events: RunEvent[];
  calls: ModelCall[];
}

function context(
  workspace: string,
  script: string,
  events: RunEvent[],
  calls: ModelCall[],
  wrap?: (model: ChatModel) => ChatModel,
): RunContext {
  const models = createModelCache(ROOT, {});
  return {
    threadId: "review-thread",
    workspace,
    env: {},
    settings: { model: `scripted:${join(FIXTURES, script)}`, approval: "auto" },
    userRules: [],
    readInbox: async () => [],
    emit: (event) => events.push(event),
    signal: new AbortController().signal,
    model: (spec) => {
      const inner = wrap ? wrap(models(spec)) : models(spec);
      return {
        spec,
        call: (messages, options) => {
          calls.push({ node: options.node, messages });
          return inner.call(messages, options);
        },
      };
    },
  };
}

/** Runs a graph of one review node, as the engine would: a parent graph with a checkpointer. */
async function runReview(options: {
  workspace: string;
  script: string;
  baseline?: string;
  coder?: CoderResult;
  wrapModel?: (model: ChatModel) => ChatModel;
}): Promise<ReviewRun> {
  const events: RunEvent[] = [];
  const calls: ModelCall[] = [];
  const ctx = context(options.workspace, options.script, events, calls, options.wrapModel);
  const parent = new StateGraph(GraphState)
    .addNode("review", createReviewNode(DEFINITION, GRAPH, ctx))
    .addEdge(START, "review")
    .addEdge("review", END)
    .compile({ checkpointer: new MemorySaver() });
  const input: Partial<GraphStateValue> = {
    task: TASK,
    outputs: options.coder ? { coder: options.coder } : {},
    roundBaseline: options.baseline,
  };
  const state = (await parent.invoke(input, { configurable: { thread_id: "t" } })) as GraphStateValue;
  return { state, review: state.outputs.review as ReviewResult, events, calls };
}

const promptOf = (calls: ModelCall[], node: string): string =>
  calls
    .filter((call) => call.node === node)[0]!
    .messages.map((message) => String(message.content))
    .join("\n");

describe("review node", () => {
  it("all checks normal: rating normal, the diff and the tool log reach the model checks, usage and consumption recorded", async () => {
    const { dir, baseline } = await changedWorkspace();
    const { state, review, events, calls } = await runReview({
      workspace: dir,
      script: "normal.script.yaml",
      baseline,
      coder: CODER_RESULT,
    });

    expect(review.rating).toBe("normal");
    expect(review.checks.specs_breakdown).toEqual({ ok: true, rating: "normal", comments: [] });
    expect(review.checks.task_log).toEqual({ ok: true, rating: "normal", comments: [] });
    expect(review.checks.git_diff).toEqual({ ok: true, rating: "normal", comments: ["1 file changed (+1 −0 lines): hello.js (+1 −0)"] });
    expect(review.comments).toEqual(["git_diff: 1 file changed (+1 −0 lines): hello.js (+1 −0)"]);

    const specs = promptOf(calls, "review.specs_breakdown");
    expect(specs).toContain(TASK);
    expect(specs).toContain("Files it reports changing: hello.js");
    expect(specs).toContain("+console.log('hello');");
    expect(specs).toContain('"rating"');
    const log = promptOf(calls, "review.task_log");
    expect(log).toContain("# Tool calls (3, 1 failed)");
    expect(log).toContain('2. [FAILED (timeout)] shell {"command":"node hello.js"}');
    expect(log).toContain("[completed] create hello.js");

    expect(state.scripted).toEqual({
      [`scripted:${join(FIXTURES, "normal.script.yaml")}`]: { "review.specs_breakdown": 1, "review.task_log": 1 },
    });
    expect(state.usage.review!.inputTokens).toBeGreaterThan(0);
    expect(state.usage.review!.outputTokens).toBeGreaterThan(0);
    expect(state.roundBaseline).toBe(baseline);
    const summary = "Review: normal\n- git_diff: 1 file changed (+1 −0 lines): hello.js (+1 −0)";
    expect(state.messages.at(-1)?.content).toBe(summary);
    expect(events).toContainEqual({ type: "message", threadId: "review-thread", node: "review", content: summary });
  });

  it("one check critical makes the review critical; comments carry their check's name", async () => {
    const { dir, baseline } = await changedWorkspace();
    const { review } = await runReview({ workspace: dir, script: "one-critical.script.yaml", baseline, coder: CODER_RESULT });

    expect(review.rating).toBe("critical");
    expect(review.checks.task_log.rating).toBe("normal");
    expect(review.checks.git_diff.rating).toBe("normal");
    expect(review.comments).toContain('specs_breakdown: hello.js prints "hi", the task asks for "hello"');
  });

  it("a check whose model answers invalid JSON twice fails alone; the others still rate the review", async () => {
    const { dir, baseline } = await changedWorkspace();
    const { state, review, calls } = await runReview({
      workspace: dir,
      script: "invalid-twice.script.yaml",
      baseline,
      coder: CODER_RESULT,
    });

    expect(review.checks.specs_breakdown.ok).toBe(false);
    expect(review.checks.specs_breakdown.error).toMatch(/does not match the output schema after one retry: .*rating/);
    expect(calls.filter((call) => call.node === "review.specs_breakdown")).toHaveLength(2);
    expect(promptOf(calls.slice(-1), "review.specs_breakdown")).toContain("Your answer could not be used");
    expect(review.checks.task_log).toEqual({ ok: true, rating: "warning", comments: ["the change was never run"] });
    expect(review.checks.git_diff.ok).toBe(true);
    expect(review.rating).toBe("warning");
    expect(review.comments).toContain(`specs_breakdown: the check failed: ${review.checks.specs_breakdown.error}`);
    expect(Object.values(state.scripted)).toEqual([{ "review.specs_breakdown": 2, "review.task_log": 1 }]);
  });

  it("a git failure fails the git_diff check alone; the specs check is told the diff is unknown", async () => {
    const { dir, baseline } = await changedWorkspace();
    rmSync(dir, { recursive: true, force: true });
    const { review, calls } = await runReview({ workspace: dir, script: "normal.script.yaml", baseline, coder: CODER_RESULT });

    expect(review.checks.git_diff).toEqual({ ok: false, comments: [], error: expect.stringMatching(/workspace not found/) });
    expect(review.checks.specs_breakdown).toEqual({ ok: true, rating: "normal", comments: [] });
    expect(review.checks.task_log).toEqual({ ok: true, rating: "normal", comments: [] });
    expect(review.rating).toBe("warning");
    expect(review.comments).toEqual([
      expect.stringMatching(/^git_diff: the check failed: workspace not found/),
      "review incomplete: the git_diff check failed, so the change is only partly verified",
    ]);
    expect(promptOf(calls, "review.specs_breakdown")).toContain("Unknown: the diff could not be read");
  });

  it("without a round baseline, warns, takes one now and stores it as roundBaseline", async () => {
    const { dir } = await changedWorkspace();
    const { state, review, calls } = await runReview({ workspace: dir, script: "normal.script.yaml", coder: CODER_RESULT });

    expect(review.rating).toBe("warning");
    expect(review.checks.git_diff.rating).toBe("warning");
    expect(review.comments[0]).toMatch(/^git_diff: no workspace baseline was taken when the round began/);
    expect(state.roundBaseline).toMatch(/^git:[0-9a-f]{40}$/);
    expect(promptOf(calls, "review.specs_breakdown")).toContain("Unknown: no workspace baseline");
  });

  it("a failed Coder makes the review critical, whatever the checks say", async () => {
    const { dir, baseline } = await changedWorkspace();
    const failed: CoderResult = {
      ...CODER_RESULT,
      status: "failure",
      failureKind: "step_limit",
      failureReason: "reached the step limit of 3 model calls",
    };
    const { review, calls } = await runReview({ workspace: dir, script: "normal.script.yaml", baseline, coder: failed });

    expect(review.rating).toBe("critical");
    expect(review.comments[0]).toBe("coder: the Coder failed (step_limit): reached the step limit of 3 model calls");
    expect(promptOf(calls, "review.task_log")).toContain("Failed after 3 model calls: step_limit");
  });

  it("every check failing gives a critical review that says nothing was verified", async () => {
    const { dir, baseline } = await changedWorkspace();
    rmSync(dir, { recursive: true, force: true });
    const { review } = await runReview({ workspace: dir, script: "empty.script.yaml", baseline, coder: CODER_RESULT });

    expect(Object.values(review.checks).map((check) => check.ok)).toEqual([false, false, false]);
    expect(review.checks.specs_breakdown.error).toMatch(/scripted model exhausted: no response left for node "review.specs_breakdown"/);
    expect(review.rating).toBe("critical");
    expect(review.comments.at(-1)).toBe("review: every check failed, so nothing was verified");
  });

  it("without a Coder result, the task_log check fails without calling the model", async () => {
    const { dir, baseline } = await changedWorkspace();
    const { review, calls } = await runReview({ workspace: dir, script: "normal.script.yaml", baseline });

    expect(review.checks.task_log).toEqual({ ok: false, comments: [], error: "no Coder result at outputs.coder" });
    expect(calls.map((call) => call.node)).toEqual(["review.specs_breakdown"]);
    expect(promptOf(calls, "review.specs_breakdown")).toContain("None: the Coder left no result.");
    expect(review.rating).toBe("warning");
  });

  it("a model auth error stops the review instead of failing one check", async () => {
    const { dir, baseline } = await changedWorkspace();
    const refuse = (model: ChatModel): ChatModel => ({
      spec: model.spec,
      call: async () => {
        throw new ModelError("model authentication failed: check OPENAI_API_KEY", "auth");
      },
    });
    await expect(
      runReview({ workspace: dir, script: "normal.script.yaml", baseline, coder: CODER_RESULT, wrapModel: refuse }),
    ).rejects.toThrow(/authentication failed/);
  });
});

describe("review subgraph", () => {
  it("fans out from read_diff to the three checks and joins them in merge", () => {
    const ctx = context(ROOT, "normal.script.yaml", [], []);
    const drawable = buildReviewGraph(DEFINITION, GRAPH, ctx).getGraph();
    const edges = drawable.edges.map((edge) => `${edge.source}->${edge.target}`).sort();
    expect(edges).toEqual(
      [
        "__start__->read_diff",
        "read_diff->specs_breakdown",
        "read_diff->task_log",
        "read_diff->git_diff",
        "specs_breakdown->merge",
        "task_log->merge",
        "git_diff->merge",
        "merge->__end__",
      ].sort(),
    );
  });

  it("runs the three checks in one superstep, the two model calls at the same time", async () => {
    const { dir, baseline } = await changedWorkspace();
    let inFlight = 0;
    let maxInFlight = 0;
    let bothStarted!: () => void;
    const started = new Promise<void>((resolve) => (bothStarted = resolve));
    // Each call answers once the other has started too, however slow the machine; calls made one
    // after the other would wait for that in vain, 10 s, and the count below fails the test.
    const slow = (model: ChatModel): ChatModel => ({
      spec: model.spec,
      call: async (messages, options) => {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        if (inFlight === 2) bothStarted();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([started, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
        clearTimeout(timer);
        try {
          return await model.call(messages, options);
        } finally {
          inFlight--;
        }
      },
    });
    const ctx = context(dir, "normal.script.yaml", [], [], slow);
    const review = buildReviewGraph(DEFINITION, GRAPH, ctx);

    const stepOf: Record<string, number> = {};
    const stream = await review.stream(
      { task: TASK, subjects: [{ caller: "review", coder: CODER_RESULT }], baseline },
      { streamMode: "debug" },
    );
    for await (const event of stream) {
      const { type, step, payload } = event as { type: string; step: number; payload: { name?: string } };
      if (type === "task" && payload.name) stepOf[payload.name] = step;
    }

    expect(stepOf.specs_breakdown).toBe(stepOf.task_log);
    expect(stepOf.git_diff).toBe(stepOf.task_log);
    expect(stepOf.read_diff).toBeLessThan(stepOf.task_log!);
    expect(stepOf.merge).toBeGreaterThan(stepOf.task_log!);
    expect(maxInFlight).toBe(2);
  });
});
