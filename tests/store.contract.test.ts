/**
 * What every store backend keeps (src/store/registry.ts lists them): its tables (threads and
 * their owners, the inbox, recordings, the snapshot log, repository workspaces) and its saver's
 * history reads, each case run on every backend. A backend needs a harness here (how to reach its
 * database beside the store, as another process would); PostgreSQL's cases are skipped with one
 * line where no server can start. What one backend alone does (SQLite's file and locks,
 * PostgreSQL's outages) is tested in that backend's own files; LangGraph's conformance suites run
 * on both savers (tests/checkpoint.conformance.test.ts, tests/checkpoint.postgres-conformance.test.ts).
 */
import { spawnSync } from "node:child_process";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { canReadHistory, HISTORY_PAGE_SIZE, type KnownList } from "../src/checkpoint/history-reader.js";
import { checkpointState, threadHistory } from "../src/engine/inspect.js";
import type { RepoResult } from "../src/runs/repo-workspaces.js";
import { asSeen, HEARTBEAT_EXPIRY_MS, processStart, THIS_PROCESS } from "../src/runs/thread-registry.js";
import { storeBackends } from "../src/store/registry.js";
import { openStore, type Store } from "../src/store/store.js";
import { queryRows, usePostgres } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";
import { listedContents, recordKey, toolRecord } from "./helpers/records.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

/** How the suite reaches a backend's database beside the store. */
interface Harness {
  /** Whether the backend cannot be tested here (its tests are then skipped with one line). */
  missing(): boolean;
  /** Registers what the block's tests need (a server); gives a new store's location for each test. */
  use(): () => string;
  /** A statement on a connection of its own, as another process runs it ($1, $2, … each used once, in order): the rows it returns. */
  query(location: string, sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Whether the backend holds queued runs, and so their repositories' workspaces. */
  queues: boolean;
}

const HARNESSES: Record<string, Harness> = {
  sqlite: {
    missing: () => false,
    use: () => () => tempWorkspace().db,
    query: async (location, sql, params = []) => {
      const db = new Database(location);
      try {
        const statement = db.prepare(sql.replace(/\$\d+/g, "?"));
        if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
        statement.run(...params);
        return [];
      } finally {
        db.close();
      }
    },
    queues: false,
  },
  postgres: {
    missing: () => lacks("postgres", "the store contract on PostgreSQL"),
    use: () => {
      const server = usePostgres();
      let databases = 0;
      return () => server().createDatabase(`contract_${(databases += 1)}`);
    },
    query: (location, sql, params) => queryRows(location, sql, params),
    queues: true,
  },
};

const NEW_THREAD = { graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" } as const;

/** A pid no process has now: one of a process that has ended. */
function deadPid(): number {
  return spawnSync("true").pid!;
}

it("the registry gives a location to the one backend that accepts it: a postgres:// URL to PostgreSQL, a path to SQLite, another URL to none", () => {
  const backendOf = (location: string) => storeBackends.forLocation(location)?.name;
  expect(backendOf("postgres://u@h/db")).toBe("postgres");
  expect(backendOf("postgresql://h/db")).toBe("postgres");
  expect(backendOf("./postgres/runs.db")).toBe("sqlite");
  expect(backendOf("/tmp/store.db")).toBe("sqlite");
  expect(backendOf("mysql://h/db")).toBeUndefined();
});

const BACKENDS = storeBackends.all().map((backend) => ({ name: backend.name, harness: HARNESSES[backend.name] }));

describe.each(BACKENDS)("the $name store", ({ name, harness: given }) => {
  if (!given) throw new Error(`no harness for the store backend "${name}": add one to HARNESSES`);
  const harness = given;

  describe.skipIf(harness.missing())("keeps the contract of every store", () => {
    const newLocation = harness.use();

    /** A new store, closed after the test; `closedByTest`: the test closes it (a PostgreSQL store is closed once). */
    async function open(closedByTest = false): Promise<{ store: Store; location: string }> {
      const location = newLocation();
      const store = await openStore({ db: location, env: {} }, "create");
      if (!closedByTest) onCleanup(() => store.close());
      return { store, location };
    }

    /** A store with thread `t`, ended with `status`. */
    async function storeWith(status: "paused" | "finished" = "paused"): Promise<{ store: Store; location: string }> {
      const opened = await open();
      expect(await opened.store.threads.create({ threadId: "t", ...NEW_THREAD })).toBeUndefined();
      await opened.store.threads.markEnded("t", status, undefined, status === "paused" ? { reason: "breakpoint", node: "a" } : undefined);
      return opened;
    }

    /** Writes the owner of thread `t` as another process would have: running, in `owner`. */
    async function ownedBy(location: string, owner: { pid: number; host: string; start?: number | null; heartbeatAt?: string }) {
      await harness.query(
        location,
        `UPDATE loopgraph_threads SET status = 'running', pid = $1, owner_host = $2, owner_start = $3, heartbeat_at = $4 WHERE thread_id = 't'`,
        [owner.pid, owner.host, owner.start ?? null, owner.heartbeatAt ?? new Date().toISOString()],
      );
    }

    describe("threads and their owners", () => {
      it("takes an unowned thread: running in this process (pid, host, start time, heartbeat); this process may claim it again", async () => {
        const { store } = await storeWith();
        const claim = await store.threads.claim("t", { approval: "auto" });
        expect(claim).toMatchObject({ claimed: true, before: { status: "paused", pause: { reason: "breakpoint" } } });
        const record = (await store.threads.get("t"))!;
        expect(record).toMatchObject({ status: "running", pid: process.pid, host: THIS_PROCESS.host, approval: "auto" });
        expect(record.ownerStart).toBe(processStart(process.pid));
        expect(record.pause).toBeUndefined();
        expect(Date.now() - Date.parse(record.heartbeatAt!)).toBeLessThan(HEARTBEAT_EXPIRY_MS);
        expect(await store.threads.claim("t")).toMatchObject({ claimed: true });
        expect(await store.threads.claim("nope")).toBeUndefined();
        expect((await store.threads.list()).map((thread) => thread.threadId)).toEqual(["t"]);
      });

      it("release gives the thread back as it was; markEnded ends the hold (the pid stays as who ran it)", async () => {
        const { store } = await storeWith();
        const claim = await store.threads.claim("t");
        if (!claim?.claimed) throw new Error("not claimed");
        await store.threads.release("t", claim.before);
        expect(await store.threads.get("t")).toMatchObject({ status: "paused", pause: { reason: "breakpoint", node: "a" } });
        await store.threads.claim("t");
        await store.threads.markEnded("t", "finished");
        expect(await store.threads.get("t")).toMatchObject({ status: "finished", pid: process.pid });
        expect(asSeen((await store.threads.get("t"))!).status).toBe("finished");
      });

      it("requeueOwned puts back in the queue a thread this process holds, in one statement; one another process took meanwhile is left alone", async () => {
        const { store, location } = await storeWith();
        await store.threads.claim("t");
        expect(await store.threads.requeueOwned("t")).toBe(true);
        expect(await store.threads.get("t")).toMatchObject({ status: "queued", pause: undefined, error: undefined });
        expect(await store.threads.requeueOwned("t")).toBe(false);
        // Taken by a worker of another host between this worker's outage and its requeue: still theirs.
        await store.threads.claim("t");
        await ownedBy(location, { pid: process.pid, host: "elsewhere.example", start: 1 });
        expect(await store.threads.requeueOwned("t")).toBe(false);
        expect(await store.threads.get("t")).toMatchObject({ status: "running", host: "elsewhere.example" });
        // And by a later process of this host that was given this pid.
        await ownedBy(location, { pid: process.pid, host: THIS_PROCESS.host, start: (processStart(process.pid) ?? 0) + 1 });
        expect(await store.threads.requeueOwned("t")).toBe(processStart(process.pid) === undefined);
      });

      it("creating a thread whose id is taken writes nothing and returns the record that holds it", async () => {
        const { store } = await storeWith("finished");
        expect(await store.threads.create({ threadId: "t", ...NEW_THREAD, task: "another" })).toMatchObject({
          threadId: "t",
          task: "task",
          status: "finished",
        });
        expect((await store.threads.get("t"))?.task).toBe("task");
      });

      it("refuses a thread a live process of this host runs (the pid runs, with the start time recorded)", async () => {
        const { store, location } = await storeWith();
        const parent = process.ppid;
        await ownedBy(location, { pid: parent, host: THIS_PROCESS.host, start: processStart(parent) });
        expect(await store.threads.claim("t")).toMatchObject({ claimed: false, holder: { pid: parent, status: "running" } });
        expect(asSeen((await store.threads.get("t"))!).status).toBe("running");
      });

      it("takes over a thread whose process is gone, and readers see it interrupted until then", async () => {
        const { store, location } = await storeWith();
        const gone = deadPid();
        await ownedBy(location, { pid: gone, host: THIS_PROCESS.host, start: 12345 });
        expect(asSeen((await store.threads.get("t"))!)).toMatchObject({
          status: "interrupted",
          goneOwner: gone,
          error: `process ${gone}, which ran it, is gone`,
        });
        expect(await store.threads.claim("t")).toMatchObject({ claimed: true, before: { status: "running", pid: gone } });
        expect(await store.threads.get("t")).toMatchObject({ status: "running", pid: process.pid });
      });

      it.skipIf(processStart(process.pid) === undefined)(
        "takes over a thread whose pid is alive with another start time: the pid was given to a later process",
        async () => {
          const { store, location } = await storeWith();
          const parent = process.ppid;
          await ownedBy(location, { pid: parent, host: THIS_PROCESS.host, start: processStart(parent)! - 1 });
          expect(asSeen((await store.threads.get("t"))!)).toMatchObject({ status: "interrupted", goneOwner: parent });
          expect(await store.threads.claim("t")).toMatchObject({ claimed: true });
        },
      );

      it("a thread of another host: refused while its heartbeat is fresh, taken over once it expired", async () => {
        const { store, location } = await storeWith();
        // The pid is this process's own: on another host it says nothing, only the heartbeat does.
        const fresh = new Date(Date.now() - (HEARTBEAT_EXPIRY_MS - 5_000)).toISOString();
        await ownedBy(location, { pid: process.pid, host: "elsewhere.example", start: 1, heartbeatAt: fresh });
        expect(await store.threads.claim("t")).toMatchObject({ claimed: false, holder: { host: "elsewhere.example" } });
        expect(asSeen((await store.threads.get("t"))!).status).toBe("running");

        const expired = new Date(Date.now() - (HEARTBEAT_EXPIRY_MS + 1_000)).toISOString();
        await ownedBy(location, { pid: process.pid, host: "elsewhere.example", start: 1, heartbeatAt: expired });
        expect(asSeen((await store.threads.get("t"))!)).toMatchObject({
          status: "interrupted",
          error: `process ${process.pid} on elsewhere.example, which ran it, has not been heard of since ${expired}`,
        });
        expect(await store.threads.claim("t")).toMatchObject({ claimed: true, before: { host: "elsewhere.example" } });
        expect(await store.threads.get("t")).toMatchObject({ host: THIS_PROCESS.host, pid: process.pid });
      });

      it("claims made at once: exactly one finds the thread as it was", async () => {
        const { store } = await open();
        await store.threads.create({ threadId: "race", ...NEW_THREAD });
        await store.threads.markEnded("race", "interrupted");
        // Ten claims at once (on PostgreSQL, ten pool connections): the row lock makes them take turns, so
        // exactly one finds the thread as it was (interrupted) and the others find it already running here.
        const claims = await Promise.all(Array.from({ length: 10 }, () => store.threads.claim("race")));
        expect(claims.every((claim) => claim?.claimed)).toBe(true);
        expect(claims.filter((claim) => claim?.claimed && claim.before.status === "interrupted")).toHaveLength(1);
      });

      it("records the command groups of a running thread while they run", async () => {
        const { store } = await storeWith();
        await store.threads.claim("t");
        await store.threads.commandStarted("t", 4242);
        expect((await store.threads.get("t"))?.commandGroups?.map((group) => group.pgid)).toEqual([4242]);
        await store.threads.commandEnded("t", 4242);
        expect((await store.threads.get("t"))?.commandGroups).toBeUndefined();
      });

      it("a thread is deleted with all its rows, unless a live process runs it", async () => {
        const { store, location } = await open();
        for (const id of ["t", "gone"]) {
          await store.threads.create({ threadId: id, ...NEW_THREAD });
          await store.threads.markEnded(id, "finished");
          await store.inbox.post(id, "stop", { command: "stop" });
        }
        await ownedBy(location, { pid: process.ppid, host: THIS_PROCESS.host, start: processStart(process.ppid) });
        expect(await store.threads.delete("t")).toMatchObject({ deleted: false, holder: { pid: process.ppid } });
        expect(await store.threads.delete("gone")).toMatchObject({ deleted: true, record: { threadId: "gone" } });
        expect(await store.threads.delete("gone")).toBeUndefined();
        expect(await harness.query(location, "SELECT thread_id FROM loopgraph_inbox ORDER BY thread_id")).toEqual([{ thread_id: "t" }]);
        expect((await store.threads.list()).map((thread) => thread.threadId)).toEqual(["t"]);
      });
    });

    it("the inbox keeps commands in order, messages for a chat apart, and forgets a removed command", async () => {
      const { store } = await open();
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

    it("evals keep their trials in the order planned, each with its thread from the start and its result once written", async () => {
      const { store } = await open();
      const variants = [{ label: "A", graph: "coder-review", graphFile: "/g/coder-review.yaml", model: "scripted:/s.yaml" }];
      const record = {
        id: "e-0000beef",
        suiteFile: "/s/suite.yaml",
        suiteName: "suite",
        suiteHash: "h1",
        variants,
        tasks: [
          { id: "b-task", tags: ["js"] },
          { id: "a-task", tags: [] },
        ],
        repeat: 2,
        concurrency: 1,
        status: "running" as const,
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: "2026-01-01T00:00:00.000Z",
      };
      const planned = ["b-task", "a-task"].flatMap((task) =>
        [1, 2].map((repetition) => ({ task, variant: "A", repetition, threadId: `e-0000beef.${task}.A.${repetition}` })),
      );
      await store.evals.create(record, planned);
      expect(await store.evals.get(record.id)).toEqual(record);
      expect(await store.evals.trials(record.id)).toEqual(planned);
      const result = {
        task: "a-task",
        variant: "A",
        repetition: 2,
        threadId: "e-0000beef.a-task.A.2",
        outcome: "check-failed" as const,
        reason: "`node --test` exited with 1",
        rounds: 2,
        tokens: { inputTokens: 10, outputTokens: 3 },
        wallMs: 1234,
        finishedAt: "2026-01-01T00:01:00.000Z",
      };
      await store.evals.finishTrial(record.id, result);
      expect((await store.evals.trials(record.id)).map((trial) => trial.result)).toEqual([undefined, undefined, undefined, result]);
      await store.evals.setStatus(record.id, "stopped");
      expect((await store.evals.list()).map((listed) => [listed.id, listed.status])).toEqual([[record.id, "stopped"]]);
      expect(await store.evals.evalOfThread("e-0000beef.b-task.A.1")).toBe(record.id);
      expect(await store.evals.evalOfThread("other")).toBeUndefined();
      // A second eval's thread ids cannot be a first one's: each trial is a thread of its own.
      await expect(store.evals.create({ ...record, id: "e-0000cafe" }, planned.slice(0, 1))).rejects.toThrow();
      expect(await store.evals.get("e-0000cafe")).toBeUndefined();
      // An eval queued for the workers (`eval --queue`) is read back as such, with its tasks.
      const queued = { ...record, id: "e-0000f00d", queue: true as const };
      await store.evals.create(queued, [{ task: "a-task", variant: "A", repetition: 1, threadId: "e-0000f00d.a-task.A.1" }]);
      expect(await store.evals.get(queued.id)).toEqual(queued);
      await store.evals.delete(record.id);
      expect(await store.evals.get(record.id)).toBeUndefined();
      expect(await store.evals.trials(record.id)).toEqual([]);
      expect(await store.evals.evalOfThread("e-0000beef.b-task.A.1")).toBeUndefined();
    });

    describe("recordings", () => {
      it("reads a thread's records back in the order they were made, with where they were made", async () => {
        const { store } = await open();
        store.recordings.put(recordKey("coder:a|model:b", 0), {
          kind: "model",
          output: {
            content: "hi",
            toolCalls: [{ id: "c1", name: "shell", args: { command: "ls" } }],
            usage: { inputTokens: 3, outputTokens: 1 },
          },
        });
        store.recordings.put(recordKey("coder:a|tools:c", 0), toolRecord("file.txt"));
        store.recordings.put(recordKey("judge:d", 0), { kind: "model", error: { kind: "exhausted", message: "scripted model exhausted" } });
        const records = await store.recordings.list("t1");
        expect(records.map((r) => [r.kind, r.taskPath, r.callIndex])).toEqual([
          ["model", "coder:a|model:b", 0],
          ["tool", "coder:a|tools:c", 0],
          ["model", "judge:d", 0],
        ]);
        expect(records[0]).toMatchObject({
          threadId: "t1",
          checkpointId: "cp-1",
          node: "coder",
          output: { content: "hi", toolCalls: [{ name: "shell" }] },
        });
        expect(records[2]).toMatchObject({ error: { kind: "exhausted" } });
        expect(await store.recordings.list("other")).toEqual([]);
      });

      it("keeps only the latest execution of a task: its first call deletes what an earlier execution of the same task path recorded", async () => {
        const { store } = await open();
        store.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("first run, call 0"));
        store.recordings.put(recordKey("coder:a|tools:x", 1), toolRecord("first run, call 1"));
        store.recordings.put(recordKey("coder:a|tools:x", 2), toolRecord("first run, call 2"));
        store.recordings.put(recordKey("coder:a|tools:y", 0), toolRecord("another task"));
        store.recordings.put(recordKey("coder:a|tools:x", 0, "t2"), toolRecord("another thread"));
        store.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("second run, call 0"));
        store.recordings.put(recordKey("coder:a|tools:x", 1), toolRecord("second run, call 1"));
        expect(await listedContents(store)).toEqual(["another task", "second run, call 0", "second run, call 1"]);
        expect(await listedContents(store, "t2")).toEqual(["another thread"]);
      });

      it("never stores a credential: secret values (also JSON-escaped) and Authorization header values are redacted", async () => {
        const { store, location } = await open(true);
        const secret = "sk-test-SECRET-4f9a2c";
        store.recordings.put(recordKey("coder:a", 0), toolRecord(`key=${secret}\nAuthorization: Bearer abcdefgh12345678\n"${secret}"`), [
          secret,
        ]);
        const [record] = await store.recordings.list("t1");
        expect((record as { result: { content: string } }).result.content).toBe(
          'key=[redacted]\nAuthorization: Bearer [redacted]\n"[redacted]"',
        );
        await store.close();
        const stored = JSON.stringify(await harness.query(location, "SELECT * FROM loopgraph_recordings"));
        expect(stored).toContain("[redacted]");
        expect(stored).not.toContain(secret);
        expect(stored).not.toContain("abcdefgh12345678");
      });

      it("are queued and written in the transaction of the run's next checkpoint write, or when the store closes", async () => {
        const { store, location } = await open(true);
        const stored = async () => (await harness.query(location, "SELECT CAST(count(*) AS integer) AS n FROM loopgraph_recordings"))[0]!.n;
        store.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("one"));
        store.recordings.put(recordKey("coder:a|tools:x", 1), toolRecord("two"));
        expect(await stored()).toBe(0);
        // A task's pending writes (saved when it ends): its records commit with them.
        const config = { configurable: { thread_id: "t1", checkpoint_ns: "", checkpoint_id: "cp-1" } };
        await store.saver.putWrites(config, [["notes", "done"]], "task-1");
        expect(await stored()).toBe(2);
        expect(await harness.query(location, "SELECT task_id FROM loopgraph_checkpoint_writes")).toEqual([{ task_id: "task-1" }]);
        store.recordings.put(recordKey("judge:b", 0), toolRecord("three"));
        expect(await stored()).toBe(2);
        await store.close();
        expect(await stored()).toBe(3);
      });

      it("shows the records queued in this process to a list, in the order they were made", async () => {
        const { store } = await open();
        store.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("first run"));
        expect(await listedContents(store)).toEqual(["first run"]);
        store.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("second run"));
        store.recordings.put(recordKey("coder:a|tools:x", 1), toolRecord("second run, call 1"));
        expect(await listedContents(store)).toEqual(["second run", "second run, call 1"]);
      });
    });

    it("the snapshot log numbers steps in order, also when two open at once", async () => {
      const { store } = await open();
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

    it(`${harness.queues ? "keeps" : "has no"} repository workspaces (those of queued runs)`, async () => {
      const { store } = await open();
      const workspaces = store.repoWorkspaces;
      expect(workspaces !== undefined).toBe(harness.queues);
      if (!workspaces) return;
      await workspaces.create("t", { repo: "https://example.com/r.git", ref: "main", commit: "c0" });
      expect(await workspaces.get("t")).toEqual({ threadId: "t", repo: "https://example.com/r.git", ref: "main", commit: "c0" });
      await workspaces.saveProgress("t", { baseTree: "b1", tree: "t1", patch: Buffer.from("diff") });
      expect(await workspaces.get("t")).toMatchObject({ baseTree: "b1", tree: "t1", patch: Buffer.from("diff") });
      const result: RepoResult = { commit: "c1", branch: "loopgraph/t", at: "2026-01-01T00:00:00.000Z" };
      await workspaces.saveResult("t", result);
      expect(await workspaces.get("t")).toMatchObject({ tree: "t1", result });
      expect(await workspaces.get("other")).toBeUndefined();
    });

    it("its saver reads a thread's history channel by channel: the checkpoints and values getTuple gives", async () => {
      const { store } = await open();
      const { saver } = store;
      if (!canReadHistory(saver)) throw new Error(`the ${name} saver does not read history`);
      const State = Annotation.Root({
        items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
        note: Annotation<string>(),
      });
      const graph = new StateGraph(State)
        .addNode("a", () => ({ items: ["from a"], note: "a ran" }))
        .addNode("b", () => ({ items: ["from b", "and more"] }))
        .addEdge(START, "a")
        .addEdge("a", "b")
        .addEdge("b", END)
        .compile({ checkpointer: saver });
      await graph.invoke({ items: ["first"] }, { configurable: { thread_id: "h" } });

      const lists = new Map<string, KnownList>();
      let checkpoints = 0;
      for await (const entry of saver.history("h")) {
        const config = { configurable: { thread_id: "h", checkpoint_ns: "", checkpoint_id: entry.checkpointId } };
        const tuple = (await saver.getTuple(config))!;
        expect(entry.parentId).toBe(tuple.parentConfig?.configurable?.checkpoint_id);
        expect(entry.createdAt).toBe(tuple.checkpoint.ts);
        expect(entry.metadata).toEqual(tuple.metadata);
        expect(entry.channelVersions).toEqual(tuple.checkpoint.channel_versions);
        const values: Record<string, unknown> = {};
        for (const [channel, version] of Object.entries(entry.channelVersions)) {
          // Graph inputs and branch markers are read whole (inspect shows neither).
          if (channel.startsWith("__") || channel.startsWith("branch:")) continue;
          const previous = lists.get(channel);
          const stored = await saver.readChannel("h", channel, String(version), previous ? { previous } : {});
          if (!stored) continue;
          if (stored.kind === "list") lists.set(channel, stored);
          values[channel] = (await saver.decodeChannel(stored)).value;
        }
        const shown = Object.entries(tuple.checkpoint.channel_values).filter(
          ([channel]) => !channel.startsWith("__") && !channel.startsWith("branch:"),
        );
        expect(values).toEqual(Object.fromEntries(shown));
        checkpoints += 1;
      }
      expect(checkpoints).toBe(4);
      expect(lists.get("items")?.items).toHaveLength(4);
    });

    it("its saver reads a history of more than one page: a growing list's every version is what getTuple gives", async () => {
      const { store } = await open();
      const { saver } = store;
      if (!canReadHistory(saver)) throw new Error(`the ${name} saver does not read history`);
      const State = Annotation.Root({ items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
      const graph = new StateGraph(State)
        .addNode("a", (state) => ({ items: [`item ${state.items.length}`] }))
        .addEdge(START, "a")
        .addEdge("a", END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: "long" } };
      // Each turn adds its input and the node's item: about three checkpoints a turn, past one page.
      for (let turn = 0; turn < Math.ceil(HISTORY_PAGE_SIZE / 2); turn++) await graph.invoke({ items: [`input ${turn}`] }, config);
      let previous: KnownList | undefined;
      let checkpoints = 0;
      for await (const entry of saver.history("long")) {
        checkpoints += 1;
        const version = entry.channelVersions.items;
        if (version === undefined) continue;
        const stored = await saver.readChannel("long", "items", String(version), previous ? { previous } : {});
        if (stored?.kind !== "list") throw new Error(`checkpoint ${entry.checkpointId}: items is not a list version`);
        previous = stored;
        const tuple = (await saver.getTuple({
          configurable: { thread_id: "long", checkpoint_ns: "", checkpoint_id: entry.checkpointId },
        }))!;
        expect((await saver.decodeChannel(stored)).value, entry.checkpointId).toEqual(tuple.checkpoint.channel_values.items);
      }
      expect(checkpoints).toBeGreaterThan(HISTORY_PAGE_SIZE);
      expect(previous?.items).toHaveLength(2 * Math.ceil(HISTORY_PAGE_SIZE / 2));
    });

    it("its saver keys channel_values in channel_versions order, whatever each takes to decode, and inspect shows that order", async () => {
      const { store, location } = await open();
      expect(await store.threads.create({ threadId: "o", ...NEW_THREAD })).toBeUndefined();
      const State = Annotation.Root({
        ...MessagesAnnotation.spec,
        big: Annotation<Record<string, unknown>>(),
        note: Annotation<string>(),
      });
      // A large plain JSON object, LangChain messages and a short string: decodings that take
      // very different times, the string's the shortest though it comes last.
      const big = Object.fromEntries(
        Array.from({ length: 200 }, (_, i) => [`key${i}`, { index: i, tags: [`t${i}`, { nested: { deep: [i, i + 1] } }] }]),
      );
      const graph = new StateGraph(State)
        .addNode("a", () => ({
          big,
          messages: [new AIMessage({ content: "on it", tool_calls: [{ name: "shell", args: { command: "ls" }, id: "c1" }] })],
          note: "done",
        }))
        .addEdge(START, "a")
        .addEdge("a", END)
        .compile({ checkpointer: store.saver });
      const config = { configurable: { thread_id: "o" } };
      await graph.invoke({ messages: [new HumanMessage("hi")] }, config);

      const inVersionOrder = (tuple: CheckpointTuple): string[] =>
        Object.keys(tuple.checkpoint.channel_versions).filter((channel) => channel in tuple.checkpoint.channel_values);
      const latest = (await store.saver.getTuple(config))!;
      expect(Object.keys(latest.checkpoint.channel_values)).toEqual(inVersionOrder(latest));
      expect(Object.keys(latest.checkpoint.channel_values)).toEqual(expect.arrayContaining(["messages", "big", "note"]));
      const listed: CheckpointTuple[] = [];
      for await (const tuple of store.saver.list(config)) {
        expect(Object.keys(tuple.checkpoint.channel_values), tuple.checkpoint.id).toEqual(inVersionOrder(tuple));
        listed.push(tuple);
      }

      // inspect: a checkpoint's state, and each step's added channels, in the same order.
      const shown = (channels: string[]) => channels.filter((channel) => !channel.startsWith("__") && !channel.startsWith("branch:"));
      const state = await checkpointState("o", latest.checkpoint.id, { db: location, env: {} });
      expect(Object.keys(state.values)).toEqual(shown(inVersionOrder(latest)));
      const history = await threadHistory("o", { db: location, env: {} });
      expect(history.checkpoints).toHaveLength(listed.length);
      let compared = 0;
      for (const checkpoint of history.checkpoints) {
        const tuple = listed.find((candidate) => candidate.checkpoint.id === checkpoint.checkpointId)!;
        const added = checkpoint.changes.filter((change) => change.kind === "added" && !change.path.includes(".")).map((c) => c.path);
        expect(added, checkpoint.checkpointId).toEqual(shown(inVersionOrder(tuple)).filter((channel) => added.includes(channel)));
        compared += added.length > 1 ? 1 : 0;
      }
      expect(compared).toBeGreaterThan(0);
    });
  });
});
