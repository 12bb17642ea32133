/**
 * `loopgraph status` reads the store through a narrow path (engine/status.ts): plain SQL and the
 * three channels it shows, no LangChain module. The same answer as through the saver, checked on
 * a real loop thread.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { latestValues, openStore } from "../src/store/store.js";
import { modulesLoadedBy, ROOT, runCli } from "./helpers/cli.js";
import { run } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("status through the narrow read path", () => {
  it("answers from plain SQL what the saver holds, loading no LangChain, zod or tokenizer module", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const script = join(ROOT, "tests/fixtures/looper/always-continue.script.yaml");
    const result = await run(ws, {
      graph: "coder-review",
      task: "keep going",
      thread: "narrow",
      script,
      approval: "auto",
      extra: ["--max-rounds", "2"],
    });
    expect(result.code, result.stderr).toBe(4);
    await runCli(["send", "narrow", "add: a queued task", "--db", ws.db]);

    const store = await openStore({ db: ws.db, env: {} }, "read");
    try {
      const viaSaver = await latestValues(store, "narrow");
      const plain = await store.checkpoints.plainChannels("narrow", ["loopState", "inboxCursor", "task"]);
      expect(plain).toEqual({ loopState: viaSaver.loopState, inboxCursor: viaSaver.inboxCursor, task: viaSaver.task });
      expect(plain.loopState).toMatchObject({ value: "IDLE", context: { round: 2, endReason: "round limit" } });
      expect(await store.checkpoints.plainChannels("no-such-thread", ["task"])).toEqual({});
      // An older checkpoint by its id: its own values (what a run's outcome compares the last step with).
      const latest = await store.saver.getTuple({ configurable: { thread_id: "narrow", checkpoint_ns: "" } });
      const parentId = latest!.parentConfig!.configurable!.checkpoint_id as string;
      const parent = await store.saver.getTuple({ configurable: { thread_id: "narrow", checkpoint_ns: "", checkpoint_id: parentId } });
      expect(await store.checkpoints.plainChannels("narrow", ["visits", "loopState"], parentId)).toEqual({
        visits: parent!.checkpoint.channel_values.visits,
        loopState: parent!.checkpoint.channel_values.loopState,
      });
      expect(await store.checkpoints.plainChannels("narrow", ["visits"], "no-such-checkpoint")).toEqual({});
      // A channel the serializer stores otherwise (messages: a list's history) is refused, not misread.
      await expect(store.checkpoints.plainChannels("narrow", ["messages"])).rejects.toThrow(/not stored as a plain JSON value/);
    } finally {
      await store.close();
    }

    const { modules, ...status } = await modulesLoadedBy(["status", "narrow", "--json", "--db", ws.db]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ threadId: "narrow", state: "IDLE", round: 2, pending: ["a queued task"] });
    expect(modules.some((name) => name.includes("/engine/status.js"))).toBe(true);
    expect(modules.filter((name) => /@langchain|langsmith|\/zod\/|gpt-tokenizer|openai/.test(name))).toEqual([]);
  });
});
