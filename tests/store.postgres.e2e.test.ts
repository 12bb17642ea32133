/**
 * The run store on PostgreSQL (`--db postgres://…`), on a throwaway server: a failed checkpoint
 * write keeps its step's records queued, and whole runs through the CLI read back from another
 * directory (standing in for another machine), with the same history a SQLite store shows. No
 * password is ever printed or stored. What every store's tables do is in tests/store.contract.test.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { dbFlag } from "../src/cli/run-commands.js";
import { openStore, type Store } from "../src/store/store.js";
import { cleanEnv, hasStackTrace, ROOT, runCli } from "./helpers/cli.js";
import { historyOf, run, startCli } from "./helpers/e2e.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { onCleanup, tempDir, tempWorkspace } from "./helpers/workspace.js";

async function storeOn(url: string): Promise<Store> {
  const store = await openStore({ db: url, env: {} }, "create");
  onCleanup(() => store.close());
  return store;
}

const FIXTURES = join(ROOT, "tests/fixtures/engine");

describeOnPostgres("a run store on PostgreSQL", "the PostgreSQL store tests", (server) => {
  let databases = 0;
  const newDatabase = (): string => server().createDatabase(`store_${(databases += 1)}`);

  it("a checkpoint write that fails takes its step's records down with it: they stay queued for the next one", async () => {
    const url = newDatabase();
    const store = await storeOn(url);
    const saver = store.saver as PostgresCheckpointSaver;
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1" } };
    store.recordings.put(
      { threadId: "t", checkpointId: "c1", taskPath: "a:1", callIndex: 0, node: "a" },
      { kind: "tool", name: "shell", args: {}, result: "one" },
    );
    await saver.putWrites(config, [["x", 1]], "task-1");
    store.recordings.put(
      { threadId: "t", checkpointId: "c1", taskPath: "a:1", callIndex: 1, node: "a" },
      { kind: "tool", name: "shell", args: {}, result: "two" },
    );
    // (PostgreSQL refuses a NUL character in text: the write statement fails.)
    await expect(saver.putWrites(config, [["y", 2]], "task\u0000two")).rejects.toThrow();
    expect(await queryRows(url, "SELECT count(*)::int AS n FROM loopgraph_recordings")).toEqual([{ n: 1 }]);
    expect((await store.recordings.list("t")).map((record) => (record.kind === "tool" ? record.result : undefined))).toEqual([
      "one",
      "two",
    ]);
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
    const api = (path: string) => line.slice("loopgraph ui: ".length).trim().replace("/?token=", `/api/threads/snap${path}?token=`);
    const page = await (await fetch(api(""))).text();
    const files = await (await fetch(api("/files"))).text();
    const shown = JSON.parse(page) as { history: { checkpoints: unknown[] } };
    expect(shown.history.checkpoints.length).toBeGreaterThan(2);
    const { diffs } = JSON.parse(files) as { diffs: { tool: string; paths: string[] }[] };
    expect(diffs.map((diff) => [diff.tool, diff.paths])).toEqual(points.map((p) => [p.tool, p.paths]));
    expect(page + files + ui.lines.join("\n")).not.toContain(server().password);
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
