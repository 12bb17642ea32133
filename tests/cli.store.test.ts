import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** The command failed with exit 2 and one `loopgraph:` line naming the store, no stack trace. */
function expectStoreError(result: { code: number | null; stderr: string }, path: string, message: RegExp): void {
  expect(result.code).toBe(2);
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^loopgraph: /);
  expect(lines[0]).not.toMatch(/internal error/);
  expect(lines[0]).toContain(path);
  expect(lines[0]).toMatch(message);
}

describe("the CLI and a store that is not one", () => {
  it("inspect and status leave another program's database alone: exit 2, same bytes, same journal mode", async () => {
    const { root } = tempWorkspace();
    const path = join(root, "other-app.db");
    const db = new Database(path);
    db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('Ada')");
    db.close();
    const before = readFileSync(path);
    const script = join(root, "script.json");

    for (const args of [["inspect"], ["inspect", "t1"], ["inspect", "t1", "--export-script", script], ["status", "t1"], ["send", "t1", "stop"]]) {
      expectStoreError(await runCli([...args, "--db", path]), path, /is not a loopgraph store \(it has other tables\)/);
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(root).filter((name) => name.startsWith("other-app") || name === "script.json")).toEqual(["other-app.db"]);
    const reopened = new Database(path, { readonly: true });
    expect(reopened.pragma("journal_mode", { simple: true })).toBe("delete");
    reopened.close();
  });

  it("a typo in --db creates nothing: no store at PATH", async () => {
    const { root } = tempWorkspace();
    const typo = join(root, "typo", "x.db");
    for (const args of [["status", "t1"], ["inspect"], ["send", "t1", "stop"], ["replay", "t1", "--verify"]]) {
      expectStoreError(await runCli([...args, "--db", typo]), typo, /^loopgraph: no store at /);
    }
    expect(existsSync(join(root, "typo"))).toBe(false);
  });

  it("a text file, a directory and a store of a newer loopgraph are one-line errors", async () => {
    const { root } = tempWorkspace();
    const text = join(root, "notes.db");
    writeFileSync(text, "just some notes\n");
    expectStoreError(await runCli(["inspect", "--db", text]), text, /is not a SQLite database/);
    expectStoreError(await runCli(["inspect", "--db", root]), root, /is a directory, not a store/);

    const future = join(root, "future.db");
    const db = new Database(future);
    db.exec("CREATE TABLE loopgraph_threads (thread_id TEXT PRIMARY KEY)");
    db.pragma("user_version = 99");
    db.close();
    expectStoreError(await runCli(["status", "t1", "--db", future]), future, /has store schema version 99, newer than this loopgraph understands/);
  });
});
