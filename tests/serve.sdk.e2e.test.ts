/**
 * `loopgraph serve` driven by LangGraph's own JS client (`@langchain/langgraph-sdk`'s `Client`),
 * against a real `serve` process on 127.0.0.1 with the scripted model: assistants, a thread
 * created and streamed, an approval interrupt answered with `command: {resume}` (approved with
 * edited arguments, and rejected with a reason), the history (the same checkpoints `inspect` and
 * the web inspector show), a fork with `updateState`, a run cancelled; and the server's refusals:
 * no token, another host, a looser approval mode, an endpoint it does not serve.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, runCli } from "./helpers/cli.js";
import { startCli } from "./helpers/e2e.js";
import { startServe } from "./helpers/serve.js";
import { startUi } from "./helpers/ui.js";
import { sharedWorkspace, tempWorkspace } from "./helpers/workspace.js";

interface Part {
  event: string;
  data: unknown;
}

const SCRIPT = `responses:
  - node: coder
    wait_for: gate
    content: "I'll write the file."
    tool_calls:
      - name: write_file
        args: { path: hello.txt, contents: "hello\\n" }
  - node: coder
    content: "Done with hello.txt."
`;

describe("loopgraph serve with LangGraph's JS client", () => {
  const ws = sharedWorkspace({ git: "init" });
  let client: Client;
  let server: Awaited<ReturnType<typeof startServe>>;
  const gate = () => join(ws.root, "gate");

  beforeAll(async () => {
    writeFileSync(join(ws.root, "coder.script.yaml"), SCRIPT);
    server = await startServe(ws.dir, ["--model", `scripted:${join(ws.root, "coder.script.yaml")}`], { standalone: true });
    client = new Client({ apiUrl: server.url, apiKey: server.token });
  }, 60_000);
  afterAll(async () => {
    // Ctrl-C: the server stops its runs at a checkpoint and exits 0.
    expect((await server?.serve.kill("SIGINT"))?.code).toBe(0);
  });

  const collectStream = async (stream: AsyncIterable<Part>): Promise<Part[]> => {
    const parts: Part[] = [];
    for await (const part of stream) parts.push(part);
    return parts;
  };

  it("lists each graph as an assistant, with its drawing and its schemas", async () => {
    const assistants = await client.assistants.search({ limit: 100 });
    expect(assistants.map((assistant) => assistant.assistant_id)).toEqual(
      expect.arrayContaining(["coder", "coder-review", "example-review"]),
    );
    const coder = await client.assistants.get("coder");
    expect(coder).toMatchObject({ assistant_id: "coder", graph_id: "coder" });
    const graph = await client.assistants.getGraph("coder");
    expect(graph.nodes.map((node) => node.id)).toEqual(["__start__", "coder", "__end__"]);
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: "__start__", target: "coder" }),
        expect.objectContaining({ source: "coder", target: "__end__" }),
      ]),
    );
    const schemas = await client.assistants.getSchemas("coder");
    expect(schemas.state_schema).toMatchObject({ properties: { task: { type: "string" } } });
    await expect(client.assistants.get("no-such-graph")).rejects.toThrow(/404/);
  });

  it("a run cancelled while it works stops at a checkpoint, interrupted, and can be listed", async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "coder", { input: { task: "write hello" } });
    expect(run.status).toMatch(/pending|running/);
    // The Coder's first answer waits for the gate: the run is under way, then cancelled.
    await expect.poll(async () => (await client.runs.get(thread.thread_id, run.run_id)).status, { timeout: 20_000 }).toBe("running");
    await client.runs.cancel(thread.thread_id, run.run_id, true);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("interrupted");
    const listed = await client.runs.list(thread.thread_id);
    expect(listed.map((one) => [one.run_id, one.status])).toEqual([[run.run_id, "interrupted"]]);
    const after = await client.threads.get(thread.thread_id);
    expect(after.status).toBe("interrupted");
    expect(after.metadata).toMatchObject({ loopgraph_status: "interrupted", graph_id: "coder" });
    writeFileSync(gate(), "");
  }, 60_000);

  it("streams a run to its approval interrupt, and command.resume approves it with edited arguments", async () => {
    writeFileSync(gate(), "");
    const thread = await client.threads.create({ metadata: { purpose: "approve" } });
    expect(thread.status).toBe("idle");
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, "coder", {
        input: { messages: [{ type: "human", content: "write hello" }] },
        streamMode: ["values", "updates", "messages-tuple", "custom"],
      }),
    );
    expect(parts[0]).toMatchObject({ event: "metadata", data: { run_id: expect.any(String) } });
    const events = new Set(parts.map((part) => part.event));
    expect([...events].sort()).toEqual(["custom", "messages", "metadata", "updates", "values"]);
    const custom = parts.filter((part) => part.event === "custom").map((part) => (part.data as { type: string }).type);
    expect(custom[0]).toBe("run_started");
    expect(custom.at(-1)).toBe("run_finished");
    const chunk = parts.find((part) => part.event === "messages")!.data as [{ type: string; content: string }, { langgraph_node: string }];
    expect(chunk[0]).toMatchObject({ type: "AIMessageChunk", content: "I'll write the file." });
    expect(chunk[1].langgraph_node).toBe("coder");
    const last = parts.at(-1)!;
    expect(last.event).toBe("values");
    const values = last.data as {
      task: string;
      messages: { type: string }[];
      __interrupt__: { id: string; value: Record<string, unknown> }[];
    };
    expect(values.task).toBe("write hello");
    expect(values.__interrupt__).toEqual([
      {
        id: expect.any(String),
        value: expect.objectContaining({ kind: "approval", tool: "write_file", args: { path: "hello.txt", contents: "hello\n" } }),
      },
    ]);
    expect(parts.some((part) => part.event === "updates" && "__interrupt__" in (part.data as object))).toBe(true);

    const paused = await client.threads.get(thread.thread_id);
    expect(paused.status).toBe("interrupted");
    expect(paused.metadata).toMatchObject({ purpose: "approve", loopgraph_status: "paused" });
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["coder"]);
    expect(state.tasks[0]!.interrupts[0]!.value).toMatchObject({ tool: "write_file" });

    const answered = await client.runs.wait(thread.thread_id, "coder", {
      command: { resume: { decision: "approve", args: { path: "hello.txt", contents: "edited\n" } } },
    });
    expect(readFileSync(join(ws.dir, "hello.txt"), "utf8")).toBe("edited\n");
    expect((answered as { messages: { type: string; content: string }[] }).messages.at(-1)).toMatchObject({
      type: "ai",
      content: "Done with hello.txt.",
    });
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");

    // The history: the checkpoints `inspect` shows, newest first, and those the web inspector shows.
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    const inspected = await runCli(["inspect", thread.thread_id, "--json", "--all"], { cwd: ws.dir });
    expect(inspected.code, inspected.stderr).toBe(0);
    const checkpoints = (JSON.parse(inspected.stdout) as { checkpoints: { checkpointId: string }[] }).checkpoints.map(
      (one) => one.checkpointId,
    );
    expect(history.map((entry) => entry.checkpoint.checkpoint_id)).toEqual([...checkpoints].reverse());
    const { url, token } = await startUi(join(ws.dir, ".loopgraph", "loopgraph.db"));
    const page = (await (await fetch(new URL(`/api/threads/${thread.thread_id}?token=${token}`, url))).json()) as {
      history: { checkpoints: { checkpointId: string }[] };
    };
    expect(page.history.checkpoints.map((one) => one.checkpointId)).toEqual(checkpoints);
    expect(history[0]!.values).toEqual(answered);
  }, 90_000);

  it("command.resume rejects with a reason: the call does not run and the model is told why", async () => {
    const thread = await client.threads.create();
    const first = await client.runs.wait(thread.thread_id, "coder", { input: { task: "write hello" } });
    const interrupt = (first as { __interrupt__: { id: string }[] }).__interrupt__[0]!;
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, "coder", {
        command: { resume: { [interrupt.id]: { decision: "reject", reason: "not that file" } } },
        streamMode: ["custom"],
      }),
    );
    const result = parts
      .map((part) => part.data as { type: string; ok?: boolean; result?: string })
      .find((event) => event.type === "tool_result");
    expect(result).toMatchObject({ ok: false, result: expect.stringContaining("not that file") });
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
    // A second answer finds nothing waiting.
    await expect(client.runs.wait(thread.thread_id, "coder", { command: { resume: "approve" } })).rejects.toThrow(/409.*not waiting/);
  }, 60_000);

  it("updateState forks the thread at a checkpoint with the values set, and a run with no input runs the branch", async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "coder", { input: { task: "write hello" } });
    const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    const start = history.find((entry) => (entry.metadata as { nodes: string[] }).nodes.includes("start"))!;
    // The server answers as LangGraph's does, `{checkpoint: {thread_id, checkpoint_ns, checkpoint_id}}` (the SDK's type says otherwise).
    const forked = (await client.threads.updateState(thread.thread_id, {
      values: { task: "write hello twice" },
      checkpointId: start.checkpoint.checkpoint_id!,
    })) as unknown as { checkpoint: { checkpoint_id: string } };
    const state = await client.threads.getState(thread.thread_id);
    expect(state.checkpoint.checkpoint_id).toBe(forked.checkpoint.checkpoint_id);
    expect(state.values).toMatchObject({ task: "write hello twice" });
    expect(state.next).toEqual(["coder"]);
    expect(state.parent_checkpoint?.checkpoint_id).toBe(start.checkpoint.checkpoint_id);
    // The branch runs from there: the Coder asks its approval again, on the edited task.
    const run = await client.runs.wait(thread.thread_id, "coder", {});
    expect(run).toMatchObject({
      task: "write hello twice",
      __interrupt__: [expect.objectContaining({ value: expect.objectContaining({ tool: "write_file" }) })],
    });
    const all = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(all.length).toBeGreaterThan(history.length);
    await expect(client.threads.updateState(thread.thread_id, { values: { nonsense: 1 } })).rejects.toThrow(/422.*unknown state channel/);
    await expect(client.threads.updateState(thread.thread_id, { values: { messages: [] } })).rejects.toThrow(
      /422.*messages cannot be replaced/,
    );
  }, 60_000);

  it("a thread another process runs is not run a second time through the API (one owner per thread)", async () => {
    const held = join(ws.root, "held.script.yaml");
    writeFileSync(held, SCRIPT.replace("wait_for: gate", "wait_for: held-gate"));
    const cli = startCli(["run", "coder", "--task", "held", "--thread", "held-by-cli", "--model", `scripted:${held}`, "--json"], {
      cwd: ws.dir,
    });
    await cli.waitForEvent("node_started");
    await expect(client.runs.wait("held-by-cli", "coder", {})).rejects.toThrow(/409.*is running in process/);
    writeFileSync(join(ws.root, "held-gate"), "");
    expect((await cli.done).code).toBe(3);
  }, 60_000);

  it("searches threads by metadata, status and id (those the CLI ran too), and deletes one as threads delete does", async () => {
    const approved = await client.threads.search({ metadata: { purpose: "approve" } });
    expect(approved).toHaveLength(1);
    expect(approved[0]).toMatchObject({
      status: "idle",
      metadata: { purpose: "approve", graph_id: "coder", loopgraph_status: "finished" },
    });
    const fresh = await client.threads.create({ metadata: { purpose: "unrun" } });
    expect((await client.threads.search({ metadata: { purpose: "unrun" } })).map((thread) => thread.thread_id)).toEqual([fresh.thread_id]);
    const interrupted = await client.threads.search({ status: "interrupted", limit: 100 });
    expect(interrupted.length).toBeGreaterThan(0);
    expect(interrupted.every((thread) => thread.status === "interrupted")).toBe(true);
    const ran = await runCli(["run", "coder", "--task", "from the CLI", "--thread", "cli-thread", "--json"], {
      cwd: ws.dir,
      env: { LOOPGRAPH_MODEL: `scripted:${join(ws.root, "coder.script.yaml")}` },
    });
    expect(ran.code).toBe(3);
    const [cli] = await client.threads.search({ ids: ["cli-thread"] });
    expect(cli).toMatchObject({ thread_id: "cli-thread", status: "interrupted", values: { task: "from the CLI" } });
    expect(await client.threads.count({ metadata: { purpose: "approve" } })).toBe(1);
    await client.threads.delete("cli-thread");
    expect(await client.threads.search({ ids: ["cli-thread"] })).toEqual([]);
    await expect(client.threads.get("cli-thread")).rejects.toThrow(/404/);
  }, 60_000);

  it("refuses a request without the token, one naming another host, a looser approval mode, and what it does not serve (501, by name)", async () => {
    expect((await fetch(new URL("/threads/search", server.url), { method: "POST" })).status).toBe(401);
    const wrong = new Client({ apiUrl: server.url, apiKey: "0".repeat(server.token.length) });
    await expect(wrong.threads.search()).rejects.toThrow(/401/);
    expect(new URL(server.url).hostname).toBe("127.0.0.1");
    // A page of another site that reaches 127.0.0.1 through a name of its own (DNS rebinding) names that host.
    expect(await statusOf(server.url, "/info", { host: `attacker.example:${new URL(server.url).port}`, "x-api-key": server.token })).toBe(
      403,
    );
    expect(await statusOf(server.url, "/info", { host: `localhost:${new URL(server.url).port}`, "x-api-key": server.token })).toBe(200);
    const elsewhere = await fetch(new URL("/info", server.url), {
      headers: { origin: "https://attacker.example", "x-api-key": server.token },
    });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.headers.get("access-control-allow-origin")).toBeNull();

    const thread = await client.threads.create();
    await expect(
      client.runs.create(thread.thread_id, "coder", { input: { task: "t" }, config: { configurable: { approval: "auto" } } }),
    ).rejects.toThrow(/403.*looser/);
    await expect(client.threads.copy(thread.thread_id)).rejects.toThrow(/501.*threads\.copy/);
    await expect(
      collectStream(client.runs.stream(thread.thread_id, "coder", { input: { task: "t" }, streamMode: ["debug"] })),
    ).rejects.toThrow(/501.*stream mode \\"debug\\" is not supported/);
    expect(existsSync(join(ws.dir, ".loopgraph", "loopgraph.db"))).toBe(true);
  }, 60_000);
});

/** The status of a GET with these headers, sent with node:http (fetch does not let a caller set Host). */
function statusOf(base: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpGet(new URL(path, base), { headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("error", reject);
  });
}

describe("loopgraph serve's options", () => {
  it("--no-auth only on 127.0.0.1, and --cors lets the listed origin read answers", async () => {
    const ws = tempWorkspace({ git: "init" });
    const refused = await runCli(["serve", "--no-auth", "--host", "0.0.0.0"], { cwd: ws.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/--no-auth is for 127\.0\.0\.1 only/);
    const open = await startServe(ws.dir, ["--no-auth", "--cors", "http://localhost:5173"]);
    const listed = await fetch(new URL("/assistants/search", open.url), {
      method: "POST",
      headers: { origin: "http://localhost:5173", "content-type": "application/json" },
      body: "{}",
    });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    const preflight = await fetch(new URL("/threads", open.url), { method: "OPTIONS", headers: { origin: "http://localhost:5173" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toContain("x-api-key");
  }, 60_000);

  it("runs a graph as `loopgraph run <name>` would here: an untrusted project's graph is not run through the API", async () => {
    const ws = tempWorkspace({ git: "init" });
    mkdirSync(join(ws.dir, "graphs"));
    const planted = (name: string) =>
      `version: 1\nname: ${name}\nnodes:\n  planted:\n    kind: coder\nedges:\n  - { from: START, to: planted }\n  - { from: planted, to: END }\n`;
    writeFileSync(join(ws.dir, "graphs", "coder.yaml"), planted("coder"));
    writeFileSync(join(ws.dir, "graphs", "evil.yaml"), planted("evil"));
    const script = join(ws.root, "done.script.yaml");
    writeFileSync(script, 'responses:\n  - node: coder\n    content: "nothing to do"\n');
    const served = await startServe(ws.dir, ["--model", `scripted:${script}`]);
    const api = new Client({ apiUrl: served.url, apiKey: served.token });
    // Listed as the project's, drawn and run as loopgraph's own `coder`, which stands in for it.
    expect((await api.assistants.getGraph("coder")).nodes.map((node) => node.id)).toEqual(["__start__", "coder", "__end__"]);
    const thread = await api.threads.create();
    const parts: Part[] = [];
    for await (const part of api.runs.stream(thread.thread_id, "coder", { input: { task: "t" }, streamMode: ["custom"] })) parts.push(part);
    const warnings = parts.map((part) => part.data as { type: string; message?: string }).filter((event) => event.type === "warning");
    expect(warnings.map((event) => event.message)).toEqual([
      expect.stringMatching(/graphs\/coder\.yaml is not used .*loopgraph's own graph "coder" runs instead/),
    ]);
    expect((await api.threads.get(thread.thread_id)).status).toBe("idle");
    // No stand-in: refused before anything runs.
    const other = await api.threads.create();
    await expect(api.runs.wait(other.thread_id, "evil", { input: { task: "t" } })).rejects.toThrow(/400.*is not used/);
    expect((await api.threads.getHistory(other.thread_id)).length).toBe(0);
  }, 60_000);

  it("a chat graph (monitor): the approval its loop waits on is the chat thread's interrupt, and command.resume on the chat answers it", async () => {
    const ws = tempWorkspace({ git: "init" });
    const served = await startServe(ws.dir, ["--model", `scripted:${join(ROOT, "examples", "monitor.script.yaml")}`]);
    const api = new Client({ apiUrl: served.url, apiKey: served.token });
    const thread = await api.threads.create();
    let result = (await api.runs.wait(thread.thread_id, "monitor", { input: { task: "Add isPalindrome with a test" } })) as Record<
      string,
      unknown
    >;
    let answered = 0;
    while (Array.isArray(result.__interrupt__)) {
      const [question] = result.__interrupt__ as { id: string; value: { kind: string; tool: string } }[];
      expect(question!.value.kind).toBe("approval");
      const waiting = await api.threads.get(thread.thread_id);
      expect(waiting.status).toBe("interrupted");
      expect(Object.values(waiting.interrupts).flat()).toEqual([question]);
      const state = await api.threads.getState(thread.thread_id);
      expect(state.tasks.flatMap((task) => task.interrupts)).toEqual([question]);
      result = (await api.runs.wait(thread.thread_id, "monitor", { command: { resume: "approve" } })) as Record<string, unknown>;
      answered++;
    }
    expect(answered).toBeGreaterThan(0);
    expect(result.__error__).toBeUndefined();
    expect(existsSync(join(ws.dir, "palindrome.js"))).toBe(true);
    const done = await api.threads.get(thread.thread_id);
    expect(done.status).toBe("idle");
    expect((await api.threads.get(`${thread.thread_id}.loop`)).metadata).toMatchObject({ loopgraph_status: "finished" });
  }, 90_000);

  it("--static serves the app's files under /app/ with the token put in its HTML, and nothing outside its folder", async () => {
    const ws = tempWorkspace({ git: "init" });
    const app = join(ws.root, "app");
    mkdirSync(app);
    writeFileSync(join(app, "index.html"), '<meta name="loopgraph-serve-token" content="__LOOPGRAPH_SERVE_TOKEN__">');
    writeFileSync(join(ws.root, "secret.txt"), "not for the app\n");
    symlinkSync(join(ws.root, "secret.txt"), join(app, "linked.txt"));
    const served = await startServe(ws.dir, ["--static", app]);
    expect(served.app).toBe(`${served.url}/app/?token=${served.token}`);
    const page = await fetch(served.app!);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(`<meta name="loopgraph-serve-token" content="${served.token}">`);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect((await fetch(`${served.url}/app/`)).status).toBe(401);
    for (const path of ["/app/linked.txt", "/app/../secret.txt", "/app/%2e%2e/secret.txt", "/app/..%2fsecret.txt"])
      expect([401, 404], path).toContain(await statusOf(served.url, `${path}?token=${served.token}`, {}));
  }, 60_000);
});
