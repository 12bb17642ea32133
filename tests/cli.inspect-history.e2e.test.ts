/**
 * `inspect` reads a thread's history linearly (only changed channels decoded, list items past the
 * shared prefix), counts checkpoints in SQL and finds `--checkpoint` prefixes by a key range.
 * Each is compared with the way it was done before, kept here: every root checkpoint decoded
 * whole (`saver.list()`) and consecutive states diffed whole. The threads are real runs: a
 * coder-review loop long enough for list rollups, forked with `replay --from`; the example graph
 * forked with its task message replaced, and failing when the model runs out (an
 * error checkpoint); a run paused at a breakpoint. On PostgreSQL, the example graph's threads.
 * Threads written through the saver: one whose steps replace and remove messages in the middle of
 * its list (pages starting there decode only what their diffs show), and long ones whose newest
 * page decodes as much whatever their length.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { messagesStateReducer } from "@langchain/langgraph";
import { uuid6, type Checkpoint, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import diff from "microdiff";
import { describe, expect, it, vi } from "vitest";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { loopThread, writeLongThread } from "../bench/fixtures.js";
import {
  findCheckpoint,
  listThreads,
  nodesRun,
  parentIdOf,
  threadHistory,
  toPlainValues,
  type CheckpointSummary,
  type HistoryWindow,
  type ThreadHistory,
} from "../src/engine/inspect.js";
import { checkpointTree } from "../src/engine/checkpoint-tree.js";
import { asSeen } from "../src/runs/thread-registry.js";
import { requireThread, withStore, type Store } from "../src/store/store.js";
import type { StoredChannel } from "../src/checkpoint/history-reader.js";
import type { TokenUsage } from "../src/state/graph-state.js";
import { copyTrusted, modulesLoadedBy, ROOT, runCli } from "./helpers/cli.js";
import { run } from "./helpers/e2e.js";
import { describeOnPostgres } from "./helpers/postgres.js";
import { exampleCopy, runExample } from "./helpers/replay.js";
import { tempWorkspace } from "./helpers/workspace.js";

// ---- The previous implementation (whole states), kept as the reference. ----

async function oldRootCheckpoints(store: Store, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of store.saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    if ((tuple.config.configurable?.checkpoint_ns ?? "") === "") tuples.push(tuple);
  }
  return tuples.reverse();
}

function oldSummarise(
  tuple: CheckpointTuple,
  previous: Record<string, unknown>,
  current: Record<string, unknown>,
): Omit<CheckpointSummary, "branch"> {
  const step = tuple.metadata?.step ?? 0;
  const usageBefore = (previous.usage ?? {}) as Record<string, TokenUsage>;
  const usageNow = (current.usage ?? {}) as Record<string, TokenUsage>;
  const tokens = { inputTokens: 0, outputTokens: 0 };
  for (const [node, usage] of Object.entries(usageNow)) {
    tokens.inputTokens += usage.inputTokens - (usageBefore[node]?.inputTokens ?? 0);
    tokens.outputTokens += usage.outputTokens - (usageBefore[node]?.outputTokens ?? 0);
  }
  const failed = (tuple.pendingWrites ?? []).some(([, channel]) => channel === "__error__");
  const round = (current.loopState as { context?: { round?: unknown } } | undefined)?.context?.round;
  const ran = nodesRun(previous, current);
  const source = tuple.metadata?.source;
  const nodes = step < 0 ? ["input"] : ran.length > 0 ? ran : source === "update" || source === "fork" ? [source] : ["start"];
  return {
    checkpointId: tuple.checkpoint.id,
    parentId: parentIdOf(tuple),
    step,
    source: tuple.metadata?.source ?? "",
    nodes,
    createdAt: tuple.checkpoint.ts,
    tokens,
    ...(typeof round === "number" && round > 0 ? { round } : {}),
    status: failed ? "error" : step < 0 ? "input" : "done",
    changes: diff(previous, current).map((change) => ({
      path: change.path.join("."),
      kind: change.type === "CREATE" ? "added" : change.type === "REMOVE" ? "removed" : "changed",
      ...(change.type !== "REMOVE" ? { value: change.value } : {}),
      ...(change.type !== "CREATE" ? { before: change.oldValue } : {}),
    })),
  };
}

async function oldThreadHistory(db: string, threadId: string): Promise<ThreadHistory> {
  return withStore({ db, env: {} }, "read", async (store) => {
    const thread = await requireThread(store, threadId);
    const tuples = await oldRootCheckpoints(store, threadId);
    const tree = checkpointTree(tuples.map((tuple) => ({ id: tuple.checkpoint.id, parentId: parentIdOf(tuple) })));
    const valuesById = new Map<string, Record<string, unknown>>();
    const checkpoints = tuples.map((tuple): CheckpointSummary => {
      const current = toPlainValues(tuple.checkpoint.channel_values as Record<string, unknown>);
      valuesById.set(tuple.checkpoint.id, current);
      const parentId = parentIdOf(tuple);
      const summary = oldSummarise(tuple, (parentId !== undefined && valuesById.get(parentId)) || {}, current);
      const head = tree.head === tuple.checkpoint.id ? { head: true as const } : {};
      return { ...summary, branch: tree.branchOf.get(tuple.checkpoint.id) ?? 0, ...head };
    });
    // The tokens of the head's lineage, summed step by step.
    const byId = new Map(checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
    const tokens = { inputTokens: 0, outputTokens: 0 };
    for (let at = tree.head === undefined ? undefined : byId.get(tree.head); at; at = at.parentId ? byId.get(at.parentId) : undefined) {
      tokens.inputTokens += at.tokens.inputTokens;
      tokens.outputTokens += at.tokens.outputTokens;
    }
    const range = { from: 0, to: checkpoints.length, total: checkpoints.length };
    return { thread, checkpoints, branches: [...tree.branches], ...(tree.head ? { head: tree.head } : {}), range, tokens };
  });
}

async function oldCounts(db: string): Promise<Array<[string, number]>> {
  return withStore({ db, env: {} }, "read", async (store) => {
    const counts: Array<[string, number]> = [];
    for (const thread of await store.threads.list())
      counts.push([thread.threadId, (await oldRootCheckpoints(store, thread.threadId)).length]);
    return counts;
  });
}

/**
 * The old prefix lookup, which decoded every root checkpoint of the thread: what it finds for a
 * prefix is the one match's id, or how many matched. The checkpoints are decoded once for all the
 * prefixes asked (the thread does not change meanwhile).
 */
async function oldFinder(db: string, threadId: string): Promise<(prefix: string) => string | number> {
  const ids = await withStore({ db, env: {} }, "read", async (store) =>
    (await oldRootCheckpoints(store, threadId)).map((t) => t.checkpoint.id),
  );
  return (prefix) => {
    const matches = ids.filter((id) => id.startsWith(prefix));
    return matches.length === 1 ? matches[0]! : matches.length;
  };
}

async function newFind(db: string, threadId: string, prefix: string): Promise<string | number> {
  return withStore({ db, env: {} }, "read", async (store) => {
    try {
      return (await findCheckpoint(store, threadId, prefix)).checkpoint.id;
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toMatch(new RegExp(`^(no checkpoint|more than one checkpoint) of thread "${threadId}" matches`));
      return message.startsWith("no checkpoint") ? 0 : 2;
    }
  });
}

/** The new history equals the old one, key order included (it is what `inspect --json` prints, and `--diff` prints its changes in order). */
async function expectSameHistory(db: string, threadId: string): Promise<ThreadHistory> {
  const now = await threadHistory(threadId, { db, env: {} });
  const before = await oldThreadHistory(db, threadId);
  expect(now.checkpoints.length).toBeGreaterThan(0);
  expect(JSON.stringify(now)).toBe(JSON.stringify(before));
  return now;
}

/** Prefixes of every length of each checkpoint id, and a few that match none or many: each found as before. */
async function expectSameLookups(db: string, threadId: string, history: ThreadHistory): Promise<void> {
  const ids = history.checkpoints.map((c) => c.checkpointId);
  const prefixes = new Set(["", "zzz", "1f", ids[0]!.slice(0, 8), `${ids[0]!}x`]);
  for (const id of [ids[0]!, ids.at(-1)!, ids[Math.floor(ids.length / 2)]!]) {
    for (let length = 1; length <= id.length; length += 3) prefixes.add(id.slice(0, length));
    prefixes.add(id);
  }
  const oldFind = await oldFinder(db, threadId);
  for (const prefix of prefixes) {
    const before = oldFind(prefix);
    const now = await newFind(db, threadId, prefix);
    expect(now, `prefix "${prefix}"`).toBe(typeof before === "number" ? Math.min(before, 2) : before);
  }
  // rewind's lookup, any namespace (subgraph checkpoints too): the range finds what a scan of every id finds.
  await withStore({ db, env: {} }, "read", async (store) => {
    const everyId = (await store.checkpoints.allCheckpointIds(threadId)).sort();
    for (const prefix of [...prefixes, everyId.at(-1)!.slice(0, 14)]) {
      expect((await store.checkpoints.checkpointsWithPrefix(threadId, prefix)).map((match) => match.id)).toEqual(
        everyId.filter((id) => id.startsWith(prefix)),
      );
    }
  });
}

/**
 * A thread written through the store's saver whose steps edit the middle of its message list as
 * LangGraph's messages reducer does: after ten messages, one replaced (by id), one removed
 * (RemoveMessage), one added, then one replaced and another removed at once.
 */
async function writeEditedThread(db: string, threadId: string): Promise<void> {
  const updates: BaseMessage[][] = [
    [],
    ...Array.from({ length: 10 }, (_, i) => [
      i % 2 ? new AIMessage({ id: `m${i}`, content: `message ${i}` }) : new HumanMessage({ id: `m${i}`, content: `message ${i}` }),
    ]),
    [new AIMessage({ id: "m5", content: "message 5, edited" })],
    [new RemoveMessage({ id: "m7" })],
    [new AIMessage({ id: "m10", content: "message 10" })],
    [new HumanMessage({ id: "m2", content: "message 2, edited" }), new RemoveMessage({ id: "m8" })],
  ];
  await withStore({ db, env: {} }, "create", async (store) => {
    await store.threads.create({
      threadId,
      graphFile: join(ROOT, "graphs/coder-review.yaml"),
      graphName: "coder-review",
      task: "edit messages",
      approval: "auto",
      workspace: ROOT,
    });
    let config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    let messages: BaseMessage[] = [];
    for (const [index, update] of updates.entries()) {
      messages = messagesStateReducer(messages, update);
      const versions = { task: "1", messages: String(index + 1) };
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(index),
        ts: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
        channel_values: { task: "edit messages", messages: [...messages] },
        channel_versions: versions,
        versions_seen: {},
      };
      const metadata = { source: index === 0 ? ("input" as const) : ("loop" as const), step: index - 1, parents: {} };
      config = (await store.saver.put(
        config,
        checkpoint,
        metadata,
        index === 0 ? versions : { messages: versions.messages },
      )) as typeof config;
    }
    await store.threads.markEnded(threadId, "finished");
  });
}

/** Counts the values (a list's items each) a history walk on the SQLite saver decodes while `read` runs. */
async function valuesDecodedBy(read: () => Promise<unknown>): Promise<number> {
  const channels = vi.spyOn(SqliteCheckpointSaver.prototype, "decodeChannel");
  try {
    await read();
    const items = channels.mock.calls.map(([stored]: [StoredChannel]) => (stored.kind === "list" ? stored.items.length : 1));
    return items.reduce((sum, count) => sum + count, 0);
  } finally {
    channels.mockRestore();
  }
}

describe("inspect reads a thread linearly, and shows what it showed before", () => {
  it("a page whose first step replaces or removes a message in the middle of its parent's list: the parent's messages decoded only where the diff shows them", async () => {
    const { dir } = tempWorkspace();
    const db = join(dir, "edited.db");
    await writeEditedThread(db, "edited");
    const steps = (await expectSameHistory(db, "edited")).checkpoints;
    const replaced = steps.findIndex((step) => step.changes.some((change) => change.path === "messages.5.content"));
    expect(steps[replaced]!.changes).toEqual([
      { path: "messages.5.content", kind: "changed", value: "message 5, edited", before: "message 5" },
    ]);
    expect(steps[replaced + 1]!.changes).toContainEqual({
      path: "messages.9",
      kind: "removed",
      before: expect.objectContaining({ id: "m9" }),
    });
    // Each page starting at an edit (its parent outside it) shows its steps as the whole history does.
    for (const from of [replaced, replaced + 1, replaced + 2, replaced + 3]) {
      for (const window of [{ from }, { from, limit: 1 }]) {
        const page = await threadHistory("edited", { db, env: {} }, window);
        expect(JSON.stringify(page.checkpoints), JSON.stringify(window)).toBe(
          JSON.stringify(steps.slice(from, from + (window.limit ?? steps.length))),
        );
      }
    }
    // The replacing step's page decodes the message replaced and its replacement, none of the parent's others (and the task).
    expect(await valuesDecodedBy(() => threadHistory("edited", { db, env: {} }, { from: replaced, limit: 1 }))).toBe(3);
  });

  it("the newest page of a long thread decodes as many values whatever the thread's length", async () => {
    const { dir } = tempWorkspace();
    const db = join(dir, "long.db");
    // A message every tenth checkpoint: the newest page's first parent holds 60, then 200 of them.
    await writeLongThread(db, "shorter", 600);
    await writeLongThread(db, "longer", 2000);
    const [shorter, longer] = [
      await valuesDecodedBy(() => threadHistory("shorter", { db, env: {} }, { limit: 50 })),
      await valuesDecodedBy(() => threadHistory("longer", { db, env: {} }, { limit: 50 })),
    ];
    expect(longer).toBe(shorter);
  });

  it("a coder-review loop with list rollups, forked with replay --from: the same history, counts and prefix lookups", async () => {
    const { dir } = tempWorkspace();
    const loop = await loopThread(dir, 7, "loop");
    const before = await threadHistory("loop", { db: loop.db, env: {} });
    // From the next-to-last round's Judge: the fork runs the last round again, on a new task.
    const start = before.checkpoints.filter((c) => c.nodes.includes("judge")).at(-2)!;
    const forked = await runCli([
      "replay",
      "loop",
      "--from",
      start.checkpointId.slice(0, 20),
      "--set",
      "task=write one more round",
      "--db",
      loop.db,
    ]);
    expect(forked.code, forked.stderr).toBe(0);

    // No checkpoint is decoded whole any more, and far fewer values are decoded at all.
    const lists = vi.spyOn(SqliteCheckpointSaver.prototype, "list");
    // Channel values decoded: a history walk decodes each by decodeChannel; a tuple, by decodeChannel or decodeValue (lists).
    const saver = SqliteCheckpointSaver.prototype as unknown as Record<"decodeValue", () => unknown>;
    const [channels, values] = [vi.spyOn(SqliteCheckpointSaver.prototype, "decodeChannel"), vi.spyOn(saver, "decodeValue")];
    await threadHistory("loop", { db: loop.db, env: {} });
    await listThreads({ db: loop.db, env: {} });
    await withStore({ db: loop.db, env: {} }, "read", (store) => findCheckpoint(store, "loop", start.checkpointId.slice(0, 20)));
    expect(lists).not.toHaveBeenCalled();
    const linear = channels.mock.calls.length;
    channels.mockClear();
    values.mockClear();
    await oldThreadHistory(loop.db, "loop");
    const whole = channels.mock.calls.length + values.mock.calls.length;
    for (const spy of [lists, channels, values]) spy.mockRestore();
    // The walk decodes each value where it changed (here about 250 of the whole decode's 700).
    expect(linear).toBeLessThan(whole / 2);

    const history = await expectSameHistory(loop.db, "loop");
    expect(history.branches.length).toBe(2);
    expect(history.checkpoints.filter((c) => c.round !== undefined).length).toBeGreaterThan(30);
    await expectSameLookups(loop.db, "loop", history);

    // A window shows each of its checkpoints as the whole history does (a page anywhere, a fork's
    // first step whose parent is outside it, one reaching past the ends) and the head's tokens.
    const steps = history.checkpoints;
    const total = steps.length;
    const forkFirst = steps.findIndex((c) => c.branch === 1);
    const windows: HistoryWindow[] = [
      { limit: 5 },
      { limit: 1 },
      { limit: total + 10 },
      { from: forkFirst },
      { from: forkFirst - 3, before: forkFirst + 2 },
      { limit: 4, before: forkFirst + 1 },
      { from: 0, limit: 7 },
      { from: steps[20]!.checkpointId.slice(0, 20), limit: 3 },
      { from: steps[21]!.checkpointId },
    ];
    for (const window of windows) {
      const page = await threadHistory("loop", { db: loop.db, env: {} }, window);
      expect(page.range.total).toBe(total);
      expect(page.checkpoints.length, JSON.stringify(window)).toBe(page.range.to - page.range.from);
      expect(JSON.stringify(page.checkpoints), JSON.stringify(window)).toBe(JSON.stringify(steps.slice(page.range.from, page.range.to)));
      expect(page.tokens).toEqual(history.tokens);
    }
    // The newest page reads its own steps, not the thread's: a fraction of the values a steps walk decodes.
    const counted = vi.spyOn(SqliteCheckpointSaver.prototype, "decodeChannel");
    const valuesDecoded = vi.spyOn(SqliteCheckpointSaver.prototype as unknown as Record<"decodeValue", () => unknown>, "decodeValue");
    const decoded = () => counted.mock.calls.length + valuesDecoded.mock.calls.length;
    await threadHistory("loop", { db: loop.db, env: {} }, { limit: 3 });
    const paged = decoded();
    await threadHistory("loop", { db: loop.db, env: {} });
    const walked = decoded() - paged;
    counted.mockRestore();
    valuesDecoded.mockRestore();
    expect(paged).toBeLessThan(walked / 5);
    await expect(threadHistory("loop", { db: loop.db, env: {} }, { from: "zzz" })).rejects.toThrow(
      'no checkpoint of thread "loop" matches "zzz": see `loopgraph inspect loop`',
    );

    // The CLI: by default the newest 50 steps, with a line counting the others and how to see them;
    // --all every step (one line each), --last and --from a part; --json the same, saying what it left out.
    const rowsOf = (stdout: string) => steps.filter((checkpoint) => stdout.includes(checkpoint.checkpointId));
    const inspect = async (...args: string[]) => {
      const result = await runCli(["inspect", "loop", ...args, "--db", loop.db]);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    const shown = await inspect();
    expect(rowsOf(shown)).toEqual(steps.slice(total - 50));
    expect(shown).toContain(`${total - 50} earlier steps not shown (#0–#${total - 51}): --all shows every step`);
    expect(shown).toMatch(new RegExp(`^${total - 1}\\s+\\d+\\s+`, "m"));
    // The first step shown took as long as ever: its parent, not shown, was read for it.
    const firstRow = shown.split("\n").find((line) => new RegExp(`^${total - 50}\\s+\\d+\\s`).test(line))!;
    expect(firstRow).toMatch(/\s\d+\.\ds\s/);
    expect(shown).toContain(`tokens: ${history.tokens.inputTokens} in, ${history.tokens.outputTokens} out  (${total} checkpoints`);
    // Each round's tokens sum its steps: listed with every step shown.
    expect(shown).toContain("rounds: --all lists each loop round's tokens");
    const all = await inspect("--all");
    expect(rowsOf(all)).toEqual(steps);
    expect(all).not.toContain("earlier steps not shown");
    expect(all).toMatch(/^rounds: round 1: \d+ in, \d+ out · round 2: /m);
    // --nested with a window: the Coder's own steps under the Coder steps shown, and no others.
    const lastEight = await inspect("--last", "8", "--nested");
    expect(rowsOf(lastEight)).toEqual(steps.slice(total - 8));
    const coders = steps.slice(total - 8).filter((c) => c.nodes.includes("coder")).length;
    expect(coders).toBeGreaterThan(0);
    expect(lastEight.match(/· finish/g)?.length).toBe(coders);
    expect(rowsOf(await inspect("--from", String(forkFirst)))).toEqual(steps.slice(forkFirst));
    expect(rowsOf(await inspect("--from", steps[total - 2]!.checkpointId.slice(0, 24)))).toEqual(steps.slice(total - 2));
    const json = JSON.parse(await inspect("--json")) as ThreadHistory & { leftOut: number };
    expect([json.checkpoints.length, json.leftOut, json.range]).toEqual([50, total - 50, { from: total - 50, to: total, total }]);
    expect(json.checkpoints.map((checkpoint) => checkpoint.checkpointId)).toEqual(steps.slice(total - 50).map((c) => c.checkpointId));
    const conflict = await runCli(["inspect", "loop", "--all", "--last", "3", "--db", loop.db]);
    expect([conflict.code, conflict.stderr]).toEqual([2, expect.stringMatching(/--last <n>.* cannot be used with option '--all'/)]);
    const withDiff = await inspect("--diff", "--all");
    expect(withDiff.split("\n").length).toBeGreaterThan(all.split("\n").length);
  });

  it("the example graph forked with its task message replaced, a failed run (an error checkpoint) and a paused one", async () => {
    const ws = exampleCopy();
    expect((await runExample(ws, "forked")).code).toBe(0);
    const critique = (await threadHistory("forked", { db: ws.db, env: {} })).checkpoints.find((c) => c.nodes.includes("critique"))!;
    const forked = await runCli(["replay", "forked", "--from", critique.checkpointId, "--set", "task=Explain forks", "--db", ws.db], {
      cwd: ws.dir,
    });
    expect(forked.code, forked.stderr).toBe(0);
    const history = await expectSameHistory(ws.db, "forked");
    expect(history.branches.length).toBe(2);
    // The fork replaced the task's message, the first: its list shares no prefix with the parent's.
    expect(history.checkpoints.find((c) => c.branch === 1)!.changes).toContainEqual(
      expect.objectContaining({ path: "messages.0.content", kind: "changed", value: "Explain forks" }),
    );

    // Out of responses at `revise`: the run fails and its checkpoint records the error.
    const short = join(ws.dir, "short.script.yaml");
    writeFileSync(
      short,
      `responses:\n  - { node: draft, content: "a draft" }\n  - { node: critique, content: '{"verdict": "revise", "notes": "more"}' }\n`,
    );
    expect((await runExample(ws, "failed", short)).code).toBe(1);
    const failed = await expectSameHistory(ws.db, "failed");
    expect(failed.checkpoints.some((c) => c.status === "error")).toBe(true);
    await expectSameLookups(ws.db, "failed", failed);

    // Paused at a breakpoint (exit 3).
    const temp = tempWorkspace();
    copyTrusted(join(ROOT, "tests/fixtures/engine"), temp.dir);
    const paused = await run(
      { dir: temp.dir, db: ws.db },
      {
        graph: join(temp.dir, "breakpoint.yaml"),
        task: "t",
        thread: "paused",
        script: join(temp.dir, "breakpoint.script.yaml"),
        json: false,
      },
    );
    expect(paused.code, paused.stderr).toBe(3);
    expect((await expectSameHistory(ws.db, "paused")).thread.status).toBe("paused");

    // The thread list counts each thread's root checkpoints in SQL: the same numbers as decoding them all.
    const listed = await listThreads({ db: ws.db, env: {} });
    expect(listed.map((t) => [t.threadId, t.checkpoints])).toEqual(await oldCounts(ws.db));
    expect(listed.map((t) => t.status)).toEqual(
      (await withStore({ db: ws.db, env: {} }, "read", async (store) => store.threads.list())).map((t) => asSeen(t).status),
    );

    // `inspect` (the list) loads no LangChain module: it answers in a few node start-ups.
    const { modules: loaded, ...shown } = await modulesLoadedBy(["inspect", "--db", ws.db]);
    expect(shown.code, shown.stderr).toBe(0);
    const pausedCount = listed.find((t) => t.threadId === "paused")!.checkpoints;
    expect(shown.stdout).toMatch(new RegExp(`^paused\\s+breakpoint\\s+paused\\s+${pausedCount}\\s`, "m"));
    expect(loaded.some((name) => name.includes("/engine/thread-list.js"))).toBe(true);
    expect(loaded.filter((name) => /@langchain|langsmith|\/zod\/|microdiff|\/engine\/inspect\.js/.test(name))).toEqual([]);
  });
});

describeOnPostgres("inspect reads a thread on PostgreSQL linearly too", "inspect's history on PostgreSQL", (server) => {
  it("the example graph forked with its task message replaced, and a failed run: the history a whole decode shows, no checkpoint decoded whole", async () => {
    const ws = { ...exampleCopy(), db: server().createDatabase("inspect_history") };
    expect((await runExample(ws, "forked")).code).toBe(0);
    const critique = (await threadHistory("forked", { db: ws.db, env: {} })).checkpoints.find((c) => c.nodes.includes("critique"))!;
    const forked = await runCli(["replay", "forked", "--from", critique.checkpointId, "--set", "task=Explain forks", "--db", ws.db], {
      cwd: ws.dir,
    });
    expect(forked.code, forked.stderr).toBe(0);

    const lists = vi.spyOn(PostgresCheckpointSaver.prototype, "list");
    const tuples = vi.spyOn(PostgresCheckpointSaver.prototype, "getTuple");
    await threadHistory("forked", { db: ws.db, env: {} });
    expect(lists).not.toHaveBeenCalled();
    expect(tuples).not.toHaveBeenCalled();
    lists.mockRestore();
    tuples.mockRestore();
    const history = await expectSameHistory(ws.db, "forked");
    expect(history.branches.length).toBe(2);
    // A window there too: the fork's steps, its first one's parent read whole.
    const fork = history.checkpoints.findIndex((c) => c.branch === 1);
    const window = await threadHistory("forked", { db: ws.db, env: {} }, { from: fork, limit: 2 });
    expect(JSON.stringify(window.checkpoints)).toBe(JSON.stringify(history.checkpoints.slice(fork, fork + 2)));

    const short = join(ws.dir, "short.script.yaml");
    writeFileSync(
      short,
      `responses:\n  - { node: draft, content: "a draft" }\n  - { node: critique, content: '{"verdict": "revise", "notes": "more"}' }\n`,
    );
    expect((await runExample(ws, "failed", short)).code).toBe(1);
    expect((await expectSameHistory(ws.db, "failed")).checkpoints.some((c) => c.status === "error")).toBe(true);
  });
});
