import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { migrate } from "../src/store/sqlite/schema.js";
import type { StepCheckpoint } from "../src/runs/snapshot-log.js";
import { SnapshotLog } from "../src/store/sqlite/snapshot-log.js";
import { isAtOrAfter, type ParentLookup } from "../src/snapshots/checkpoint-order.js";
import { uniquePrefixes } from "../src/snapshots/restore.js";
import { planRewind } from "../src/snapshots/rewind-plan.js";
import { openSnapshotRepository } from "../src/snapshots/shadow-repo.js";
import { stepCheckpoint } from "../src/snapshots/step-checkpoint.js";
import { createToolStepSnapshots } from "../src/snapshots/tool-step-hook.js";
import { tempWorkspace } from "./helpers/workspace.js";

const workspace = (): string => tempWorkspace({ prefix: "loopgraph-steps-" }).dir;

/** The config LangGraph gives the Coder's `tools` node: its task namespace and the checkpoints it ran from. */
const coderConfig = (coderCheckpoint: string, root = "r1", task = "coder:a") => ({
  configurable: { checkpoint_ns: `${task}|tools:x`, checkpoint_map: { "": root, [task]: coderCheckpoint } },
});

const noParents: ParentLookup = () => new Map();

/** A snapshot log in an in-memory database with the store's schema. */
function memoryLog(): SnapshotLog {
  const db = new Database(":memory:");
  migrate(db);
  return new SnapshotLog(db);
}

describe("snapshots around tool steps", () => {
  it("reads the checkpoint a step started from out of LangGraph's config", () => {
    expect(stepCheckpoint(coderConfig("c7"))).toEqual({ ns: "coder:a", id: "c7", map: { "": "r1", "coder:a": "c7" } });
    expect(stepCheckpoint({ configurable: { checkpoint_ns: "agent:z", checkpoint_map: { "": "r3" } } })).toEqual({
      ns: "",
      id: "r3",
      map: { "": "r3" },
    });
    expect(stepCheckpoint({ configurable: {} })).toBeUndefined();
    expect(stepCheckpoint(undefined)).toBeUndefined();
  });

  it("records file-changing steps with their trees and changed paths, and skips the others", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const log = memoryLog();
    const warnings: string[] = [];
    const hook = createToolStepSnapshots({ threadId: "t", workspace: dir, log, warn: (m) => warnings.push(m) });

    const value = await hook.around({ node: "coder", tool: "write_file", toolCallId: "call-1", config: coderConfig("c1") }, async () => {
      writeFileSync(join(dir, "b.txt"), "b\n");
      return "written";
    });
    expect(value).toBe("written");
    await hook.around({ node: "coder", tool: "read_file", toolCallId: "call-2", config: coderConfig("c2") }, async () => "read");
    await hook.around({ node: "coder", tool: "shell", toolCallId: "call-3", config: coderConfig("c3") }, async () => {
      rmSync(join(dir, "a.txt"));
      writeFileSync(join(dir, "b.txt"), "b2\n");
    });

    const records = await log.list("t");
    expect(records.map((r) => [r.seq, r.tool, r.toolCallId, r.checkpoint.id, r.paths])).toEqual([
      [1, "write_file", "call-1", "c1", ["b.txt"]],
      [2, "shell", "call-3", "c3", ["a.txt", "b.txt"]],
    ]);
    expect(records[1]!.treeBefore).toBe(records[0]!.treeAfter);
    expect(records[1]!.checkpoint.map).toEqual({ "": "r1", "coder:a": "c3" });
    expect(warnings).toEqual([]);
  });

  it("without git, warns once and still runs every step", async () => {
    const dir = workspace();
    const log = memoryLog();
    const warnings: string[] = [];
    const hook = createToolStepSnapshots({ threadId: "t", workspace: dir, log, warn: (m) => warnings.push(m) });
    const path = process.env.PATH;
    process.env.PATH = workspace();
    try {
      for (const id of ["1", "2"]) {
        await hook.around({ node: "coder", tool: "write_file", toolCallId: id, config: coderConfig(`c${id}`) }, async () =>
          writeFileSync(join(dir, `${id}.txt`), id),
        );
      }
    } finally {
      process.env.PATH = path;
    }
    expect(readFileSync(join(dir, "2.txt"), "utf8")).toBe("2");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/snapshots are off.*git is not installed/);
    expect(await log.list("t")).toEqual([]);
  });

  it("a step whose process died before its second snapshot counts until the next step", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const log = memoryLog();
    const repo = await openSnapshotRepository(dir);
    // Step 1 started, changed a.txt and c.txt, and its process was killed: no "after" snapshot.
    await log.open({
      threadId: "t",
      checkpoint: stepCheckpoint(coderConfig("c1"))!,
      node: "coder",
      tool: "shell",
      toolCallId: "1",
      treeBefore: await repo.capture(),
    });
    writeFileSync(join(dir, "a.txt"), "changed\n");
    writeFileSync(join(dir, "c.txt"), "new\n");
    // The resumed run's step 2 (from the same checkpoint) writes b.txt.
    const hook = createToolStepSnapshots({ threadId: "t", workspace: dir, log, warn: () => undefined });
    await hook.around({ node: "coder", tool: "write_file", toolCallId: "2", config: coderConfig("c1") }, async () =>
      writeFileSync(join(dir, "b.txt"), "b\n"),
    );
    expect((await log.list("t")).map((r) => r.paths)).toEqual([undefined, ["b.txt"]]);

    const plan = await planRewind(repo, await log.list("t"), stepCheckpoint(coderConfig("c1"))!, noParents);
    expect(plan.since?.seq).toBe(1);
    expect(plan.changes).toEqual([
      { action: "restore", path: "a.txt" },
      { action: "delete", path: "b.txt" },
      { action: "delete", path: "c.txt" },
    ]);
  });

  it("plans only the paths the agent changed: a file the user edits by hand is left alone", async () => {
    const dir = workspace();
    writeFileSync(join(dir, "agent.txt"), "v1\n");
    writeFileSync(join(dir, "user.txt"), "v1\n");
    mkdirSync(join(dir, "gone"));
    writeFileSync(join(dir, "gone/x.txt"), "x\n");
    const log = memoryLog();
    const hook = createToolStepSnapshots({ threadId: "t", workspace: dir, log, warn: () => undefined });
    await hook.around({ node: "coder", tool: "edit_file", toolCallId: "1", config: coderConfig("c1") }, async () =>
      writeFileSync(join(dir, "agent.txt"), "v2\n"),
    );
    writeFileSync(join(dir, "user.txt"), "edited by hand between steps\n");
    await hook.around({ node: "coder", tool: "shell", toolCallId: "2", config: coderConfig("c2") }, async () =>
      rmSync(join(dir, "gone"), { recursive: true }),
    );
    writeFileSync(join(dir, "user.txt"), "edited by hand after the run\n");

    const repo = await openSnapshotRepository(dir);
    const all = await log.list("t");
    const parents: ParentLookup = (ns) => new Map(ns === "coder:a" ? [["c2", "c1"]] : []);
    const fromStart = await planRewind(repo, all, { ns: "coder:a", id: "c1", map: { "": "r1", "coder:a": "c1" } }, parents);
    expect(fromStart.changes).toEqual([
      { action: "restore", path: "agent.txt" },
      { action: "recreate", path: "gone/x.txt" },
    ]);
    const fromSecond = await planRewind(repo, all, { ns: "coder:a", id: "c2", map: { "": "r1", "coder:a": "c2" } }, parents);
    expect(fromSecond.changes).toEqual([{ action: "recreate", path: "gone/x.txt" }]);
    // After the last step: nothing to do.
    const parentsAfter: ParentLookup = (ns) => new Map(ns === "" ? [["r2", "r1"]] : []);
    expect(await planRewind(repo, all, { ns: "", id: "r2", map: { "": "r2" } }, parentsAfter)).toEqual({ changes: [], withheld: [] });
    expect(existsSync(join(dir, "gone"))).toBe(false);
  });
});

describe("checkpoint order", () => {
  // Root: r0 → r1 → r2, and a fork r1 → r1b. The Coder ran from r1 (c0 → c1 → c2) and, in the fork, from r1b (d0 → d1).
  const links: Record<string, Array<[string, string]>> = {
    "": [
      ["r1", "r0"],
      ["r2", "r1"],
      ["r1b", "r1"],
    ],
    "coder:a": [
      ["c1", "c0"],
      ["c2", "c1"],
    ],
    "coder:b": [["d1", "d0"]],
  };
  const parents: ParentLookup = (ns) => new Map(links[ns] ?? []);
  const step = (ns: string, id: string, root: string): StepCheckpoint => ({ ns, id, map: { "": root, [ns]: id } });
  const steps = {
    s1: step("coder:a", "c0", "r1"),
    s2: step("coder:a", "c1", "r1"),
    s3: step("coder:a", "c2", "r1"),
    s4: step("coder:b", "d1", "r1b"),
  };
  const after = (target: StepCheckpoint) =>
    Object.entries(steps)
      .filter(([, s]) => isAtOrAfter(s, target, parents))
      .map(([name]) => name);

  it("a root checkpoint comes before the steps of the nodes that ran from it or its descendants", () => {
    expect(after({ ns: "", id: "r0", map: { "": "r0" } })).toEqual(["s1", "s2", "s3", "s4"]);
    expect(after({ ns: "", id: "r1", map: { "": "r1" } })).toEqual(["s1", "s2", "s3", "s4"]);
    expect(after({ ns: "", id: "r2", map: { "": "r2" } })).toEqual([]);
    expect(after({ ns: "", id: "r1b", map: { "": "r1b" } })).toEqual(["s4"]);
  });

  it("a Coder step checkpoint comes before its own step, the later ones of that Coder run, and steps that ran from later root checkpoints", () => {
    // s4 ran in a branch forked from r1, the checkpoint this Coder run started from: it counts as later.
    expect(after(step("coder:a", "c1", "r1"))).toEqual(["s2", "s3", "s4"]);
    expect(after(step("coder:a", "c2", "r1"))).toEqual(["s3", "s4"]);
    expect(after(step("coder:b", "d0", "r1b"))).toEqual(["s4"]);
    expect(after(step("coder:b", "d1", "r1b"))).toEqual(["s4"]);
  });

  it("names each checkpoint by its shortest unique prefix, at least 8 characters", () => {
    const prefixes = uniquePrefixes(["1f1e6120-191f-6ae0", "1f1e6120-1dc9-6870", "1f1e6120-1dc0-0000", "2abcdef0-0000"]);
    expect(prefixes.get("1f1e6120-191f-6ae0")).toBe("1f1e6120-19");
    expect(prefixes.get("1f1e6120-1dc9-6870")).toBe("1f1e6120-1dc9");
    expect(prefixes.get("2abcdef0-0000")).toBe("2abcdef0");
  });
});
