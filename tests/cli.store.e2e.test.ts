import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { cleanEnv, eventually, hasStackTrace, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, recordedStatus, resume, runArgs, startRun } from "./helpers/e2e.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

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

/** Another program's database, `other-app.db` in `root`, made by `sql`. */
function otherAppDatabase(root: string, sql: string): string {
  const path = join(root, "other-app.db");
  const db = new Database(path);
  db.exec(sql);
  db.close();
  return path;
}

describe("the CLI and a store that is not one", () => {
  it("inspect and status leave another program's database alone: exit 2, same bytes, same journal mode", async () => {
    const { root } = tempWorkspace();
    const path = otherAppDatabase(
      root,
      "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('Ada')",
    );
    const before = readFileSync(path);
    const script = join(root, "script.json");

    for (const args of [
      ["inspect"],
      ["inspect", "t1"],
      ["inspect", "t1", "--export-script", script],
      ["status", "t1"],
      ["send", "t1", "stop"],
    ]) {
      expectStoreError(await runCli([...args, "--db", path]), path, /is not a loopgraph store \(it has other tables\)/);
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(root).filter((name) => name.startsWith("other-app") || name === "script.json")).toEqual(["other-app.db"]);
    const reopened = new Database(path, { readonly: true });
    expect(reopened.pragma("journal_mode", { simple: true })).toBe("delete");
    reopened.close();
  });

  it("another program's database with a loopgraph_threads table of its own: every command refuses it in one line (exit 2), and nothing is created in it", async () => {
    const { root, dir } = tempWorkspace({ git: true });
    const path = otherAppDatabase(
      root,
      "CREATE TABLE loopgraph_threads (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO loopgraph_threads (title) VALUES ('mine')",
    );
    const before = readFileSync(path);
    const script = join(ROOT, "tests/fixtures/looper/gated-coder.script.yaml");
    const commands = [
      ["inspect"],
      ["status", "t1"],
      ["send", "t1", "stop"],
      ["resume", "t1"],
      ["run", "coder", "--task", "x", "--model", `scripted:${script}`, "--workspace", dir],
    ];
    for (const args of commands) {
      expectStoreError(
        await runCli([...args, "--db", path], { cwd: dir }),
        path,
        /is not a loopgraph store \(its table loopgraph_threads is another program's\)/,
      );
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(root).filter((name) => name.startsWith("other-app"))).toEqual(["other-app.db"]);
  });

  it("a store in a read-only folder: inspect and status read it (nothing is created beside it); send, which writes, says it is read-only", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const folder = join(ws.root, "read-only");
    mkdirSync(folder);
    const db = join(folder, "store.db");
    const ran = await runCli(
      runArgs(
        { dir: ws.dir, db },
        { graph: "coder", thread: "t1", script: oneLineScript(ws.root), task: "write one line", approval: "auto" },
      ),
    );
    expect(ran.code, ran.stderr).toBe(0);
    chmodSync(ws.root, 0o755);
    chmodSync(folder, 0o555);
    onCleanup(() => chmodSync(folder, 0o755));
    // chmod does not stop root: as root, the commands run as nobody.
    const reader = process.getuid?.() === 0 ? { user: 65534 } : {};
    for (const args of [["inspect"], ["inspect", "t1"], ["status", "t1"]]) {
      const result = await runCli([...args, "--db", db], reader);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/t1|IDLE/);
    }
    expectStoreError(await runCli(["send", "t1", "stop", "--db", db], reader), db, /is read-only: make it \(and its folder\) writable/);
    expect(readdirSync(folder)).toEqual(["store.db"]);
  });

  it("a store left with a journal by a process killed mid-write (as a new store switches to WAL): readers roll it back where they may write, else say what to do", async () => {
    const { root } = tempWorkspace();
    const folder = join(root, "stores");
    mkdirSync(folder);
    const db = join(folder, "store.db");
    // A writer killed inside a transaction that spilled pages into the file: its journal is hot.
    const killedMidWrite = `const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))});
      const db = new Database(${JSON.stringify(db)}); db.pragma("cache_size = 1"); db.exec("BEGIN; CREATE TABLE filler (x)");
      const insert = db.prepare("INSERT INTO filler VALUES (randomblob(4000))"); for (let i = 0; i < 300; i++) insert.run();
      process.kill(process.pid, "SIGKILL");`;
    expect(spawnSync(process.execPath, ["-e", killedMidWrite]).signal).toBe("SIGKILL");
    expect(existsSync(`${db}-journal`)).toBe(true);
    // In a read-only folder nothing may undo it: one line that says what to do.
    chmodSync(folder, 0o555);
    onCleanup(() => chmodSync(folder, 0o755));
    const reader = process.getuid?.() === 0 ? { user: 65534 } : {};
    chmodSync(root, 0o755);
    expectStoreError(await runCli(["threads", "list", "--db", db], reader), db, /holds a write that a killed process left unfinished/);
    // Where it may write, the reader rolls it back (as any writer would) and reads the store as it was: empty.
    chmodSync(folder, 0o755);
    const listed = await runCli(["threads", "list", "--db", db]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(existsSync(`${db}-journal`)).toBe(false);
  });

  it("a typo in --db creates nothing: no store at PATH", async () => {
    const { root } = tempWorkspace();
    const typo = join(root, "typo", "x.db");
    for (const args of [["status", "t1"], ["inspect"], ["send", "t1", "stop"], ["replay", "t1", "--verify"]]) {
      expectStoreError(await runCli([...args, "--db", typo]), typo, /^loopgraph: no store at /);
    }
    expect(existsSync(join(root, "typo"))).toBe(false);
  });

  it("a database URL (--db or LOOPGRAPH_DB) is never a folder: PostgreSQL unreachable or another kind of database is one line without the password, and creates nothing", async () => {
    const { root } = tempWorkspace();
    // Port 1 of this machine: nothing listens there, the connection is refused at once.
    const url = "postgres://team:s3cr@t-pw@127.0.0.1:1/runs?sslmode=disable";
    const shown = "postgres://team:***@127.0.0.1:1/runs?sslmode=disable";
    const other = "mysql://team:s3cr@t-pw@db.example/runs";
    const script = join(ROOT, "tests/fixtures/looper/gated-coder.script.yaml");
    const commands = [
      ["run", "coder", "--task", "x", "--model", `scripted:${script}`],
      ["chat", "--model", `scripted:${script}`],
      ["status", "t1"],
      ["inspect"],
      ["send", "t1", "stop"],
      ["resume", "t1"],
    ];
    for (const args of commands) {
      const viaFlag = await runCli([...args, "--db", url], { cwd: root });
      expectStoreError(
        viaFlag,
        shown,
        /^loopgraph: cannot reach the PostgreSQL server of .*: check that it runs and that the host and port are right$/,
      );
      const viaEnv = await runCli(args, { cwd: root, env: cleanEnv({ LOOPGRAPH_DB: other }) });
      expectStoreError(
        viaEnv,
        "LOOPGRAPH_DB mysql://team:***@db.example/runs",
        /is a database URL loopgraph cannot use: give a postgres:\/\/ URL, or a SQLite file's path/,
      );
      for (const result of [viaFlag, viaEnv]) expect(result.stdout + result.stderr).not.toContain("s3cr");
    }
    expect(readdirSync(root).filter((name) => /postgres|mysql|loopgraph/.test(name))).toEqual([]);
    expect(existsSync(join(root, "postgres:"))).toBe(false);
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
    expectStoreError(
      await runCli(["status", "t1", "--db", future]),
      future,
      /has store schema version 99, newer than this loopgraph understands/,
    );
  });
});

/** Runs `during` while another connection holds a write lock (`begin`) on the store `db`; the lock goes when it ends, whatever happens. */
async function whileLocked<T>(
  db: string,
  begin: "BEGIN IMMEDIATE" | "BEGIN EXCLUSIVE",
  during: (holder: Database.Database) => Promise<T>,
): Promise<T> {
  const holder = new Database(db);
  try {
    holder.exec(begin);
    return await during(holder);
  } finally {
    if (holder.inTransaction) holder.exec("ROLLBACK");
    holder.close();
  }
}

/** A scripted Coder that appends one line to log.txt, in the test's folder. */
function oneLineScript(root: string): string {
  const script = join(root, "one-line.script.yaml");
  writeFileSync(
    script,
    'responses:\n  - node: coder\n    tool_calls:\n      - { name: shell, args: { command: "echo one >> log.txt" } }\n  - { node: coder, content: "wrote one line" }\n',
  );
  return script;
}

/** Garbles the root page of `table` in the SQLite file `path`: its header and schema stay valid, so the store opens; reading the table fails. */
function garbleTable(path: string, table: string): void {
  const db = new Database(path);
  const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = ?").get(table) as { rootpage: number };
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  db.close();
  const bytes = readFileSync(path);
  for (let i = (rootpage - 1) * pageSize; i < rootpage * pageSize; i++) bytes[i] = (i * 7) & 255;
  writeFileSync(path, bytes);
}

describe("a store that fails under run and resume", () => {
  it("a damaged store (valid header, a garbled page): run and resume say it is damaged in one line, exit 2, as the other commands do", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const spec = { graph: "coder", script: oneLineScript(ws.root), task: "write one line", approval: "auto" as const };
    expect((await runCli(runArgs(ws, { ...spec, thread: "t1" }), { cwd: ws.dir })).code).toBe(0);
    garbleTable(ws.db, "loopgraph_threads");
    for (const args of [["resume", "t1", "--db", ws.db], runArgs(ws, { ...spec, thread: "t2" }), ["status", "t1", "--db", ws.db]]) {
      const result = await runCli(args, { cwd: ws.dir });
      expectStoreError(result, ws.db, /is damaged \(malformed database\): restore it from a backup/);
      expect(hasStackTrace(result.stdout + result.stderr)).toBe(false);
    }
  });

  it("a full disk (a file size limit): a run stops at its last checkpoint (130) with one line naming the store; resume on it is one line, exit 2; resume with room finishes", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const spec = { graph: "coder", thread: "full", script: oneLineScript(ws.root), task: "write one line", approval: "auto" as const };
    // Room for the new store and the thread's record (about 100 KB), not for the whole run (about 600 KB).
    const run = await runCli(runArgs(ws, spec), { cwd: ws.dir, fileSizeLimit: 250_000 });
    expect(run.code, run.stdout + run.stderr).toBe(130);
    const reason = parseEvents(run.stdout).at(-1)!.reason as string;
    expect(reason.startsWith(`${ws.db} cannot be written (`), reason).toBe(true);
    expect(reason).toMatch(/\): the run stopped at its last checkpoint; continue it with `loopgraph resume full` once its disk has room$/);
    expect(hasStackTrace(run.stdout + run.stderr)).toBe(false);

    const stillFull = await runCli(["resume", "full", "--db", ws.db], { fileSizeLimit: 4096 });
    expectStoreError(stillFull, ws.db, /cannot be written \(.+\): make room on its disk \(or check the disk\), then try again$/);

    const resumed = await resume(ws, "full", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await recordedStatus(ws.db, "full")).toBe("finished");
  });
});

describe("a store whose disk fills up at a thread's first steps", () => {
  it("the run stops (130); resume with room finishes it: a step's stored writes without the checkpoint after them are not the graph's end", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const spec = {
      graph: "coder-review",
      thread: "early-full",
      script: join(ROOT, "tests/fixtures/chaos/steps.script.yaml"),
      task: "append the lines",
      approval: "auto" as const,
    };
    // Room for the store, the thread and its first checkpoints, then the step writes and its checkpoint fail apart.
    const run = await runCli(runArgs(ws, spec), { cwd: ws.dir, fileSizeLimit: 150_000 });
    expect(run.code, run.stdout + run.stderr).toBe(130);
    const resumed = await resume(ws, "early-full", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8").trim().split("\n")).toHaveLength(10);
  });
});

describe("a store locked by another program during a run", () => {
  // The Coder's first answer comes once the test creates `gate-coder`: the lock is taken while it
  // waits, so the write of that answer's step meets it.
  const SCRIPT = [
    "responses:",
    "  - node: coder",
    "    wait_for: gate-coder",
    "    tool_calls:",
    '      - { name: shell, args: { command: "echo one >> log.txt" } }',
    '  - { node: coder, content: "wrote one line" }',
  ].join("\n");
  const lockedMessage = (db: string, waited: string) =>
    `${db} is locked by another program (waited ${waited} s): the run stopped at its last checkpoint; continue it with \`loopgraph resume locked\` once the other program is done`;

  /**
   * A Coder run whose store gives up on a lock after `busyTimeoutMs`, at its Coder, waiting for its
   * first answer until `answer()` opens the gate.
   */
  async function startLockedRun(busyTimeoutMs: number) {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const script = join(ws.root, "locked.script.yaml");
    writeFileSync(script, `${SCRIPT}\n`);
    const env = cleanEnv({ LOOPGRAPH_BUSY_TIMEOUT_MS: String(busyTimeoutMs) });
    const run = startRun(ws, { graph: "coder", thread: "locked", script, task: "write one line", approval: "auto" }, { env });
    await run.waitForNode("coder");
    return { ws, run, answer: () => writeFileSync(join(ws.root, "gate-coder"), "") };
  }

  it("beyond the busy timeout, the run stops interrupted (130) with one line naming the store and how to resume; resume continues once the lock is gone", async () => {
    const { ws, run, answer } = await startLockedRun(300);
    const result = await whileLocked(ws.db, "BEGIN EXCLUSIVE", () => {
      answer();
      return run.done;
    });
    expect(result.code, result.stderr).toBe(130);
    const message = lockedMessage(ws.db, "0.3");
    const events = parseEvents(result.stdout);
    // Not a failure (no `error` event): the run stopped, and run_finished says why and how to go on.
    expect(events.filter((event) => event.type === "error")).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      type: "run_finished",
      status: "interrupted",
      outcome: "interrupted",
      exitCode: 130,
      reason: message,
    });
    expect(result.stderr).not.toMatch(/internal error/);
    expect(hasStackTrace(result.stdout + result.stderr)).toBe(false);
    expect(existsSync(join(ws.dir, "log.txt"))).toBe(false);

    // The lock was still held when the run ended, so its record could not say so: the process is
    // gone, and readers see the thread interrupted.
    const status = await runCli(["status", "locked", "--db", ws.db]);
    expect(status.stdout).toMatch(/interrupted/);
    expect(status.stdout).toMatch(/which ran it, is gone/);

    const resumed = await resume(ws, "locked", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\n");
    expect((await finalState<{ outputs: Record<string, unknown> }>(ws.db, "locked")).outputs.coder).toBeDefined();
  });

  it("a lock taken while a shell command runs and held past its end (the command's process-group record meets it): the same one line, 130, and resume finishes", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const script = join(ws.root, "shell.script.yaml");
    // The command says it runs (a file in the workspace), then runs on for a second: the lock
    // is taken in between, so the write that records the command's end meets it.
    const command = "touch command-runs; sleep 1; echo one >> log.txt";
    writeFileSync(
      script,
      [
        "responses:",
        "  - node: coder",
        "    tool_calls:",
        `      - { name: shell, args: { command: ${JSON.stringify(command)} } }`,
        '  - { node: coder, content: "wrote one line" }',
        "",
      ].join("\n"),
    );
    const env = cleanEnv({ LOOPGRAPH_BUSY_TIMEOUT_MS: "300" });
    const run = startRun(ws, { graph: "coder", thread: "locked", script, task: "write one line", approval: "auto" }, { env });
    expect(await eventually(() => existsSync(join(ws.dir, "command-runs")), Boolean)).toBe(true);
    const result = await whileLocked(ws.db, "BEGIN IMMEDIATE", () => run.done);
    expect(result.code, result.stdout + result.stderr).toBe(130);
    expect(parseEvents(result.stdout).at(-1)).toMatchObject({ type: "run_finished", exitCode: 130, reason: lockedMessage(ws.db, "0.3") });
    expect(result.stderr).not.toMatch(/internal error|SqliteError|Unhandled/);
    expect(hasStackTrace(result.stdout + result.stderr)).toBe(false);

    const resumed = await resume(ws, "locked", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await recordedStatus(ws.db, "locked")).toBe("finished");
  });

  it("when the lock is gone before the run's end is written, the thread's record says it stopped on the lock", async () => {
    // The lock is taken before the Coder's answer is let through: the write of its step comes at
    // once (within the gate's 50 ms poll) and gives up 3 s later; the run's end record is written
    // next and waits up to 3 s more. The lock is let go 4.5 s after the answer: after the step's
    // write gave up, before the record's does, with 1.5 s to spare either way.
    const { ws, run, answer } = await startLockedRun(3000);
    const result = await whileLocked(ws.db, "BEGIN EXCLUSIVE", async (holder) => {
      answer();
      await new Promise((resolveHold) => setTimeout(resolveHold, 4500));
      holder.exec("ROLLBACK");
      return run.done;
    });
    expect(result.code, result.stdout + result.stderr).toBe(130);
    const inspected = await runCli(["inspect", "locked", "--json", "--db", ws.db]);
    expect(JSON.parse(inspected.stdout).thread).toMatchObject({ status: "interrupted", error: lockedMessage(ws.db, "3") });

    const resumed = await resume(ws, "locked", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\n");
  });
});
