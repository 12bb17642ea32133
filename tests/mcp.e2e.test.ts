/**
 * MCP tools through the real CLI: the reference server from npm over stdio (in the sandbox) and
 * over streamable HTTP on 127.0.0.1, declared in the user's config file; the Coder calls their
 * tools as `server__tool`, asking first, and the result reaches the model (a local mock of the
 * OpenAI API sees it); `replay --recorded` reproduces the run without the server.
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli, SANDBOX_AS_FOUND, trustIn } from "./helpers/cli.js";
import { run, resumeWith, type RunPlace } from "./helpers/e2e.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const FIXTURES = join(import.meta.dirname, "fixtures", "mcp");

/** A user config folder (XDG_CONFIG_HOME) with these files under `loopgraph/`. */
function userConfig(root: string, files: Record<string, string>): string {
  const home = join(root, "config");
  mkdirSync(join(home, "loopgraph"), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(home, "loopgraph", name), text);
  return home;
}

const events = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);

/** The HTTP fixture server, stopped after the test: its URL, and the log of the requests it got. */
async function startHttpServer(root: string, token: string): Promise<{ url: string; log: string; stop: () => void }> {
  const log = join(root, "http-requests.log");
  const child = spawn(process.execPath, [join(FIXTURES, "everything-http.mjs")], {
    env: { ...process.env, MCP_TEST_TOKEN: token, MCP_TEST_LOG: log },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const stop = () => {
    child.kill("SIGKILL");
  };
  onCleanup(stop);
  const port = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", () => reject(new Error("the MCP HTTP fixture exited")));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, log, stop };
}

describe("MCP servers' tools in a Coder run", () => {
  it("stdio: the Coder's call asks first (even in auto), runs in the sandbox after approval, and a recorded replay reproduces it without starting the server", async () => {
    const ws = tempWorkspace({ git: true });
    const config = userConfig(ws.root, {
      "config.yaml": `mcp_servers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(join(FIXTURES, "everything-stdio.mjs"))}]\n`,
    });
    const script = join(ws.root, "mcp.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        "  - { node: coder, tool_calls: [ { name: everything__echo, args: { message: hello mcp } } ] }",
        "  - { node: coder, tool_calls: [ { name: everything__get-env, args: {} } ] }",
        '  - { node: coder, content: "Echoed, and looked at the environment." }',
        "",
      ].join("\n"),
    );
    const env = cleanEnv({ ...SANDBOX_AS_FOUND, XDG_CONFIG_HOME: config, MY_SERVICE_TOKEN: "tok-never-shown-4711" });
    const place: RunPlace = ws;
    const first = await run(place, { graph: "coder", thread: "mcp", script, task: "echo through MCP", approval: "auto" }, { env });
    expect(first.code).toBe(3);
    const asked = events(first.stdout).find((event) => event.type === "interrupt") as { value: { tool: string; reason: string } };
    expect(asked.value.tool).toBe("everything__echo");
    expect(asked.value.reason).toMatch(/^MCP tool calls need approval in every approval mode unless a policy rule allows them/);

    const second = await resumeWith({ env }, place, "mcp", "--approve", "--json");
    expect(second.code).toBe(3);
    const echoed = events(second.stdout).find((event) => event.type === "tool_result") as { name: string; ok: boolean; result: string };
    expect(echoed).toMatchObject({ name: "everything__echo", ok: true, result: "Echo: hello mcp" });
    const third = await resumeWith({ env }, place, "mcp", "--approve", "--json");
    expect(third.code, third.stderr).toBe(0);
    const environment = events(third.stdout).find((event) => event.type === "tool_result") as { result: string };
    // The server ran with the agent's environment: no credential reaches it, or the model.
    expect(environment.result).toMatch(/"PATH"/);
    expect(environment.result).not.toMatch(/MY_SERVICE_TOKEN|tok-never-shown/);

    const starts = lines(join(ws.dir, "mcp-starts.log")).length;
    expect(starts).toBeGreaterThanOrEqual(2);
    const replayed = await runCli(["replay", "mcp", "--recorded", "--db", ws.db], { env });
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/consistent: the replay followed the record/);
    expect(replayed.stdout).toMatch(/Echo: hello mcp/);
    expect(lines(join(ws.dir, "mcp-starts.log"))).toHaveLength(starts);
  });

  it("HTTP: a rule allows the server's tools, the model is offered them and gets the result; headers take the user's variable; replay needs no server", async () => {
    const ws = tempWorkspace({ git: true });
    const server = await startHttpServer(ws.root, "docs-token-0815");
    const model = await startMockOpenAI();
    onCleanup(() => model.close());
    const config = userConfig(ws.root, {
      "config.yaml": `mcp_servers:\n  docs:\n    url: ${server.url}\n    headers: { Authorization: "Bearer \${DOCS_TOKEN}" }\n`,
      "policy.yaml": 'rules:\n  - { tool: "docs__*", decision: allow, reason: my docs server }\n',
    });
    model.enqueue({ toolCalls: [{ name: "docs__get-sum", args: { a: 2, b: 40 } }] }, { text: "The sum is 42." });
    const env = cleanEnv({ XDG_CONFIG_HOME: config, DOCS_TOKEN: "docs-token-0815", OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: model.url });
    const result = await run(ws, { graph: "coder", thread: "docs", model: "openai:gpt-4o-mini", task: "add two numbers" }, { env });
    expect(result.code, result.stderr).toBe(0);

    const offered = (model.requests[0]!.body.tools as { function: { name: string; parameters: { properties: object } } }[]).find(
      (tool) => tool.function.name === "docs__get-sum",
    );
    expect(offered?.function.parameters.properties).toHaveProperty("a");
    const toolMessage = (model.requests[1]!.body.messages as { role: string; content: string }[]).find(
      (message) => message.role === "tool",
    );
    expect(toolMessage?.content).toMatch(/The sum of 2 and 40 is 42/);

    const contacted = lines(server.log).length;
    expect(contacted).toBeGreaterThan(0);
    server.stop();
    const replayed = await runCli(["replay", "docs", "--recorded", "--db", ws.db], { env });
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/The sum of 2 and 40 is 42/);
    expect(lines(server.log)).toHaveLength(contacted);
  });

  it("a graph's server that cannot run is said in a warning and its tools are not offered; a project's file cannot take one out of the sandbox", async () => {
    const ws = tempWorkspace({ git: true });
    const graph = join(ws.dir, "with-mcp.yaml");
    const coder = readFileSync(join(import.meta.dirname, "..", "graphs", "coder.yaml"), "utf8").replace(/^prompt: .*$/m, "");
    writeFileSync(
      graph,
      `${coder}\nmcp_servers:\n  planted:\n    command: ${JSON.stringify(process.execPath)}\n    args: [-e, "require('fs').writeFileSync('planted-ran', '')"]\n`,
    );
    const script = join(ws.root, "done.script.yaml");
    writeFileSync(script, 'responses:\n  - { node: coder, content: "Nothing to do." }\n');
    const env = cleanEnv({ XDG_CONFIG_HOME: join(ws.root, "config"), LOOPGRAPH_SANDBOX: "off" });
    // A graph file nobody trusted: its server is not even considered.
    const untrusted = await run(ws, { graph, thread: "untrusted", script, task: "nothing" }, { env });
    expect(untrusted.code, untrusted.stderr).toBe(0);
    expect((events(untrusted.stdout).find((event) => event.type === "warning") as { message: string }).message).toMatch(
      /^MCP server "planted" of .*with-mcp\.yaml is not started \(.*which you have not trusted\): review it, then run `loopgraph trust`$/,
    );
    // Trusted, it is still a server nobody approves: it runs only in the sandbox.
    trustIn(graph, env);
    const result = await run(ws, { graph, thread: "planted", script, task: "nothing" }, { env });
    expect(result.code, result.stderr).toBe(0);
    const warning = events(result.stdout).find((event) => event.type === "warning") as { message: string };
    expect(warning.message).toMatch(
      /^MCP server "planted" is not available, so its tools are not offered: not started: it is declared in .*with-mcp\.yaml, and such a server runs only in the OS sandbox/,
    );
    expect(existsSync(join(ws.dir, "planted-ran"))).toBe(false);

    appendFileSync(join(ws.dir, "loopgraph.yaml"), "mcp_servers:\n  planted:\n    command: node\n    sandbox: false\n");
    trustIn(ws.dir, env);
    const refused = await runCli(["config"], { cwd: ws.dir, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /loopgraph\.yaml:4:14: mcp_servers\.planted\.sandbox: a project's loopgraph\.yaml cannot set sandbox: false for an MCP server/,
    );
  });

  it("loopgraph mcp list starts each declared server as a run would and lists its tools; one that cannot start makes it exit 1", async () => {
    const ws = tempWorkspace();
    const config = userConfig(ws.root, {
      "config.yaml": `mcp_servers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(join(FIXTURES, "everything-stdio.mjs"))}]\n  broken:\n    command: /nonexistent/server\n`,
    });
    const listed = await runCli(["mcp", "list", "--workspace", ws.dir, "--json"], { env: cleanEnv({ XDG_CONFIG_HOME: config }) });
    expect(listed.code).toBe(1);
    const { servers } = JSON.parse(listed.stdout) as {
      servers: { name: string; available: boolean; declaredIn: string; reason?: string; tools: { name: string }[] }[];
    };
    expect(servers.map((server) => [server.name, server.available])).toEqual([
      ["everything", true],
      ["broken", false],
    ]);
    expect(servers[0]!.declaredIn).toBe(join(config, "loopgraph", "config.yaml"));
    expect(servers[0]!.tools.map((tool) => tool.name)).toContain("everything__echo");
    expect(servers[1]!.reason).toMatch(/nonexistent\/server/);
    expect(lines(join(ws.dir, "mcp-starts.log"))).toHaveLength(1);
  });
});
