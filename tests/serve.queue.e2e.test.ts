/**
 * `loopgraph serve --queue` on a PostgreSQL store: a new thread's run is queued for the store's
 * workers (`loopgraph worker`, a process of its own), and the API follows it through the store: its
 * values stream as the worker writes its checkpoints, its approval pause is an interrupt answered
 * with `command: {resume}`; a queued run cancelled before any worker took it ends `interrupted`
 * and no worker takes it afterwards. Driven with LangGraph's JS client.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { expect, it } from "vitest";
import { cleanEnv, runCli, spawnCli, collect } from "./helpers/cli.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { startServe } from "./helpers/serve.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const SCRIPT = `responses:
  - node: coder
    content: "I'll write the file."
    tool_calls:
      - name: write_file
        args: { path: queued.txt, contents: "from the worker\\n" }
  - node: coder
    content: "Wrote queued.txt."
`;

describeOnPostgres("loopgraph serve --queue", "serve --queue", (server) => {
  it("queues a new thread's run for a worker, streams its checkpoints, and answers its approval; a run cancelled in the queue is never taken", async () => {
    const url = server().createDatabase("serve_queue");
    const ws = tempWorkspace({ git: "init" });
    const script = join(ws.root, "coder.script.yaml");
    writeFileSync(script, SCRIPT);
    const env = { LOOPGRAPH_DB: url };
    const served = await startServe(ws.dir, ["--queue", "--model", `scripted:${script}`], { env });
    const client = new Client({ apiUrl: served.url, apiKey: served.token });

    // No worker yet: the run waits in the queue, and is cancelled there.
    const early = await client.threads.create();
    const waiting = await client.runs.create(early.thread_id, "coder", { input: { task: "write queued.txt" } });
    await expect
      .poll(async () => (await queryRows<{ status: string }>(url, "SELECT status FROM loopgraph_threads")).map((row) => row.status))
      .toEqual(["queued"]);
    await client.runs.cancel(early.thread_id, waiting.run_id, true);
    expect((await client.runs.get(early.thread_id, waiting.run_id)).status).toBe("interrupted");
    expect((await client.threads.get(early.thread_id)).metadata).toMatchObject({
      loopgraph_status: "interrupted",
      loopgraph_error: "cancelled through the API before a worker took it",
    });

    const worker = spawnCli(["worker"], { cwd: ws.dir, env: cleanEnv({ ...env, LOOPGRAPH_WORKER_CHECK_S: "1" }) });
    let log = "";
    worker.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
    const workerDone = collect(worker);
    onCleanup(() => void worker.kill("SIGKILL"));

    const thread = await client.threads.create();
    const parts: { event: string; data: unknown }[] = [];
    for await (const part of client.runs.stream(thread.thread_id, "coder", { input: { task: "write queued.txt" }, streamMode: ["values"] }))
      parts.push(part);
    const last = parts.at(-1)!.data as { task: string; __interrupt__: { value: { tool: string } }[] };
    expect(last.task).toBe("write queued.txt");
    expect(last.__interrupt__[0]!.value.tool).toBe("write_file");
    // The worker ran it: the thread's record names the worker's process.
    const rows = await queryRows<{ thread_id: string; status: string; pid: number }>(
      url,
      "SELECT thread_id, status, pid FROM loopgraph_threads ORDER BY created_at",
    );
    expect(rows.map((row) => [row.thread_id, row.status])).toEqual([
      [early.thread_id, "interrupted"],
      [thread.thread_id, "paused"],
    ]);
    expect(rows[1]!.pid).toBe(worker.pid);
    expect(log).not.toContain(early.thread_id);

    const answered = await client.runs.wait(thread.thread_id, "coder", { command: { resume: "approve" } });
    expect((answered as { messages: { content: string }[] }).messages.at(-1)!.content).toBe("Wrote queued.txt.");
    const inspected = await runCli(["inspect", thread.thread_id, "--json"], { cwd: ws.dir, env: cleanEnv(env) });
    expect(JSON.parse(inspected.stdout).thread.status).toBe("finished");

    // The server stopped (Ctrl-C) while a worker runs a thread it queued: the run goes on there.
    const goesOn = await client.threads.create();
    await client.runs.create(goesOn.thread_id, "coder", { input: { task: "write queued.txt again" } });
    expect((await served.serve.kill("SIGINT")).code).toBe(0);
    const statusOf = async () =>
      (await queryRows<{ status: string }>(url, "SELECT status FROM loopgraph_threads WHERE thread_id = $1", [goesOn.thread_id]))[0]
        ?.status;
    await expect.poll(statusOf, { timeout: 30_000 }).toBe("paused");

    worker.kill("SIGTERM");
    expect((await workerDone).code).toBe(0);
  }, 120_000);

  it("is refused in one line, exit 2, on a SQLite store", async () => {
    const ws = tempWorkspace({ git: "init" });
    const refused = await runCli(["serve", "--queue"], { cwd: ws.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--queue needs a PostgreSQL store/);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
  });
});
