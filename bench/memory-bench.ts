/**
 * `run_peak_rss_agent_nodes`: the peak RSS of a `loopgraph run` of a graph of two `agent` nodes
 * for 10 steps (`a → b → a …`, the scripted model answering) on the SQLite store, against a
 * process that runs the same shape in plain LangGraph with the stock `SqliteSaver` (its nodes ask
 * a fake chat model; this file run with `--side anchor`). Each side is a process of its own, so
 * the figure is what a run loads and keeps, start-up included; the sides alternate which goes
 * first, round by round. The note adds the same run through the library (`runGraph` of
 * dist/src/index.js in a process of its own, `--side library`), whose ~1,000 modules load one by one.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI, interleavedFigures, measureNode, median, report } from "./lib.js";

const STEPS = 10;
const ROUNDS = 5;
const ANSWER = "Step: the loop goes on with one more short answer.";
const PROMPT = "You are a step of a benchmark loop. Answer in one short sentence.";

const side = process.argv[process.argv.indexOf("--side") + 1];
if (process.argv.includes("--side")) {
  const dir = process.argv[process.argv.indexOf("--dir") + 1]!;
  await (side === "library" ? runLibrary(dir) : runAnchor(dir));
} else {
  await compare();
}

/** The graph, prompt and script both sides' processes read. */
function prepare(dir: string): void {
  mkdirSync(join(dir, "prompts"), { recursive: true });
  writeFileSync(join(dir, "prompts", "agent.md"), `${PROMPT}\n`);
  writeFileSync(
    join(dir, "graph.yaml"),
    [
      "version: 1",
      "name: memory-bench",
      "nodes:",
      `  a: { kind: agent, prompt: prompts/agent.md, max_visits: ${STEPS} }`,
      "  b: { kind: agent, prompt: prompts/agent.md }",
      "edges:",
      "  - { from: START, to: a }",
      "  - { from: a, to: b }",
      "  - from: b",
      "    branches:",
      `      - { when: { path: visits.a, gte: ${STEPS / 2} }, to: END }`,
      "      - to: a",
      "",
    ].join("\n"),
  );
  const lines = ["responses:"];
  for (let i = 0; i < STEPS; i++) lines.push(`  - { node: ${i % 2 ? "b" : "a"}, content: ${JSON.stringify(ANSWER)} }`);
  writeFileSync(join(dir, "script.yaml"), `${lines.join("\n")}\n`);
}

async function runLibrary(dir: string): Promise<void> {
  const { runGraph } = await import("../src/index.js");
  const { settingsOf } = await import("../src/config/environment-settings.js");
  const outcome = await runGraph({
    graph: join(dir, "graph.yaml"),
    task: "bench",
    threadId: "memory",
    db: join(dir, `ours-${process.pid}.db`),
    workspace: dir,
    approval: "auto",
    model: `scripted:${join(dir, "script.yaml")}`,
    settings: settingsOf({ XDG_CONFIG_HOME: join(dir, "config"), PATH: process.env.PATH ?? "" }),
  });
  if (outcome.status !== "finished") throw new Error(`the run ended ${outcome.status}: ${outcome.error ?? ""}`);
}

async function runAnchor(dir: string): Promise<void> {
  const { AIMessage, HumanMessage, SystemMessage } = await import("@langchain/core/messages");
  const { FakeListChatModel } = await import("@langchain/core/utils/testing");
  const { Annotation, END, MessagesAnnotation, START, StateGraph } = await import("@langchain/langgraph");
  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const State = Annotation.Root({
    ...MessagesAnnotation.spec,
    visits: Annotation<Record<string, number>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  });
  const model = new FakeListChatModel({ responses: Array.from({ length: STEPS }, () => ANSWER) });
  const node = (id: string) => async (state: typeof State.State) => {
    const answer = await model.invoke([new SystemMessage(PROMPT), ...state.messages]);
    return { messages: [new AIMessage({ content: answer.content, name: id })], visits: { [id]: (state.visits[id] ?? 0) + 1 } };
  };
  const saver = SqliteSaver.fromConnString(join(dir, `anchor-${process.pid}.db`));
  const graph = new StateGraph(State)
    .addNode("a", node("a"))
    .addNode("b", node("b"))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addConditionalEdges("b", (state) => ((state.visits.a ?? 0) >= STEPS / 2 ? END : "a"), ["a", END])
    .compile({ checkpointer: saver });
  await graph.invoke({ messages: [new HumanMessage("bench")] }, { configurable: { thread_id: "memory" }, recursionLimit: STEPS + 10 });
}

async function compare(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "loopgraph-memory-bench-"));
  try {
    prepare(dir);
    const self = fileURLToPath(import.meta.url);
    const side = (which: string) => measureNode([self, "--side", which, "--dir", dir]).rssMb;
    const run = (round: number) =>
      measureNode(
        [
          CLI,
          "run",
          join(dir, "graph.yaml"),
          "--task",
          "bench",
          "--model",
          `scripted:${join(dir, "script.yaml")}`,
          "--db",
          join(dir, `cli-${round}.db`),
          "--approval",
          "auto",
          "--no-sandbox",
        ],
        { cwd: dir, env: { ...process.env, XDG_CONFIG_HOME: join(dir, "config") } },
      ).rssMb;
    const library: number[] = [];
    let round = 0;
    const figures = await interleavedFigures(
      ROUNDS,
      () => {
        // The library's run beside each of ours: for the row's note.
        library.push(side("library"));
        return run(round++);
      },
      () => side("anchor"),
    );
    report({
      name: "run_peak_rss_agent_nodes",
      ...figures,
      unit: "MB",
      maxRatio: 1.3,
      note: `loopgraph run of two agent nodes for ${STEPS} steps on SQLite; anchor: plain LangGraph + stock SqliteSaver, same shape; median of ${ROUNDS} pairs; the same run through the library: ${median(library).toFixed(0)} MB`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
