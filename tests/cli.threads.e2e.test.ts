/** `loopgraph threads list | delete | prune` on a real store, with the real CLI. */
import { hostname } from "node:os";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT, runCli, trustIn } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const GRAPH = [
  "version: 1",
  "name: tiny",
  "nodes:",
  "  count: { kind: function, module: ./count.mjs }",
  "edges:",
  "  - { from: START, to: count }",
  "  - { from: count, to: END }",
  "",
].join("\n");

describe("loopgraph threads", () => {
  it("lists by status, graph and limit; deletes a thread with all its rows and artifacts; refuses a running one; prunes the old ones", async () => {
    const ws = tempWorkspace({
      git: true,
      files: { "graphs/tiny.yaml": GRAPH, "graphs/count.mjs": "export default () => ({ output: 1 });\n" },
    });
    trustIn(ws.dir);
    const cli = (...args: string[]) => runCli([...args, "--db", ws.db], { cwd: ws.dir, env: cleanEnv() });
    for (const thread of ["a", "b", "c"]) expect((await cli("run", "tiny", "--thread", thread)).code).toBe(0);
    const review = await cli(
      "run",
      "example-review",
      "--task",
      "x",
      "--thread",
      "r",
      "--model",
      `scripted:${join(ROOT, "examples", "example-review.script.yaml")}`,
    );
    expect(review.code, review.stderr).toBe(0);

    const ids = async (...args: string[]) =>
      (JSON.parse((await cli("threads", "list", "--json", ...args)).stdout) as { threadId: string }[]).map((t) => t.threadId).sort();
    expect(await ids()).toEqual(["a", "b", "c", "r"]);
    expect(await ids("--graph", "tiny")).toEqual(["a", "b", "c"]);
    expect(await ids("--status", "finished", "--graph", "example-review")).toEqual(["r"]);
    expect(await ids("--limit", "2")).toHaveLength(2);
    expect((await cli("threads", "list", "--status", "done")).stderr).toMatch(/--status done: use one of running, queued/);

    // Delete: every row of the thread goes, and its artifacts folder; the others stay.
    const artifacts = join(ws.dir, ".loopgraph", "artifacts", "a");
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(join(artifacts, "out.txt"), "big output\n");
    const deleted = await cli("threads", "delete", "a");
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain("deleted a");
    expect(existsSync(artifacts)).toBe(false);
    const db = new Database(ws.db, { readonly: true });
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'loopgraph_%'").all() as { name: string }[]
    ).map((row) => row.name);
    for (const table of tables) {
      const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((column) => column.name);
      if (columns.includes("thread_id"))
        expect((db.prepare(`SELECT count(*) AS n FROM ${table} WHERE thread_id = 'a'`).get() as { n: number }).n, table).toBe(0);
    }
    expect((db.prepare("SELECT count(*) AS n FROM loopgraph_checkpoints WHERE thread_id = 'b'").get() as { n: number }).n).toBeGreaterThan(
      0,
    );
    db.close();
    expect((await cli("inspect", "a")).code).toBe(2);

    // An unknown thread among others: nothing is deleted. A thread a live process runs: refused.
    const unknown = await cli("threads", "delete", "b", "nope");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no thread "nope"');
    expect(await ids()).toEqual(["b", "c", "r"]);
    const writer = new Database(ws.db);
    writer
      .prepare("UPDATE loopgraph_threads SET status = 'running', pid = ?, owner_host = ?, owner_start = NULL WHERE thread_id = 'b'")
      .run(process.pid, hostname());
    const running = await cli("threads", "delete", "c", "b");
    expect(running.code).toBe(2);
    expect(running.stderr).toContain(`thread "b" is running in process ${process.pid}`);
    expect(await ids()).toEqual(["b", "c", "r"]);
    writer.prepare("UPDATE loopgraph_threads SET status = 'finished' WHERE thread_id = 'b'").run();

    // Prune: only what has not changed for longer than the age.
    writer.prepare("UPDATE loopgraph_threads SET updated_at = '2020-01-01T00:00:00.000Z' WHERE thread_id IN ('b', 'r')").run();
    writer.close();
    const dry = await cli("threads", "prune", "--older-than", "30d", "--dry-run");
    expect(dry.stdout).toMatch(/would delete b .*\n.*would delete r|would delete r .*\n.*would delete b/);
    expect(await ids()).toEqual(["b", "c", "r"]);
    expect((await cli("threads", "prune", "--older-than", "30d", "--graph", "tiny")).stdout).toBe("deleted b\n");
    expect(await ids()).toEqual(["c", "r"]);
    expect((await cli("threads", "prune", "--older-than", "soon")).stderr).toContain("--older-than soon: give an age such as 30d");
  });
});
