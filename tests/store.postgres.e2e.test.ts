/**
 * The run store on PostgreSQL (`--db postgres://…`), on a throwaway server: the thread table and
 * its one-owner claim, the inbox, recordings written with their step's checkpoint write, the
 * snapshot log, and whole runs through the CLI read back from another directory (standing in
 * for another machine), with the same history a SQLite store shows. No password is ever printed
 * or stored.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { PostgresCheckpointSaver } from "../src/checkpoint/index.js";
import { dbFlag } from "../src/cli/run-commands.js";
import { openStore, type Store } from "../src/runs/store.js";
import { asSeen, processStart, THIS_PROCESS } from "../src/runs/thread-registry.js";
import { cleanEnv, hasStackTrace, ROOT, runCli } from "./helpers/cli.js";
import { historyOf, run, startCli } from "./helpers/e2e.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { onCleanup, tempDir, tempWorkspace } from "./helpers/workspace.js";

async function storeOn(url: string): Promise<Store> {
  const store = await openStore({ db: url, env: {} }, "create");
  onCleanup(() => store.close());
  return store;
}

const NEW_THREAD = { graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" } as const;
const FIXTURES = join(ROOT, "tests/fixtures/engine");

describeOnPostgres("a run store on PostgreSQL", "the PostgreSQL store tests", (server) => {
  let databases = 0;
  const newDatabase = (): string => server().createDatabase(`store_${(databases += 1)}`);

  it("threads have one owner: created running here, refused to a claim while a live process holds them, taken over once it is gone", async () => {
    const url = newDatabase();
    const store = await storeOn(url);
    expect(await store.threads.create({ threadId: "t", ...NEW_THREAD })).toBeUndefined();
    expect(await store.threads.create({ threadId: "t", ...NEW_THREAD })).toMatchObject({ threadId: "t", status: "running" });
    expect(await store.threads.get("t")).toMatchObject({
      status: "running",
      pid: process.pid,
      host: THIS_PROCESS.host,
      ownerStart: processStart(process.pid),
    });
    await store.threads.markEnded("t", "paused", undefined, { reason: "breakpoint", node: "a" });
    expect(await store.threads.get("t")).toMatchObject({ status: "paused", pause: { reason: "breakpoint", node: "a" } });

    // Another live process of this host holds it: refused. Once that process is gone: taken over.
    const holder = spawn("sleep", ["300"], { stdio: "ignore" });
    onCleanup(() => void holder.kill("SIGKILL"));
    const holderPid = holder.pid!;
    await queryRows(url, `UPDATE loopgraph_threads SET status = 'running', pid = $1, owner_start = $2 WHERE thread_id = 't'`, [
      holderPid,
      processStart(holderPid),
    ]);
    const refused = await store.threads.claim("t");
    expect(refused).toMatchObject({ claimed: false, holder: { pid: holderPid } });
    const exited = new Promise((resolve) => holder.once("exit", resolve));
    holder.kill("SIGKILL");
    await exited;
    expect(asSeen((await store.threads.get("t"))!)).toMatchObject({ status: "interrupted", goneOwner: holderPid });
    const taken = await store.threads.claim("t", { approval: "auto" });
    expect(taken).toMatchObject({ claimed: true, before: { status: "running", pid: holderPid } });
    expect(await store.threads.get("t")).toMatchObject({ status: "running", pid: process.pid, approval: "auto" });

    // Command groups are recorded while they run; release gives the thread back as it was.
    await store.threads.commandStarted("t", 4242);
    expect((await store.threads.get("t"))?.commandGroups?.map((group) => group.pgid)).toEqual([4242]);
    await store.threads.commandEnded("t", 4242);
    expect((await store.threads.get("t"))?.commandGroups).toBeUndefined();
    if (taken?.claimed) await store.threads.release("t", taken.before);
    expect(await store.threads.get("t")).toMatchObject({ status: "interrupted" });
    expect(await store.threads.claim("nope")).toBeUndefined();
    expect((await store.threads.list()).map((thread) => thread.threadId)).toEqual(["t"]);
  });

  it("claims made at once from several connections: exactly one wins", async () => {
    const url = newDatabase();
    const store = await storeOn(url);
    await store.threads.create({ threadId: "race", ...NEW_THREAD });
    await store.threads.markEnded("race", "interrupted");
    // Ten claims at once (ten pool connections): the row lock makes them take turns, so exactly one
    // finds the thread as it was (interrupted) and the others find it already running here.
    const claims = await Promise.all(Array.from({ length: 10 }, () => store.threads.claim("race")));
    expect(claims.every((claim) => claim?.claimed)).toBe(true);
    expect(claims.filter((claim) => claim?.claimed && claim.before.status === "interrupted")).toHaveLength(1);
  });

  it("the inbox keeps commands in order, messages for a chat apart, and forgets a removed command", async () => {
    const store = await storeOn(newDatabase());
    const first = await store.inbox.post("t", "stop", { command: "stop" });
    const message = await store.inbox.postMessage("t", "hello");
    const second = await store.inbox.post("t", "add: more", { command: "add_pending", task: "more" });
    expect(second).toBeGreaterThan(message);
    expect(message).toBeGreaterThan(first);
    expect((await store.inbox.after("t", 0)).map((entry) => [entry.id, entry.command.command])).toEqual([
      [first, "stop"],
      [second, "add_pending"],
    ]);
    expect(await store.inbox.messagesAfter("t", 0)).toEqual([{ id: message, text: "hello" }]);
    expect(await store.inbox.after("t", first)).toHaveLength(1);
    await store.inbox.remove(first);
    expect((await store.inbox.after("t", 0)).map((entry) => entry.id)).toEqual([second]);
    expect(await store.inbox.after("other", 0)).toEqual([]);
  });

  it("records are written in the transaction of the step's next checkpoint write, not before", async () => {
    const url = newDatabase();
    const store = await storeOn(url);
    store.recordings.put(
      { threadId: "t", checkpointId: "c1", taskPath: "a:1", callIndex: 0, node: "a" },
      { kind: "tool", name: "shell", args: {}, result: "one" },
    );
    expect(await queryRows(url, "SELECT id FROM loopgraph_recordings")).toEqual([]);
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1" } };
    await (store.saver as PostgresCheckpointSaver).putWrites(config, [["x", 1]], "task-1");
    expect(await queryRows(url, "SELECT task_path, data FROM loopgraph_recordings")).toEqual([
      { task_path: "a:1", data: expect.stringContaining('"one"') },
    ]);
    // A write that fails takes its records down with it; they stay queued for the next one.
    store.recordings.put(
      { threadId: "t", checkpointId: "c1", taskPath: "a:1", callIndex: 1, node: "a" },
      { kind: "tool", name: "shell", args: {}, result: "two" },
    );
    // (PostgreSQL refuses a NUL character in text: the write statement fails.)
    await expect((store.saver as PostgresCheckpointSaver).putWrites(config, [["y", 2]], "task\u0000two")).rejects.toThrow();
    expect(await queryRows(url, "SELECT count(*)::int AS n FROM loopgraph_recordings")).toEqual([{ n: 1 }]);
    expect((await store.recordings.list("t")).map((record) => (record.kind === "tool" ? record.result : undefined))).toEqual([
      "one",
      "two",
    ]);
  });

  it("a thread is deleted with all its rows in one transaction, unless a live process runs it", async () => {
    const url = newDatabase();
    const store = await storeOn(url);
    for (const id of ["gone", "kept"]) {
      await store.threads.create({ threadId: id, ...NEW_THREAD });
      await store.threads.markEnded(id, "finished");
      await store.inbox.post(id, "stop", { command: "stop" });
    }
    const holder = spawn("sleep", ["300"], { stdio: "ignore" });
    onCleanup(() => void holder.kill("SIGKILL"));
    await queryRows(url, `UPDATE loopgraph_threads SET status = 'running', pid = $1, owner_start = $2 WHERE thread_id = 'kept'`, [
      holder.pid,
      processStart(holder.pid!),
    ]);
    expect(await store.threads.delete("kept")).toMatchObject({ deleted: false, holder: { pid: holder.pid } });
    expect(await store.threads.delete("gone")).toMatchObject({ deleted: true, record: { threadId: "gone" } });
    expect(await store.threads.delete("gone")).toBeUndefined();
    expect(await queryRows(url, "SELECT thread_id FROM loopgraph_inbox ORDER BY thread_id")).toEqual([{ thread_id: "kept" }]);
    expect((await store.threads.list()).map((thread) => thread.threadId)).toEqual(["kept"]);
  });

  it("the snapshot log numbers steps in order, also when two open at once", async () => {
    const store = await storeOn(newDatabase());
    const step = (toolCallId: string) => ({
      threadId: "t",
      checkpoint: { ns: "coder:a", id: "c1", map: { "": "r1", "coder:a": "c1" } },
      node: "coder",
      tool: "shell",
      toolCallId,
      treeBefore: "tree0",
    });
    const seqs = await Promise.all([store.snapshots.open(step("1")), store.snapshots.open(step("2")), store.snapshots.open(step("3"))]);
    expect([...seqs].sort()).toEqual([1, 2, 3]);
    await store.snapshots.close("t", 2, "tree2", ["a.txt"]);
    const listed = await store.snapshots.list("t");
    expect(listed.map((snapshot) => snapshot.seq)).toEqual([1, 2, 3]);
    expect(listed[1]).toMatchObject({ treeAfter: "tree2", paths: ["a.txt"], checkpoint: { map: { "coder:a": "c1" } } });
  });

  it("a run on PostgreSQL reads back from another directory with the history a SQLite store shows; no password printed or stored", async () => {
    const url = newDatabase();
    const ws = tempWorkspace();
    const script = join(FIXTURES, "durable.script.yaml");
    const graph = join(FIXTURES, "durable.yaml");
    const onPostgres = await run({ dir: ws.dir, db: url }, { graph, thread: "pg-run", script, task: "prove durability" });
    expect(onPostgres.code, onPostgres.stderr).toBe(0);
    const onSqlite = await run(ws, { graph, thread: "pg-run", script, task: "prove durability" });
    expect(onSqlite.code, onSqlite.stderr).toBe(0);

    // Another directory, the database named only in the environment: the same threads.
    const elsewhere = tempDir("loopgraph-other-");
    const env = cleanEnv({ LOOPGRAPH_DB: url });
    const listed = await runCli(["inspect", "--json"], { cwd: elsewhere, env });
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { threadId: string; status: string }[]).map((t) => [t.threadId, t.status])).toEqual([
      ["pg-run", "finished"],
    ]);
    const status = await runCli(["status", "pg-run"], { cwd: elsewhere, env });
    expect(status.code, status.stderr).toBe(0);

    const shape = (history: Awaited<ReturnType<typeof historyOf>>) =>
      history.checkpoints.map((c) => ({ step: c.step, nodes: c.nodes, changes: c.changes }));
    expect(shape(await historyOf(url, "pg-run"))).toEqual(shape(await historyOf(ws.db, "pg-run")));

    for (const output of [onPostgres, listed, status]) {
      expect(output.stdout + output.stderr).not.toContain(server().password);
    }
    const stored = await queryRows<{ row: string }>(url, "SELECT t::text AS row FROM loopgraph_threads t");
    expect(stored.map((r) => r.row).join("\n")).not.toContain(server().password);
    // The commands the CLI suggests next (resume, chat, inspect) name the store without its password.
    expect(dbFlag(url)).toBe(` --db ${JSON.stringify(url.replace(server().password, "***"))}`);
  });

  it("snapshots, rewind and recorded replay on PostgreSQL: the files go back to a checkpoint, the replay follows the record", async () => {
    const url = newDatabase();
    const ws = tempWorkspace({ git: true, files: { "c.txt": "committed\n", "run.sh": "#!/bin/sh\necho hi\n" } });
    const coded = await run(
      { dir: ws.dir, db: url },
      {
        graph: "coder",
        task: "edit files",
        thread: "snap",
        script: join(ROOT, "tests/fixtures/snapshots/edits.script.yaml"),
        approval: "auto",
      },
    );
    expect(coded.code, coded.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "c.txt"))).toBe(false);

    const replay = await runCli(["replay", "snap", "--recorded", "--db", url, "--json"], { env: cleanEnv() });
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain(`"divergences":[]`);

    const listed = await runCli(["rewind", "snap", "--list", "--json", "--db", url], { env: cleanEnv() });
    expect(listed.code, listed.stderr).toBe(0);
    const points = JSON.parse(listed.stdout) as { seq: number; tool: string; paths: string[]; checkpointPrefix: string }[];
    expect(points.map((p) => [p.seq, p.tool, p.paths])).toEqual([
      [1, "write_file", ["a.txt"]],
      [2, "edit_file", ["a.txt"]],
      [3, "write_file", ["sub/b.txt"]],
      [4, "shell", ["c.txt", "run.sh"]],
    ]);
    // The web inspector reads the same store: the thread's steps and each step's file diff, and no password.
    const ui = startCli(["--db", url, "ui"], { env: cleanEnv() });
    const line = ui.lines[await ui.waitForLine((text) => text.startsWith("loopgraph ui: "))]!;
    const page = await (await fetch(line.slice("loopgraph ui: ".length).trim().replace("/?token=", "/api/threads/snap?token="))).text();
    const shown = JSON.parse(page) as { history: { checkpoints: unknown[] }; files: { diffs: { tool: string; paths: string[] }[] } };
    expect(shown.history.checkpoints.length).toBeGreaterThan(2);
    expect(shown.files.diffs.map((diff) => [diff.tool, diff.paths])).toEqual(points.map((p) => [p.tool, p.paths]));
    expect(page + ui.lines.join("\n")).not.toContain(server().password);
    await ui.kill("SIGINT");
    const rewound = await runCli(["rewind", "snap", points[1]!.checkpointPrefix, "--db", url], { env: cleanEnv() });
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(ws.dir, "sub"))).toBe(false);
    expect(readFileSync(join(ws.dir, "c.txt"), "utf8")).toBe("committed\n");
  });

  it("a wrong password, a missing database, a URL of another kind: one line, exit 2, no password", async () => {
    const wrong = server().url.replace(server().password, "not-the-password-42");
    for (const [db, expected] of [
      [wrong, /refused the login/],
      [server().url.replace(/\/postgres$/, "/no_such_db"), /does not exist: create the database/],
      [`mysql://u:pw-in-url@127.0.0.1/db`, /is a database URL loopgraph cannot use/],
    ] as const) {
      const result = await runCli(["inspect", "--db", db], { env: cleanEnv() });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(expected);
      expect(hasStackTrace(result.stderr)).toBe(false);
      for (const secret of ["not-the-password-42", server().password, "pw-in-url"]) expect(result.stderr).not.toContain(secret);
    }
    // A database with no loopgraph store yet: a reader says so and creates nothing.
    const empty = newDatabase();
    const reader = await runCli(["inspect", "--db", empty], { env: cleanEnv() });
    expect(reader.code).toBe(2);
    expect(reader.stderr).toMatch(/no loopgraph store in postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/store_\d+: run a graph/);
    expect(await queryRows(empty, "SELECT to_regclass('loopgraph_threads') AS t")).toEqual([{ t: null }]);
  });
});
