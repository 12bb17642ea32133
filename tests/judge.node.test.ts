import { join } from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { createModelCache, type RunContext } from "../src/runtime/context.js";
import type { RunEvent } from "../src/runtime/events.js";
import { ModelError } from "../src/errors.js";
import type { GraphDefinition } from "../src/format/types.js";
import { formatJudgeInput, readJudgeInput } from "../src/nodes/judge/input.js";
import type { JudgeResult } from "../src/state/looper.js";
import type { ChatModel } from "../src/models/types.js";
import { createJudgeNode } from "../src/nodes/judge/node.js";
import type { NodeUpdate } from "../src/runtime/node-function.js";
import type { GraphStateValue } from "../src/state/graph-state.js";
import { ROOT } from "./helpers/cli.js";
import { coderFailure, coderSuccess, judgeState, review, TASK, type JudgeStateParts } from "./fixtures/judge/factories.js";
import type { JudgeNodeDefinition } from "../src/nodes/judge/schema.js";

const FIXTURES = join(ROOT, "tests/fixtures/judge");
const scripted = (file: string): string => `scripted:${join(FIXTURES, file)}`;
// The node reads only `model` from the graph, and the definitions below name their own.
const GRAPH = {} as GraphDefinition;

function judgeDefinition(model: string): JudgeNodeDefinition {
  return {
    kind: "judge",
    id: "judge",
    model,
    coder: "coder",
    review: "review",
    promptFile: join(ROOT, "prompts/judge.md"),
    comparePromptFile: join(ROOT, "prompts/judge-compare.md"),
  };
}

interface Harness {
  ctx: RunContext;
  events: RunEvent[];
  /** The messages of every model call, in order. */
  calls: BaseMessage[][];
}

/** A run context whose models are the real ones (scripted), or `model` when given; every call is recorded. */
function harness(model?: ChatModel, signal = new AbortController().signal): Harness {
  const events: RunEvent[] = [];
  const calls: BaseMessage[][] = [];
  const models = createModelCache(ROOT, {});
  const recorded = (inner: ChatModel): ChatModel => ({
    spec: inner.spec,
    call: (messages, options) => {
      calls.push(messages);
      return inner.call(messages, options);
    },
  });
  const ctx: RunContext = {
    threadId: "judge-test",
    workspace: ROOT,
    env: {},
    settings: { approval: "deny" },
    userRules: [],
    readInbox: async () => [],
    emit: (event) => events.push(event),
    model: (spec) => recorded(model ?? models(spec)),
    signal,
  };
  return { ctx, events, calls };
}

async function runJudge(
  script: string,
  parts: JudgeStateParts,
  h = harness(),
): Promise<{ update: NodeUpdate; result: JudgeResult; state: GraphStateValue }> {
  const state = judgeState(parts);
  const update = await createJudgeNode(judgeDefinition(script), GRAPH, h.ctx)(state, {});
  return { update, result: update.outputs!.judge as JudgeResult, state };
}

/** What the round just judged did, as a next task tells it (coderSuccess, round 2). */
const DONE =
  "## Done so far\nThe Coder finished in round 2.\nFiles changed: index.html, styles/main.css\nIts summary: Inlined the critical CSS and lazy-loaded the hero image; npm test passes.";
const lastText = (messages: BaseMessage[]): string => String(messages.at(-1)!.content);

describe("judge node", () => {
  it("drains every pending message in one go: counted, and all carried into nextTask even when the model forgets one", async () => {
    const h = harness();
    const spec = scripted("continue-partial.script.yaml");
    const { update, result } = await runJudge(
      spec,
      { coder: coderSuccess(), review: review("normal"), pending: ["add login", "add sign-up"] },
      h,
    );

    expect(result).toEqual({
      decision: "continue",
      nextTask: `Now ADD   LOGIN: a form at /login.\n\n## Original task\n${TASK}\n\n${DONE}\n\n## Queued by the user\n- add login\n- add sign-up`,
      consumedPending: 2,
      source: "rule",
      notes: ["guard: the model's next task left out 1 pending message, listed verbatim after it"],
    });
    // Usage, scripted consumption and the message log, as every LLM node writes them.
    expect(update.scripted).toEqual({ [spec]: { judge: 1 } });
    expect(update.usage!.judge!.inputTokens).toBeGreaterThan(0);
    expect(update.usage!.judge!.outputTokens).toBeGreaterThan(0);
    expect(update.messages).toHaveLength(1);
    const message = update.messages![0]!;
    expect(message.name).toBe("judge");
    expect(message.id).toBe("judge-decision-1");
    expect(message.content).toBe(
      "Judge: continue (decided by a rule over the model; took 2 pending messages)\n" +
        `Next task:\nNow ADD   LOGIN: a form at /login.\n\n## Original task\n${TASK}\n\n${DONE}\n\n## Queued by the user\n- add login\n- add sign-up\n` +
        "Notes:\n- guard: the model's next task left out 1 pending message, listed verbatim after it",
    );
    expect(h.events).toEqual([{ type: "message", threadId: "judge-test", node: "judge", content: message.content }]);
  });

  it("sends the system prompt with the answer format, then the whole input as one text", async () => {
    const h = harness();
    const { state } = await runJudge(scripted("terminate.script.yaml"), { coder: coderSuccess(), review: review("normal") }, h);
    const [system, human] = h.calls[0]!;
    expect(system!.getType()).toBe("system");
    expect(String(system!.content)).toContain("You are the Judge of loopgraph");
    expect(String(system!.content)).toContain('{"decision": "continue", "nextTask":');
    expect(human!.getType()).toBe("human");
    expect(human!.content).toBe(formatJudgeInput(readJudgeInput(state, { judge: "judge", coder: "coder", review: "review" })));
    expect(String(human!.content)).toContain(TASK);
  });

  it("a later round: the model reads the round's own task and the loop's original task, not the context a previous Judge appended", async () => {
    const h = harness();
    const roundTask = `add login\n\n## Original task\n${TASK}\n\n${DONE}\n\n## Review comments to address (the review rated the work warning)\n- specs_breakdown: alt text missing`;
    await runJudge(scripted("terminate.script.yaml"), { coder: coderSuccess(), review: review("normal"), task: roundTask, round: 3 }, h);
    const human = String(h.calls[0]![1]!.content);
    expect(human.startsWith(`## Task\nadd login\n\n## Original task (the loop's first round)\n${TASK}\n\n## Round\n3/5`)).toBe(true);
    expect(human).not.toContain("alt text missing");
  });

  it("continues with the model's answer when no rule objects", async () => {
    const { result } = await runJudge(scripted("continue.script.yaml"), { coder: coderFailure("step_limit"), review: review("critical") });
    expect(result).toEqual({
      decision: "continue",
      nextTask:
        `Polish the CSS of the landing page.\n\n## Original task\n${TASK}\n\n` +
        "## Done so far\nThe Coder failed in round 2 (step_limit: it went wrong).\nFiles changed: index.html, styles/main.css\nIts summary: I could not finish.",
      consumedPending: 0,
      source: "model",
      notes: [],
    });
  });

  it("critical review: the model's terminate is overridden to continue with the task and the review's comments", async () => {
    const { result } = await runJudge(scripted("terminate.script.yaml"), {
      coder: coderSuccess(),
      review: review("critical", ["the hero image still blocks rendering"]),
    });
    expect(result).toMatchObject({
      decision: "continue",
      nextTask: `${TASK}\n\n${DONE}\n\n## Review comments to address (the review rated the work critical)\n- the hero image still blocks rendering`,
      source: "rule",
    });
    expect(result.notes).toEqual([
      'guard: the review rated the work critical, so the loop must continue; the model said terminate ("the work looks complete")',
    ]);
  });

  it("review passed, nothing pending: the model's continue is overridden to terminate (done)", async () => {
    const { result } = await runJudge(scripted("continue.script.yaml"), { coder: coderSuccess(), review: review("normal") });
    expect(result).toMatchObject({ decision: "terminate", reason: "done: the review passed (normal)", source: "rule", consumedPending: 0 });
  });

  it("Coder failed: the model's terminate stands", async () => {
    const { result } = await runJudge(scripted("terminate.script.yaml"), { coder: coderFailure("model_bad_request") });
    expect(result).toEqual({ decision: "terminate", reason: "the work looks complete", consumedPending: 0, source: "model", notes: [] });
  });

  it("an invalid answer is retried once with the validation error; a valid repaired answer (fenced, extra keys) is used", async () => {
    const h = harness();
    const { result, update } = await runJudge(scripted("repaired.script.yaml"), { coder: coderFailure("step_limit") }, h);
    expect(result).toMatchObject({ decision: "terminate", reason: "the page is done", source: "model" });
    expect(result.notes).toHaveLength(1);
    expect(result.notes[0]).toMatch(
      /^the model's answer was invalid \(.*reason.*\): "\{\\"decision\\": \\"terminate\\"\}"; asked once more with the validation error$/,
    );
    expect(h.calls).toHaveLength(2);
    expect(lastText(h.calls[1]!)).toMatch(/^Your answer could not be used: .*reason.*Answer again with the JSON only\.$/);
    expect(Object.values(update.scripted!)).toEqual([{ judge: 2 }]);
  });

  it("invalid twice: repair retry, then the rule-based fallback, with notes on both answers", async () => {
    const h = harness();
    const { result, update } = await runJudge(
      scripted("invalid-twice.script.yaml"),
      { coder: coderSuccess(), review: review("normal"), pending: ["add login"] },
      h,
    );
    expect(h.calls).toHaveLength(2);
    expect(result).toMatchObject({
      decision: "continue",
      nextTask: `add login\n\n## Original task\n${TASK}\n\n${DONE}`,
      consumedPending: 1,
      source: "fallback",
    });
    expect(result.notes).toEqual([
      `the model's answer was invalid (the answer is not JSON): "I think another round would help."; asked once more with the validation error`,
      expect.stringMatching(
        /^the repeated answer was invalid too \(.*nextTask must not be empty.*\): "\{\\"decision\\": \\"continue\\", \\"nextTask\\": \\"\\"\}"$/,
      ),
      "fallback: the Coder succeeded and 1 pending message waits",
    ]);
    expect(Object.values(update.scripted!)).toEqual([{ judge: 2 }]);
    expect(String(update.messages![0]!.content)).toContain("Judge: continue (decided by the rules (fallback); took 1 pending message)");
  });

  it("invalid twice after a failed Coder: the fallback retries a fixable failure", async () => {
    const { result } = await runJudge(scripted("invalid-twice.script.yaml"), { coder: coderFailure("model_timeout", "no answer in 60 s") });
    expect(result.source).toBe("fallback");
    expect(result.decision).toBe("continue");
    expect((result as { nextTask: string }).nextTask).toContain("The previous round failed (model_timeout: no answer in 60 s).");
    expect(result.notes.at(-1)).toBe("fallback: the Coder failed (model_timeout), which a new round may fix");
  });

  it("a model error does not crash the run: fallback decision, with a note (here: an unfixable Coder failure → terminate)", async () => {
    const { result, update } = await runJudge(scripted("no-judge-response.script.yaml"), {
      coder: coderFailure("model_exhausted", "nothing left"),
    });
    expect(result).toMatchObject({
      decision: "terminate",
      reason: "the Coder failed (model_exhausted: nothing left), which another round cannot fix",
      source: "fallback",
    });
    expect(result.notes).toEqual([
      expect.stringMatching(/^the model call failed \(exhausted: scripted model exhausted: no response left for node "judge"/),
      "fallback: the Coder failed with model_exhausted, which a retry cannot fix",
    ]);
    expect(update.scripted).toBeUndefined();
  });

  it("a model error during the repair retry: the notes tell both steps, the consumed answer stays consumed", async () => {
    const { result, update } = await runJudge(scripted("invalid-then-exhausted.script.yaml"), {
      coder: coderSuccess(),
      review: review("critical", ["broken"]),
    });
    expect(result).toMatchObject({ decision: "continue", source: "fallback" });
    expect(result.notes).toHaveLength(3);
    expect(result.notes[0]).toMatch(/^the model's answer was invalid .*"\{\\"verdict\\": \\"ship it\\"\}"; asked once more/);
    expect(result.notes[1]).toMatch(/^the model call failed \(exhausted: /);
    expect(result.notes[2]).toBe("fallback: the review rated the work critical");
    expect(Object.values(update.scripted!)).toEqual([{ judge: 1 }]);
  });

  it("an auth error stops the run", async () => {
    const unauthorised: ChatModel = {
      spec: "openai:gpt-test",
      call: async () => {
        throw new ModelError("authentication failed: check OPENAI_API_KEY", "auth");
      },
    };
    const node = createJudgeNode(judgeDefinition("openai:gpt-test"), GRAPH, harness(unauthorised).ctx);
    await expect(node(judgeState({ coder: coderSuccess(), review: review("normal") }), {})).rejects.toThrow("authentication failed");
  });

  it("a cancelled run is not turned into a decision", async () => {
    const controller = new AbortController();
    controller.abort(new Error("interrupted by the user"));
    const node = createJudgeNode(judgeDefinition(scripted("terminate.script.yaml")), GRAPH, harness(undefined, controller.signal).ctx);
    await expect(node(judgeState({ coder: coderSuccess(), review: review("normal") }), {})).rejects.toThrow("interrupted by the user");
  });

  it.each([
    ["counts", { judge: 1 }],
    ["a list of indices, as a thread stored before the counts holds it", [0]],
  ])("adds to the node's usage and to the scripted responses already consumed in the run (stored as %s)", async (_form, consumed) => {
    const spec = scripted("repaired.script.yaml");
    const state = { ...judgeState({ coder: coderSuccess(), review: review("normal") }), visits: { judge: 1 } } as GraphStateValue;
    // Response 0 was used by an earlier visit: this one starts at response 1.
    state.scripted = { [spec]: consumed };
    state.usage = { judge: { inputTokens: 1000, outputTokens: 100 } };
    const update = await createJudgeNode(judgeDefinition(spec), GRAPH, harness().ctx)(state, {});
    expect(update.outputs!.judge).toMatchObject({ decision: "terminate", source: "model", notes: [] });
    expect(Object.values(update.scripted!)).toEqual([{ judge: 2 }]);
    expect(update.usage!.judge!.inputTokens).toBeGreaterThan(1000);
    expect(update.usage!.judge!.outputTokens).toBeGreaterThan(100);
    expect(update.messages![0]!.id).toBe("judge-decision-2");
  });
});
