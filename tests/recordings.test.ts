import Database from "better-sqlite3";
import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createRecorder } from "../src/runtime/recorder.js";
import type { Recordings } from "../src/store/sqlite/recordings.js";
import { redactSecrets, secretValues } from "../src/runs/redact.js";
import { MODEL_KEY_VARIABLES } from "../src/models/spec.js";
import { openStore, type Store } from "../src/store/store.js";
import { listedContents, recordKey, toolRecord } from "./helpers/records.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

async function store(): Promise<Store> {
  const opened = await openStore({ db: tempWorkspace().db, env: {} }, "create");
  onCleanup(() => opened.close());
  return opened;
}

describe("the recordings table of a SQLite store (what every store's does: tests/store.contract.test.ts)", () => {
  it("closing a store still locked by another program drops the queued records of the unsaved step instead of failing", async () => {
    const { db } = tempWorkspace();
    const s = await openStore({ db, env: { LOOPGRAPH_BUSY_TIMEOUT_MS: "50" } }, "create");
    s.recordings.put(recordKey("coder:a|tools:x", 0), toolRecord("saved"));
    (s.recordings as Recordings).flush();
    s.recordings.put(recordKey("coder:a|tools:y", 0), toolRecord("step whose writes met the lock"));
    const holder = new Database(db);
    try {
      holder.exec("BEGIN EXCLUSIVE");
      expect(() => (s.recordings as Recordings).flush()).toThrow(/locked/);
      await expect(s.close()).resolves.toBeUndefined();
    } finally {
      if (holder.inTransaction) holder.exec("ROLLBACK");
      holder.close();
    }
    const reopened = await openStore({ db, env: {} }, "read");
    onCleanup(() => reopened.close());
    expect(await listedContents(reopened)).toEqual(["saved"]);
  });
});

describe("credentials", () => {
  it("are the model providers' keys and variables named like keys, tokens or secrets, when long enough to be one", async () => {
    const values = secretValues(
      {
        OPENAI_API_KEY: "sk-openai-123",
        GROQ_API_KEY: "gsk_987654321",
        GITHUB_TOKEN: "ghp_abcdefgh",
        SHORT_TOKEN: "x",
        HOME: "/home/someone-long",
        EDITOR: "vim",
      },
      MODEL_KEY_VARIABLES,
    );
    expect(values.sort()).toEqual(["ghp_abcdefgh", "gsk_987654321", "sk-openai-123"]);
  });

  it("include a connection string's password alone, as written and decoded, whole even when it holds an @", async () => {
    const values = secretValues(
      { DB: "postgres://team:s3cr@t-pw%21@db.example:5432/runs", NOTES: "see https://user:plain-pass-word@host/x for it" },
      MODEL_KEY_VARIABLES,
    );
    expect(values).toContain("s3cr@t-pw%21");
    expect(values).toContain("s3cr@t-pw!");
    expect(values).toContain("plain-pass-word");
  });

  it("are redacted whole, the longest first", async () => {
    expect(redactSecrets("a sk-long-secret-value b", ["sk-long-secret", "sk-long-secret-value"])).toBe("a [redacted] b");
  });
});

describe("the recorder in a LangGraph run", () => {
  const State = Annotation.Root({ n: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }) });

  it("keys records by task path and call index, with the root checkpoint the step started from; a task re-run after an interrupt replaces its records", async () => {
    const s = await store();
    const record = createRecorder(s.recordings, "lg", secretValues({ OPENAI_API_KEY: "sk-test-SECRET-4f9a2c" }, MODEL_KEY_VARIABLES));
    let executions = 0;
    const inner = new StateGraph(State)
      .addNode("model", async (state) => {
        record({ kind: "tool", name: "inner", args: {}, result: "inner call" });
        return { n: state.n + 1 };
      })
      .addEdge(START, "model")
      .addEdge("model", END)
      .compile({ name: "sub" });
    const graph = new StateGraph(State)
      .addNode("ask", async (state) => {
        executions += 1;
        record({ kind: "tool", name: "shell", args: {}, result: `execution ${executions}, call 0, key sk-test-SECRET-4f9a2c` });
        if (executions === 1) record({ kind: "tool", name: "shell", args: {}, result: "execution 1, call 1" });
        const answer = interrupt<string, string>("go on?");
        record({ node: "asker", kind: "approval", name: "shell", args: {}, answer });
        return { n: state.n + 1 };
      })
      .addNode("sub", async (state, config) => inner.invoke(state, config))
      .addEdge(START, "ask")
      .addEdge("ask", "sub")
      .addEdge("sub", END)
      .compile({ checkpointer: s.saver });
    const config = { configurable: { thread_id: "lg" } };
    await graph.invoke({ n: 0 }, config);
    expect((await s.recordings.list("lg")).map((r) => r.callIndex)).toEqual([0, 1]);
    await graph.invoke(new Command({ resume: "yes" }), config);

    const records = await s.recordings.list("lg");
    expect(
      records.map((r) => [r.node, r.kind, r.callIndex, r.kind === "approval" ? r.answer : r.kind === "tool" ? r.result : undefined]),
    ).toEqual([
      ["ask", "tool", 0, "execution 2, call 0, key [redacted]"],
      ["asker", "approval", 1, "yes"],
      ["model", "tool", 0, "inner call"],
    ]);
    expect(records[0]!.taskPath).toMatch(/^ask:[0-9a-f-]+$/);
    expect(records[2]!.taskPath).toMatch(/^sub:[0-9a-f-]+\|model:[0-9a-f-]+$/);
    const roots = [];
    for await (const tuple of s.saver.list({ configurable: { thread_id: "lg", checkpoint_ns: "" } })) roots.push(tuple);
    const stepOf = new Map(roots.map((tuple) => [tuple.checkpoint.id, tuple.metadata?.step]));
    // `ask` runs at step 1 (from the checkpoint of step 0), `sub` at step 2.
    expect(records.map((r) => stepOf.get(r.checkpointId))).toEqual([0, 0, 1]);
  });
});
