import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { cleanEnv, hasStackTrace, parseEvents, runCli, trustIn } from "./helpers/cli.js";
import { finalState, resume, run, startRun } from "./helpers/e2e.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

/**
 * The Coder's `task` tool through the CLI: subagents of the default type and of types declared in
 * a graph and in both config files, their results shaped by an output schema (complete_task),
 * kill -9 in a subagent's middle, a recorded replay, and the limits a subagent keeps (ask mode,
 * its Coder's tools).
 */

type Body = {
  messages: { role: string; content: unknown }[];
  tools?: { function: { name: string; parameters: Record<string, unknown> } }[];
};

async function mockServer(): Promise<MockOpenAIServer> {
  const server = await startMockOpenAI();
  onCleanup(() => server.close());
  return server;
}

const bodies = (server: MockOpenAIServer): Body[] => server.requests.map((request) => request.body as Body);
const systemText = (body: Body): string => JSON.stringify(body.messages[0]!.content);
const offered = (body: Body): string[] => body.tools!.map((tool) => tool.function.name);
/** The last tool result the model was sent. */
const lastToolText = (body: Body): string => String(body.messages.filter((message) => message.role === "tool").at(-1)!.content);

/** A graph of one coder node, with `lines` added to its definition. */
function coderGraph(ws: Workspace, name: string, lines: string[]): string {
  const graph = join(ws.dir, `${name}.yaml`);
  writeFileSync(
    graph,
    [
      "version: 1",
      `name: ${name}`,
      "nodes:",
      "  coder:",
      "    kind: coder",
      ...lines.map((line) => `    ${line}`),
      "edges:",
      "  - { from: START, to: coder }",
      "",
    ].join("\n"),
  );
  return graph;
}

describe("subagents through the CLI", () => {
  it("a task call runs a read-only subagent that answers with complete_task; kill -9 in its middle, then resume: it goes on from its own last tool step; a recorded replay follows it", async () => {
    const ws = tempWorkspace({ git: true, files: { "src/config.ts": "export const port = 8080;\n" } });
    const script = join(ws.root, "subagent.script.yaml");
    const result = { summary: "The port is 8080.", findings: ["src/config.ts:1: port = 8080"], files_touched: ["src/config.ts"] };
    writeFileSync(
      script,
      stringify({
        responses: [
          {
            node: "coder",
            tool_calls: [{ name: "task", args: { description: "find the port", prompt: "Where is the port configured?" } }],
          },
          { node: "coder-task", tool_calls: [{ name: "grep", args: { pattern: "port" } }] },
          { node: "coder-task", wait_for: "gate", tool_calls: [{ name: "read_file", args: { path: "src/config.ts" } }] },
          { node: "coder-task", tool_calls: [{ name: "write_file", args: { path: "x.txt", contents: "no" } }] },
          // An answer without complete_task is not one: the subagent is told so, once.
          { node: "coder-task", content: "The port is 8080." },
          { node: "coder-task", tool_calls: [{ name: "complete_task", args: { summary: "The port is 8080." } }] },
          { node: "coder-task", tool_calls: [{ name: "complete_task", args: result }] },
          { node: "coder", content: "The port is 8080." },
        ],
      }),
    );
    const spec = { graph: "coder", task: "do the task", thread: "sub", script, approval: "auto" as const };
    const running = startRun(ws, spec);
    await running.waitForEvent("tool_result", (line) => line.includes('"grep"'));
    // The grep step's checkpoint is written before the subagent's next model call, which waits for the gate.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await running.kill("SIGKILL");
    writeFileSync(join(ws.root, "gate"), "");
    const resumed = await resume(ws, "sub", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseEvents(resumed.stdout);
    // The task step runs again, and its subagent goes on: its grep is not run again; its read and its refused write are its own, under node coder-task.
    expect(events.filter((e) => e.type === "tool_call").map((e) => [e.node, e.name])).toEqual([
      ["coder", "task"],
      ["coder-task", "read_file"],
      ["coder-task", "write_file"],
      ["coder-task", "complete_task"],
      ["coder-task", "complete_task"],
    ]);
    const results = events.filter((e) => e.type === "tool_result");
    expect(results.find((e) => e.name === "write_file")).toMatchObject({ ok: false, notRun: "tool_not_found" });
    // A result that does not fit the schema goes back to the subagent, to try again.
    expect(results.find((e) => e.name === "complete_task")).toMatchObject({ ok: false, notRun: "invalid_arguments" });
    expect(existsSync(join(ws.dir, "x.txt"))).toBe(false);
    const task = results.find((e) => e.name === "task") as { ok: boolean; result: string };
    expect(task.ok).toBe(true);
    expect(task.result).toBe(
      `Subagent "find the port": done in 6 steps.\n\n${JSON.stringify(result, null, 2)}\n\nFiles it read: src/config.ts`,
    );
    const { outputs } = await finalState<{ outputs: { coder: { summary: string } } }>(ws.db, "sub");
    expect(outputs.coder.summary).toBe("The port is 8080.");
    // `inspect --nested`: the Coder's steps under its node's step, the subagent's under the task step, its steps before the kill included.
    const inspected = await runCli(["inspect", "sub", "--nested", "--db", ws.db], { env: cleanEnv({ NO_COLOR: "1" }) });
    expect(inspected.code, inspected.stderr).toBe(0);
    const nestedLines = inspected.stdout
      .split("\n")
      .filter((line) => /^ +· /.test(line))
      .map((line) => line.replace(/ +[0-9a-f-]{36}$/, "").replace(/ +\d+→\d+$/, ""));
    expect(nestedLines).toEqual([
      `    · model  simple task, 60% sure · do the task · → task {"description":"find the port","prompt":"Where is the …`,
      `    · tools  task: Subagent "find the port": done in 6 steps.`,
      `        · model  Where is the port configured? · → grep {"pattern":"port"}`,
      `        · tools  grep: 1 matching line in 1 file`,
      `        · model  → read_file {"path":"src/config.ts"}`,
      `        · tools  read_file: 1\texport const port = 8080;`,
      `        · model  → write_file {"path":"x.txt","contents":"no"}`,
      `        · tools  write_file: Error (tool_not_found): unknown tool "write_file"; available tools: read_file, list_dir…`,
      `        · model  The port is 8080.`,
      `        · remind Your reply is not seen by the Coder: call complete_task with your result (its parameters give the s…`,
      `        · model  → complete_task {"summary":"The port is 8080."}`,
      `        · tools  complete_task: Error (invalid_arguments): invalid arguments for complete_task: findings: Invalid in…`,
      `        · model  → complete_task {"summary":"The port is 8080.","findings":["src/config.ts:1: port = 8080"],"files_t…`,
      `        · tools  complete_task: Result handed to the Coder.`,
      `        · finish set result`,
      `    · model  The port is 8080.`,
      `    · finish set result`,
    ]);
    const json = JSON.parse((await runCli(["inspect", "sub", "--nested", "--json", "--db", ws.db])).stdout) as {
      nested: { ns: string; parentNs: string; node: string; checkpoints: unknown[] }[];
    };
    expect(json.nested.map((inner) => [inner.node, inner.parentNs === "" ? "root" : "coder", inner.checkpoints.length])).toEqual([
      ["coder", "root", 4],
      ["tools", "coder", 13],
    ]);
    const replayed = await runCli(["replay", "sub", "--recorded", "--db", ws.db]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/consistent: the replay followed the record/);
  });

  it("types declared in the user's config, the project's and the graph (which wins by name) run with their own prompt, model, tools and output schema; an unknown or inherited name is refused", async () => {
    const ws = tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });
    const config = join(ws.root, "config");
    mkdirSync(join(config, "loopgraph"), { recursive: true });
    writeFileSync(join(config, "loopgraph", "user-reader.md"), "USER-READER-MARKER\n");
    writeFileSync(
      join(config, "loopgraph", "config.yaml"),
      stringify({
        subagents: {
          risk: {
            description: "rates a change's risk",
            tools: ["read_file"],
            model: "openai:gpt-risk",
            output: {
              type: "object",
              properties: { risk: { type: "string", enum: ["low", "high"] }, reasons: { type: "array", items: { type: "string" } } },
              required: ["risk", "reasons"],
              additionalProperties: false,
            },
          },
          reader: { description: "the user's reader", prompt: "user-reader.md" },
        },
      }),
    );
    writeFileSync(join(ws.dir, "lister.md"), "LISTER-MARKER: list what is there.\n");
    writeFileSync(join(ws.dir, "reader.md"), "GRAPH-READER-MARKER: read the one file asked about.\n");
    writeFileSync(
      join(ws.dir, "loopgraph.yaml"),
      stringify({ subagents: { lister: { description: "lists folders", prompt: "lister.md", tools: ["list_dir"] } } }),
    );
    const graph = coderGraph(ws, "sub", [
      "subagents:",
      "  reader: { description: the graph's reader, prompt: reader.md, tools: [read_file], max_steps: 3 }",
    ]);
    const server = await mockServer();
    const done = (summary: string) => ({ toolCalls: [{ name: "complete_task", args: { summary, findings: [], files_touched: [] } }] });
    server.enqueue(
      { toolCalls: [{ name: "task", args: { description: "rate it", prompt: "How risky is README.md?", agent: "risk" } }] },
      { toolCalls: [{ name: "complete_task", args: { risk: "medium", reasons: [] } }] },
      { toolCalls: [{ name: "complete_task", args: { risk: "high", reasons: ["it is the only doc"] } }] },
      { toolCalls: [{ name: "task", args: { description: "list", prompt: "What is at the top?", agent: "lister" } }] },
      done("README.md and the graph"),
      { toolCalls: [{ name: "task", args: { description: "read", prompt: "What does README.md say?", agent: "reader" } }] },
      done("a demo"),
      { toolCalls: [{ name: "task", args: { description: "x", prompt: "y", agent: "constructor" } }] },
      { text: "done" },
    );
    const env = cleanEnv({ XDG_CONFIG_HOME: config, OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    trustIn(ws.dir, env);
    const result = await run(ws, { graph, thread: "types", model: "openai:gpt-test", task: "t", approval: "auto" }, { cwd: ws.dir, env });
    expect(result.code, result.stderr).toBe(0);
    const sent = bodies(server);
    expect(sent).toHaveLength(9);
    // The Coder is told of every type: the config files' and the graph's.
    expect(systemText(sent[0]!)).toMatch(
      /# Subagents.*- risk: rates a change's risk.*- reader: the graph's reader.*- lister: lists folders/s,
    );
    // The user's type: its model, its tools and its schema, which checks what it hands in.
    expect([server.requests[0]!.body.model, server.requests[1]!.body.model, server.requests[4]!.body.model]).toEqual([
      "gpt-test",
      "gpt-risk",
      "gpt-test",
    ]);
    expect(offered(sent[1]!)).toEqual(["read_file", "complete_task"]);
    expect(sent[1]!.tools![1]!.function.parameters).toMatchObject({
      properties: { risk: { enum: ["low", "high"] } },
      required: ["risk", "reasons"],
    });
    expect(lastToolText(sent[2]!)).toMatch(/^Error \(invalid_arguments\): invalid arguments for complete_task: risk: /);
    expect(lastToolText(sent[3]!)).toBe(
      `Subagent "rate it": done in 2 steps.\n\n${JSON.stringify({ risk: "high", reasons: ["it is the only doc"] }, null, 2)}`,
    );
    // The project's type: its prompt, from the project.
    expect(systemText(sent[4]!)).toContain("LISTER-MARKER");
    expect(offered(sent[4]!)).toEqual(["list_dir", "complete_task"]);
    // The graph's reader, not the user's.
    expect(systemText(sent[6]!)).toContain("GRAPH-READER-MARKER");
    expect(systemText(sent[6]!)).not.toContain("USER-READER-MARKER");
    expect(lastToolText(sent[8]!)).toMatch(/no subagent type "constructor": use one of risk, reader, lister, or leave agent out/);
    // `loopgraph config` shows the types that apply here.
    const shown = await runCli(["config", "--json"], { cwd: ws.dir, env });
    const subagents = (JSON.parse(shown.stdout) as { settings: { name: string; value: string; source: string }[] }).settings.find(
      (setting) => setting.name === "subagents",
    );
    expect(subagents).toMatchObject({
      value: "risk (rates a change's risk), reader (the user's reader), lister (lists folders)",
      source: "project",
    });
  });

  it("a subagent can do no more than its Coder: in ask mode it only reads, and it never gets a tool its Coder lacks", async () => {
    const ws = tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });
    const graph = coderGraph(ws, "limits", [
      "tools: [read_file, write_file, task]",
      "subagents:",
      "  writer: { tools: [read_file, write_file, shell] }",
    ]);
    const attempt = (server: MockOpenAIServer) =>
      server.enqueue(
        { toolCalls: [{ name: "task", args: { description: "write", prompt: "Write x.txt", agent: "writer" } }] },
        { toolCalls: [{ name: "write_file", args: { path: "x.txt", contents: "x" } }] },
        { toolCalls: [{ name: "shell", args: { command: "touch ran" } }] },
        { toolCalls: [{ name: "complete_task", args: { summary: "tried", findings: [], files_touched: [] } }] },
        { text: "done" },
      );
    const [askServer, agentServer] = [await mockServer(), await mockServer()];
    attempt(askServer);
    attempt(agentServer);
    const env = (server: MockOpenAIServer) => ({ env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }) });
    // Each run has a store of its own: this test is about tools, not two writers sharing one store
    // (the chaos suite's part on concurrent runs is).
    const [ask, agent] = await Promise.all([
      run(
        { ...ws, db: join(ws.root, "ask.db") },
        { graph, thread: "ask", model: "openai:gpt-test", task: "t", approval: "auto", extra: ["--mode", "ask"] },
        env(askServer),
      ),
      run(ws, { graph, thread: "agent", model: "openai:gpt-test", task: "t", approval: "auto" }, env(agentServer)),
    ]);
    expect(ask.code, ask.stderr).toBe(0);
    expect(agent.code, agent.stderr).toBe(0);
    // Ask mode: the subagent is offered the read tools only; its write is refused before the policy, never run or asked about.
    expect(offered(bodies(askServer)[1]!)).toEqual(["read_file", "complete_task"]);
    const askResults = parseEvents(ask.stdout).filter((e) => e.type === "tool_result");
    expect(askResults.map((e) => [e.node, e.name, e.notRun ?? null])).toEqual([
      ["coder-writer", "write_file", "not_allowed"],
      ["coder-writer", "shell", "tool_not_found"],
      ["coder-writer", "complete_task", null],
      ["coder", "task", null],
    ]);
    expect(String(askResults[0]!.result)).toMatch(/^write_file is not available in ask mode/);
    expect(parseEvents(ask.stdout).some((e) => e.type === "approval_requested")).toBe(false);
    // Agent mode: it writes, but has no shell, as its Coder has none.
    expect(offered(bodies(agentServer)[1]!)).toEqual(["read_file", "write_file", "complete_task"]);
    expect(existsSync(join(ws.dir, "x.txt"))).toBe(true);
    expect(existsSync(join(ws.dir, "ran"))).toBe(false);
  });

  it("a subagent's call that needs approval is not run and not asked about: the task call says so in words, and the Coder goes on", async () => {
    const ws = tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });
    const graph = coderGraph(ws, "asks", [
      "tools: [read_file, write_file, task]",
      "subagents:",
      "  writer: { tools: [read_file, write_file] }",
    ]);
    const server = await mockServer();
    server.enqueue(
      { toolCalls: [{ name: "task", args: { description: "write it", prompt: "Write x.txt", agent: "writer" } }] },
      { toolCalls: [{ name: "write_file", args: { path: "x.txt", contents: "x" } }] },
      { text: "I could not write it." },
    );
    const result = await run(
      ws,
      { graph, thread: "asks", model: "openai:gpt-test", task: "t", approval: "ask" },
      { env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }) },
    );
    expect(result.code, result.stderr).toBe(0);
    const task = parseEvents(result.stdout).find((e) => e.type === "tool_result" && e.name === "task")!;
    expect(task.ok).toBe(false);
    expect(String(task.result)).toMatch(
      /Subagent "write it" stopped: its call write_file \{"path":"x\.txt".*needs the user's approval, and a subagent cannot ask for it, so it was not run\./,
    );
    expect(existsSync(join(ws.dir, "x.txt"))).toBe(false);
  });

  it("a bad output schema is a one-line error naming where it is: the graph's when it loads, the config's before a run starts", async () => {
    const ws = tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });
    const graph = coderGraph(ws, "bad", ["subagents:", "  rater: { output: { type: array } }"]);
    const fromGraph = await runCli(["graphs", "validate", graph]);
    expect(fromGraph.code).toBe(2);
    expect(fromGraph.stderr).toMatch(/bad\.yaml:\d+:\d+: .*the output schema must have type: object/);
    const config = join(ws.root, "config");
    mkdirSync(join(config, "loopgraph"), { recursive: true });
    writeFileSync(
      join(config, "loopgraph", "config.yaml"),
      stringify({ subagents: { rater: { output: { type: "object", properties: { risk: { type: "strnig" } } } } } }),
    );
    const fromConfig = await run(
      ws,
      { graph: "coder", thread: "bad", model: "scripted:none.yaml", task: "t" },
      { cwd: ws.dir, env: cleanEnv({ XDG_CONFIG_HOME: config }) },
    );
    expect(fromConfig.code).toBe(2);
    expect(fromConfig.stderr.trim()).toBe(
      `loopgraph: subagent type "rater" in ${join(config, "loopgraph", "config.yaml")}: the output schema is not a JSON Schema loopgraph can check results against: Unsupported type: strnig`,
    );
    expect(hasStackTrace(fromConfig.stderr)).toBe(false);
  });
});
