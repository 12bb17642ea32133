import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { createModel } from "../src/models/index.js";
import { forkRun, runGraph } from "../src/index.js";
import { mergeConsumed } from "../src/state/graph-state.js";
import { historyOf, stateAt } from "./helpers/e2e.js";
import { exampleCopy } from "./helpers/replay.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { testConfigHome } from "./helpers/cli.js";
import { settingsOf } from "../src/config/environment-settings.js";

const messages = [new HumanMessage("go")];

/** The example graph's four answers, without delays: draft, critique (revise), revise, critique (approve). */
const EXAMPLE_SCRIPT = `responses:
  - { node: draft, content: "A first draft." }
  - { node: critique, content: '{"verdict": "revise", "notes": "Say more."}' }
  - { node: revise, content: "A better draft." }
  - { node: critique, content: '{"verdict": "approve", "notes": "Good."}' }
`;

describe("scripted consumption as counts per response group", () => {
  it("splits a node's responses among a map's instances: instance i of n takes i, i + n … from where the map began", async () => {
    const { dir } = tempWorkspace({ prefix: "loopgraph-instances-" });
    const script = ["w0", "w1", "w2", "w3", "w4", "w5"].map((content) => `  - { node: w, content: ${content} }`);
    writeFileSync(join(dir, "s.yaml"), `responses:\n${script.join("\n")}\n  - { node: "w[1]", content: own1 }\n  - { content: any }\n`);
    const model = createModel("scripted:s.yaml", { cwd: dir, env: {} });
    const atStart = { w: 1 };
    const call = (index: number, consumed = atStart) =>
      model.call(messages, { node: "w", consumed, instance: { index, count: 2, consumedAtStart: atStart } });

    // Instance 0 of two, from w's second response on: positions 1, then 3 (a second call), whichever instance calls first.
    const first = await call(0);
    expect(first).toMatchObject({ scriptedIndex: 1, scriptedConsumed: { w: 2 } });
    expect(await call(0, first.scriptedConsumed as typeof atStart)).toMatchObject({ scriptedIndex: 3, scriptedConsumed: { w: 4 } });
    // Instance 1 has a response of its own: it takes that, not w's position 2.
    expect(await call(1)).toMatchObject({ scriptedIndex: 6, scriptedConsumed: { w: 1, "w[1]": 1 } });
    await expect(call(1, { w: 1, "w[1]": 1 } as typeof atStart)).rejects.toMatchObject({
      message: expect.stringContaining('no response left for node "w[1]"'),
    });
    // Outside a map the node's first unused response, as ever.
    expect(await model.call(messages, { node: "w", consumed: { w: 4 } })).toMatchObject({ scriptedIndex: 4 });
  });

  it("merges counts by the larger count per group, lists by union, and counts written over a stored list replace it", () => {
    expect(mergeConsumed({ s: { a: 2, "*": 1 } }, { s: { a: 1, b: 3 } })).toEqual({ s: { a: 2, b: 3, "*": 1 } });
    expect(mergeConsumed({ s: { a: 2 } }, { t: { a: 1 } })).toEqual({ s: { a: 2 }, t: { a: 1 } });
    expect(mergeConsumed({ s: [0, 2] }, { s: [1] })).toEqual({ s: [0, 1, 2] });
    expect(mergeConsumed({ s: [0, 1, 2] }, { s: { a: 2, b: 1 } })).toEqual({ s: { a: 2, b: 1 } });
    // Idempotent: a subgraph handing back the whole channel, or a replayed write, changes nothing.
    const state = { s: { a: 2, "*": 1 } };
    expect(mergeConsumed(state, state)).toEqual(state);
  });

  it("answers from counts, returns the counts after the call, and reads a stored list of indices as counts", async () => {
    const { dir } = tempWorkspace({ prefix: "loopgraph-counts-" });
    writeFileSync(
      join(dir, "s.yaml"),
      "responses:\n  - { node: a, content: a0 }\n  - { content: any1 }\n  - { node: b, content: b2 }\n  - { node: a, content: a3 }\n",
    );
    const model = createModel("scripted:s.yaml", { cwd: dir, env: {} });

    const first = await model.call(messages, { node: "a" });
    expect(first).toMatchObject({ scriptedIndex: 0, scriptedConsumed: { a: 1 } });
    const second = await model.call(messages, { node: "a", consumed: first.scriptedConsumed });
    expect(second).toMatchObject({ scriptedIndex: 1, scriptedConsumed: { a: 1, "*": 1 } });
    expect(await model.call(messages, { node: "a", consumed: second.scriptedConsumed })).toMatchObject({
      scriptedIndex: 3,
      scriptedConsumed: { a: 2, "*": 1 },
    });
    expect(await model.call(messages, { node: "b", consumed: second.scriptedConsumed })).toMatchObject({
      scriptedIndex: 2,
      scriptedConsumed: { a: 1, b: 1, "*": 1 },
    });

    // The list an earlier version stored: the same choice as the counts it stands for.
    expect(await model.call(messages, { node: "a", consumed: [0, 1] })).toMatchObject({
      scriptedIndex: 3,
      scriptedConsumed: { a: 2, "*": 1 },
    });
    expect(await model.call(messages, { node: "b", consumed: [0, 2] })).toMatchObject({
      scriptedIndex: 1,
      scriptedConsumed: { a: 1, b: 1, "*": 1 },
    });

    await expect(model.call(messages, { node: "b", consumed: { a: 2, b: 1, "*": 1 } })).rejects.toMatchObject({
      kind: "exhausted",
      message: 'scripted model exhausted: no response left for node "b" in s.yaml (4 of 4 used)',
    });
  });

  it("a response with `task` goes only to calls of a run whose task matches it; counts are positions among those", async () => {
    const { dir } = tempWorkspace({ prefix: "loopgraph-task-" });
    writeFileSync(
      join(dir, "s.yaml"),
      'responses:\n  - { node: a, task: "^Fix sum", content: sum0 }\n  - { node: a, task: count, content: count1 }\n  - { node: a, content: any2 }\n  - { node: a, task: "^Fix sum", content: sum3 }\n',
    );
    const model = createModel("scripted:s.yaml", { cwd: dir, env: {} });
    const call = (task: string, consumed?: { a: number }) => model.call(messages, { node: "a", task, ...(consumed && { consumed }) });

    expect(await call("Fix sum.js")).toMatchObject({ scriptedIndex: 0, scriptedConsumed: { a: 1 } });
    expect(await call("Fix sum.js", { a: 2 })).toMatchObject({ scriptedIndex: 3, scriptedConsumed: { a: 3 } });
    expect(await call("Fix the word count")).toMatchObject({ scriptedIndex: 1, scriptedConsumed: { a: 1 } });
    expect(await call("Fix the word count", { a: 1 })).toMatchObject({ scriptedIndex: 2, scriptedConsumed: { a: 2 } });
    // A call without a task is matched as the empty text: only the responses without `task` are its.
    expect(await model.call(messages, { node: "a" })).toMatchObject({ scriptedIndex: 2 });
    await expect(call("Fix the word count", { a: 2 })).rejects.toMatchObject({
      kind: "exhausted",
      message: `scripted model exhausted: no response left for node "a" in s.yaml for this run's task (2 of its 4 match it) (2 of 2 used)`,
    });
  });

  it("two runs of one script with different tasks take their own responses, and a fork of a run keeps its task's", async () => {
    const ws = exampleCopy();
    writeFileSync(
      ws.script,
      `responses:
  - { node: draft, task: "^Explain", content: "About loopgraph." }
  - { node: draft, task: "^Describe", content: "About graphs." }
  - { node: critique, content: '{"verdict": "approve", "notes": "Good."}' }
`,
    );
    const spec = `scripted:${ws.script}`;
    const base = { db: ws.db, cwd: ws.dir, settings: settingsOf({ XDG_CONFIG_HOME: testConfigHome() }), model: spec, workspace: ws.dir };
    const explain = await runGraph({ ...base, graph: ws.graph, task: "Explain loopgraph", threadId: "explain" });
    const describe = await runGraph({ ...base, graph: ws.graph, task: "Describe graphs", threadId: "describe" });
    expect([explain.status, describe.status], explain.error ?? describe.error).toEqual(["finished", "finished"]);
    expect([explain.state.outputs.draft, describe.state.outputs.draft]).toEqual(["About loopgraph.", "About graphs."]);
    expect(describe.state.scripted).toEqual({ [spec]: { draft: 1, critique: 1 } });

    // The fork opens the recorded thread: its draft, asked again from the script's start, is its own task's.
    const start = (await historyOf(ws.db, "describe")).checkpoints.find((c) => c.nodes.includes("start"))!;
    const forked = await forkRun({ ...base, threadId: "describe", from: start.checkpointId, set: ["scripted={}"] });
    expect(forked.status, forked.error).toBe("finished");
    expect(forked.state.outputs.draft).toBe("About graphs.");
  });

  it("a thread whose state holds the consumption as a list of indices (as stored before the counts) continues with the next responses", async () => {
    const ws = exampleCopy();
    writeFileSync(ws.script, EXAMPLE_SCRIPT);
    const spec = `scripted:${ws.script}`;
    const base = { db: ws.db, cwd: ws.dir, settings: settingsOf({ XDG_CONFIG_HOME: testConfigHome() }), model: spec };
    const first = await runGraph({ ...base, graph: ws.graph, task: "Explain loopgraph", threadId: "t", workspace: ws.dir });
    expect(first.status, first.error).toBe("finished");
    expect(first.state.scripted).toEqual({ [spec]: { draft: 1, critique: 2, revise: 1 } });

    // The branch starts at the first critique with the list form of what was used by then
    // (responses 0 and 1): revise and the second critique must take responses 2 and 3. Read as
    // nothing used, the critique would take response 1 ("revise") again and the script run out.
    const critique = (await historyOf(ws.db, "t")).checkpoints.find((c) => c.nodes.includes("critique"))!;
    const forked = await forkRun({
      ...base,
      threadId: "t",
      from: critique.checkpointId,
      set: [`scripted=${JSON.stringify({ [spec]: [0, 1] })}`],
    });
    expect(forked.status, forked.error).toBe("finished");
    expect(forked.state.outputs.critique).toEqual({ verdict: "approve", notes: "Good." });
    expect(forked.state.scripted).toEqual({ [spec]: { draft: 1, critique: 2, revise: 1 } });

    // The list was stored in the thread (the branch's first checkpoint), then replaced by counts.
    const branch = (await historyOf(ws.db, "t")).checkpoints.filter((c) => c.branch === 1);
    expect((await stateAt<{ scripted: unknown }>(ws.db, "t", branch[0]!.checkpointId)).scripted).toEqual({ [spec]: [0, 1] });
  });
});
