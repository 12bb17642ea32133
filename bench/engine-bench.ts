/**
 * The engine's cost per step, against plain LangGraph in the same process, and a Coder turn's
 * later steps against its first:
 *
 * - `engine_step_function_nodes`: two `function` nodes in a loop (`a → b → a …`, until `a`'s
 *   visits reach a number), run with `runGraph` on the SQLite store, against a LangGraph `StateGraph` of the
 *   same shape (same state channels, two nodes, the same conditional loop) with a `MemorySaver`.
 * - `engine_step_agent_nodes`: the same loop of two `agent` nodes answered by the scripted model,
 *   against the same LangGraph shape whose nodes ask a trivial fake chat model with the
 *   conversation and append its answer.
 * - `coder_turn_last_vs_first`: one Coder turn of 20 shell steps each printing 1 MB (the history
 *   keeps head and tail, the whole output goes to an artifact), scripted; a step is the time from
 *   one `tool_result` event to the next (the model call, the tool call, their checkpoints). The
 *   anchor is the first steps, ours the last ones (three each, medians). Compression is set out
 *   of reach, so every step does the same work.
 *
 * Per-step figures are the marginal cost: (time of a long run − time of a short run) / extra
 * steps, medians over a few runs, so start-up (opening the store, compiling) is left out. Both
 * sides start from the same state (`firstInput`: the task, as the first message too), and
 * rounds alternate which side goes first, so a drift of the machine's speed within a round
 * weighs on each side in turn.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AIMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { END, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { firstInput } from "../src/engine/runner.js";
import { GraphState, loadGraph, runGraph, type RunEvent } from "../src/index.js";
import { FULL, median, pairedFigures, report, type PairedFigures } from "./lib.js";
import { trustFile } from "../src/trust/trust.js";
import { settingsOf } from "../src/config/environment-settings.js";

const dir = mkdtempSync(join(tmpdir(), "loopgraph-engine-bench-"));
/** The runs' environment: a config folder of the bench's own, where it trusts the graphs it writes (a function node's module runs only when trusted). */
const runEnv: NodeJS.ProcessEnv = { XDG_CONFIG_HOME: join(dir, "config") };
/** Coder turns measured. */
const RUNS = FULL ? 7 : 3;
/** Paired rounds of the per-step rows: the machine's speed drifts by more than the difference measured. */
const ROUNDS = FULL ? 15 : 5;
const SHORT = 10;
const LONG = FULL ? 400 : 200;

type Runner = (steps: number, label: string) => Promise<void>;

/**
 * Marginal ms per step of ours and of the anchor, and their ratio. Each round runs a short and a
 * long run of each side back to back, so a busy spell of the machine weighs on both sides of that
 * round's ratio; the figures are medians over the rounds (the ratio the median of the rounds' ratios).
 */
async function perStep(ours: Runner, anchor: Runner): Promise<PairedFigures> {
  await ours(SHORT, "warm-ours");
  await anchor(SHORT, "warm-anchor");
  const rounds: { ours: number; anchor: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const round = { ours: 0, anchor: 0 };
    const sides = [
      ["ours", ours],
      ["anchor", anchor],
    ] as const;
    for (const [side, run] of i % 2 === 0 ? sides : sides.toReversed()) {
      const took: Record<number, number> = {};
      for (const steps of [SHORT, LONG]) {
        const started = performance.now();
        await run(steps, `${side}-${steps}-${i}`);
        took[steps] = performance.now() - started;
      }
      round[side] = (took[LONG]! - took[SHORT]!) / (LONG - SHORT);
    }
    rounds.push(round);
  }
  return pairedFigures(rounds);
}

/** A graph file of two nodes `a` and `b` looping `a → b → a …` for `steps` supersteps in all (until `a`'s visits reach half of them). */
function loopGraph(name: string, nodes: (id: string) => string, steps: number, extra = ""): string {
  const file = join(dir, `${name}-${steps}.yaml`);
  writeFileSync(
    file,
    [
      "version: 1",
      `name: ${name}`,
      extra,
      "nodes:",
      `  a: { ${nodes("a")}, max_visits: ${steps} }`,
      `  b: { ${nodes("b")} }`,
      "edges:",
      "  - { from: START, to: a }",
      "  - { from: a, to: b }",
      "  - from: b",
      "    branches:",
      `      - { when: { path: visits.a, gte: ${Math.ceil(steps / 2)} }, to: END }`,
      "      - to: a",
      "limits:",
      `  max_steps: ${steps + 10}`,
      "",
    ].join("\n"),
  );
  return file;
}

/** The plain LangGraph anchor: the same state channels, two nodes, the loop bounded by `a`'s visits. */
function langGraphLoop(node: (id: string) => (state: typeof GraphState.State) => Promise<Partial<typeof GraphState.State>>, steps: number) {
  const limit = Math.ceil(steps / 2);
  return new StateGraph(GraphState)
    .addNode("a", node("a"))
    .addNode("b", node("b"))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addConditionalEdges("b", (state) => ((state.visits.a ?? 0) >= limit ? END : "a"), ["a", END])
    .compile({ checkpointer: new MemorySaver() });
}

async function runOurs(graph: string, steps: number, label: string, model?: string): Promise<void> {
  const outcome = await runGraph({
    graph,
    task: "bench",
    threadId: `t-${label}`,
    db: join(dir, `${label}-${Math.random()}.db`),
    workspace: dir,
    approval: "auto",
    settings: settingsOf(runEnv),
    ...(model ? { model } : {}),
  });
  if (outcome.status !== "finished") throw new Error(`the ${label} run ended ${outcome.status}: ${outcome.error ?? ""}`);
  const visits = (outcome.state.visits.a ?? 0) + (outcome.state.visits.b ?? 0);
  if (visits < steps - 1) throw new Error(`the ${label} run made ${visits} steps, not ${steps}`);
}

// Function nodes.
writeFileSync(join(dir, "step.mjs"), "export default (state, { node }) => ({ output: (state.visits[node] ?? 0) + 1 });\n");
const functionGraphs = new Map(
  [SHORT, LONG].map((steps) => [steps, loopGraph("fn-loop", () => "kind: function, module: step.mjs", steps)]),
);
for (const graph of functionGraphs.values()) trustFile(graph, runEnv);
const functionInput = firstInput(await loadGraph(functionGraphs.get(SHORT)!), "bench");
const functions = await perStep(
  (steps, label) => runOurs(functionGraphs.get(steps)!, steps, `fn-${label}`),
  async (steps, label) => {
    const graph = langGraphLoop(
      (id) => async (state) => ({ outputs: { [id]: (state.visits[id] ?? 0) + 1 }, visits: { [id]: (state.visits[id] ?? 0) + 1 } }),
      steps,
    );
    await graph.invoke(functionInput, { configurable: { thread_id: label }, recursionLimit: steps + 10 });
  },
);
report({
  name: "engine_step_function_nodes",
  ...functions,
  unit: "ms",
  maxRatio: 1.5,
  note: `per step over ${LONG} steps, ratio: median of ${ROUNDS} paired rounds; anchor: LangGraph StateGraph + MemorySaver, same shape and first state`,
});

// Agent nodes, the scripted model against a fake chat model.
mkdirSync(join(dir, "prompts"), { recursive: true });
writeFileSync(join(dir, "prompts", "agent.md"), "You are a step of a benchmark loop. Answer in one short sentence.\n");
const agentGraphs = new Map(
  [SHORT, LONG].map((steps) => [steps, loopGraph("agent-loop", () => "kind: agent, prompt: prompts/agent.md", steps)]),
);
const scripts = new Map(
  [SHORT, LONG].map((steps) => {
    const file = join(dir, `agent-${steps}.script.yaml`);
    const lines = ["responses:"];
    for (let i = 0; i < steps; i++)
      lines.push(`  - { node: ${i % 2 ? "b" : "a"}, content: "Step ${i}: the loop goes on with one more short answer." }`);
    writeFileSync(file, `${lines.join("\n")}\n`);
    return [steps, `scripted:${file}`];
  }),
);
const agentInput = firstInput(await loadGraph(agentGraphs.get(SHORT)!), "bench");
const agents = await perStep(
  (steps, label) => runOurs(agentGraphs.get(steps)!, steps, `agent-${label}`, scripts.get(steps)),
  async (steps, label) => {
    const answers = Array.from({ length: steps }, (_, i) => `Step ${i}: the loop goes on with one more short answer.`);
    const model = new FakeListChatModel({ responses: answers });
    const graph = langGraphLoop(
      (id) => async (state) => {
        const prompt: BaseMessage[] = [
          new SystemMessage("You are a step of a benchmark loop. Answer in one short sentence."),
          ...state.messages,
        ];
        const answer = await model.invoke(prompt);
        const visits = (state.visits[id] ?? 0) + 1;
        return {
          messages: [new AIMessage({ content: answer.content, id: `${id}-${visits}`, name: id })],
          outputs: { [id]: answer.content },
          visits: { [id]: visits },
        };
      },
      steps,
    );
    await graph.invoke(agentInput, { configurable: { thread_id: label }, recursionLimit: steps + 10 });
  },
);
report({
  name: "engine_step_agent_nodes",
  ...agents,
  unit: "ms",
  maxRatio: 1.5,
  note: `per step over ${LONG} steps, ratio: median of ${ROUNDS} paired rounds; anchor: LangGraph + MemorySaver, same first state, nodes ask FakeListChatModel`,
});

// A Coder turn of 20 shell steps, 1 MB of output each.
const STEPS = 20;
const coderDir = join(dir, "coder");
mkdirSync(join(coderDir, "ws"), { recursive: true });
writeFileSync(
  join(coderDir, "coder.yaml"),
  [
    "version: 1",
    "name: coder-bench",
    "nodes:",
    "  coder: { kind: coder, max_steps: 30, compression: { budget_tokens: 100000000 } }",
    "edges:",
    "  - { from: START, to: coder }",
    "  - { from: coder, to: END }",
    "",
  ].join("\n"),
);
// About 1 MB of a build log whose lines differ (numbers, paths), as real output does.
const megabyte = `awk 'BEGIN { for (i = 1; i <= 17000; i++) printf "line %d: src/module-%d.ts checked, %d errors, took %d ms\\n", i, i * 7, i % 3, i % 97 }'`;
const coderScript = ["responses:"];
// Each command differs (its step number), so the loop detector lets them all run.
for (let i = 0; i < STEPS; i++)
  coderScript.push(
    "  - node: coder",
    "    tool_calls:",
    `      - { name: shell, args: { command: ${JSON.stringify(`${megabyte} && echo step ${i + 1}`)} } }`,
  );
coderScript.push('  - { node: coder, content: "Done." }');
writeFileSync(join(coderDir, "coder.script.yaml"), `${coderScript.join("\n")}\n`);

interface Turn {
  /** Each step: from one `tool_result` to the next. */
  steps: number[];
  /** The model side of each step: from a `tool_result` to the next `tool_call` (the history's checkpoint, the model call). */
  modelSides: number[];
}

async function coderTurn(label: string): Promise<Turn> {
  const marks: number[] = [];
  const calls: number[] = [];
  const outcome = await runGraph({
    graph: join(coderDir, "coder.yaml"),
    task: "run the build 20 times",
    threadId: `coder-${label}`,
    db: join(coderDir, `${label}.db`),
    workspace: join(coderDir, "ws"),
    approval: "auto",
    noSandbox: true,
    model: `scripted:${join(coderDir, "coder.script.yaml")}`,
    settings: settingsOf({ PATH: process.env.PATH ?? "" }),
    onEvent: (event: RunEvent) => {
      if (event.type === "tool_result") marks.push(performance.now());
      if (event.type === "tool_call") calls.push(performance.now());
    },
  });
  if (outcome.status !== "finished") throw new Error(`the Coder turn ended ${outcome.status}: ${outcome.error ?? ""}`);
  if (marks.length !== STEPS) throw new Error(`the Coder turn made ${marks.length} tool calls, not ${STEPS}`);
  return { steps: marks.slice(1).map((mark, i) => mark - marks[i]!), modelSides: calls.slice(1).map((call, i) => call - marks[i]!) };
}

const turns: Turn[] = [];
for (let i = 0; i < RUNS; i++) turns.push(await coderTurn(`run-${i}`));
// Each a median over the turns of the median of three steps: one step alone is at the mercy of a busy machine.
const firstAndLast = (pick: (turn: Turn) => number[]) => ({
  first: median(turns.map((turn) => median(pick(turn).slice(0, 3)))),
  last: median(turns.map((turn) => median(pick(turn).slice(-3)))),
});
const { first: firstSteps, last: lastSteps } = firstAndLast((turn) => turn.steps);
const modelSide = firstAndLast((turn) => turn.modelSides);
report({
  name: "coder_turn_last_vs_first",
  ours: lastSteps,
  anchor: firstSteps,
  unit: "ms",
  maxRatio: 1.5,
  note: `${STEPS} shell steps of 1 MB output; ours: the last 3 steps, anchor: the first 3 (medians over ${RUNS} turns); the model side of a step (tool_result to the next tool_call) first ${modelSide.first.toFixed(0)} ms, last ${modelSide.last.toFixed(0)} ms`,
});

rmSync(dir, { recursive: true, force: true });
