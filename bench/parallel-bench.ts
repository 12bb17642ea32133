/**
 * A parallel superstep costs one node's time, not k nodes' (docs/graph-format.md, "Parallel
 * branches"):
 *
 * - `parallel_superstep_k4`: a graph `START → [a, b, c, d] → done` of four `agent` nodes answered
 *   by the scripted model after a 1 s delay each, then a `function` node, run with `runGraph` on
 *   the SQLite store; against plain LangGraph doing the same (a `StateGraph` of the same shape
 *   whose four nodes each wait 1 s, with a `MemorySaver`). Run one after the other, the four
 *   answers would take 4 s: the target is 1.3× the anchor's time. The note gives our run of one
 *   such node alone, for the start-up both runs share (opening the store, compiling).
 *
 * Medians over a few rounds; each round runs both sides back to back, alternating which goes first.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { END, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { settingsOf } from "../src/config/environment-settings.js";
import { GraphState, runGraph } from "../src/index.js";
import { trustFile } from "../src/trust/trust.js";
import { FULL, median, report } from "./lib.js";

const BRANCHES = ["a", "b", "c", "d"];
const LATENCY_MS = 1000;
const ROUNDS = FULL ? 7 : 3;

const dir = mkdtempSync(join(tmpdir(), "loopgraph-parallel-bench-"));
/** The runs' environment: a config folder of the bench's own, where it trusts the graphs it writes. */
const runEnv: NodeJS.ProcessEnv = { XDG_CONFIG_HOME: join(dir, "config") };

/** A graph of `branches` agent nodes run together from START, joined by a function node. */
function parallelGraph(name: string, branches: readonly string[]): string {
  writeFileSync(join(dir, "answer.md"), "Answer in one word.\n");
  writeFileSync(join(dir, "done.mjs"), "export default () => ({ output: 'done' });\n");
  const script = join(dir, `${name}.script.yaml`);
  writeFileSync(
    script,
    `responses:\n${branches.map((id) => `  - node: ${id}\n    delay_ms: ${LATENCY_MS}\n    content: ${id} answered\n`).join("")}`,
  );
  const joinEdge = branches.length > 1 ? `  - { from: [${branches.join(", ")}], to: done }` : `  - { from: ${branches[0]}, to: done }`;
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      "version: 1",
      `name: ${name}`,
      `model: scripted:${script}`,
      "nodes:",
      ...branches.map((id) => `  ${id}: { kind: agent, prompt: answer.md, history: false }`),
      "  done: { kind: function, module: done.mjs }",
      "edges:",
      `  - { from: START, to: [${branches.join(", ")}] }`,
      joinEdge,
      "  - { from: done, to: END }",
      "",
    ].join("\n"),
  );
  trustFile(file, runEnv);
  return file;
}

async function timeOurs(graph: string, label: string): Promise<number> {
  const started = performance.now();
  const outcome = await runGraph({
    graph,
    task: "bench",
    threadId: `t-${label}`,
    db: join(dir, `${label}.db`),
    workspace: dir,
    approval: "auto",
    settings: settingsOf(runEnv),
  });
  const elapsed = performance.now() - started;
  if (outcome.status !== "finished") throw new Error(`the ${label} run ended ${outcome.status}: ${outcome.error ?? ""}`);
  return elapsed;
}

/** Plain LangGraph: the same shape, each branch waiting LATENCY_MS. */
async function timeAnchor(label: string): Promise<number> {
  const wait = (id: string) => async () => {
    await new Promise((resolve) => setTimeout(resolve, LATENCY_MS));
    return { outputs: { [id]: `${id} answered` } };
  };
  let builder = new StateGraph(GraphState) as unknown as {
    addNode(id: string, fn: () => Promise<unknown>): typeof builder;
    addEdge(from: string | string[], to: string): typeof builder;
    compile(options: { checkpointer: MemorySaver }): { invoke(input: unknown, config: unknown): Promise<unknown> };
  };
  for (const id of BRANCHES) builder = builder.addNode(id, wait(id));
  builder = builder.addNode("done", async () => ({ outputs: { done: "done" } }));
  for (const id of BRANCHES) builder = builder.addEdge(START, id);
  builder = builder.addEdge(BRANCHES, "done").addEdge("done", END);
  const graph = builder.compile({ checkpointer: new MemorySaver() });
  const started = performance.now();
  await graph.invoke({ task: "bench" }, { configurable: { thread_id: label } });
  return performance.now() - started;
}

try {
  const four = parallelGraph("parallel-k4", BRANCHES);
  const one = parallelGraph("parallel-k1", ["a"]);
  await timeOurs(four, "warm");
  const ours: number[] = [];
  const anchor: number[] = [];
  const alone: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sides = [
      async () => ours.push(await timeOurs(four, `k4-${round}`)),
      async () => anchor.push(await timeAnchor(`anchor-${round}`)),
    ];
    for (const side of round % 2 === 0 ? sides : sides.reverse()) await side();
    alone.push(await timeOurs(one, `k1-${round}`));
  }
  report({
    name: "parallel_superstep_k4",
    ours: median(ours),
    anchor: median(anchor),
    unit: "ms",
    maxRatio: 1.3,
    note: `4 agent nodes answering after ${LATENCY_MS} ms each, in one superstep; one such node alone: ${median(alone).toFixed(0)} ms; one after the other they would take ${BRANCHES.length * LATENCY_MS} ms`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
