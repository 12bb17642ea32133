/**
 * Secrets never at rest: the values of the secrets in loopgraph's environment are redacted from
 * tool results and their artifacts, checkpoints and pending writes, and snapshot objects (a
 * workspace file that holds one is stored with the value redacted, and a rewind leaves it alone).
 */
import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { openStore } from "../src/store/store.js";
import { REDACTED, redactJson, redactValues, StreamRedactor } from "../src/runs/redact.js";
import { openSnapshotRepository } from "../src/snapshots/shadow-repo.js";
import { planRewind } from "../src/snapshots/rewind-plan.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";
import { tempWorkspace } from "./helpers/workspace.js";

const SECRET = "ghp_atrest_canary_0123456789abcdef";
const QUOTED = 'pw"with\\quotes-0123';

/** Every regular file under `dir`, recursively, as bytes. */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .map((path) => ({ path, bytes: readFileSync(path) }));
}

/** Every object of a git repository, decompressed, concatenated. */
function allObjects(gitDir: string): string {
  return execFileSync("git", ["--git-dir", gitDir, "cat-file", "--batch-all-objects", "--batch"], {
    encoding: "latin1",
    maxBuffer: 1 << 28,
  });
}

describe("redacting a stream", () => {
  it("finds a secret split across chunks at every position, and each of several secrets", () => {
    const text = `before ${SECRET} middle ${SECRET}${SECRET} and sk-other-secret-42 after`;
    const expected = `before ${REDACTED} middle ${REDACTED}${REDACTED} and ${REDACTED} after`;
    for (let cut = 0; cut <= text.length; cut++) {
      for (const second of [cut, Math.min(text.length, cut + 3)]) {
        const redactor = new StreamRedactor([SECRET, "sk-other-secret-42"]);
        const bytes = Buffer.from(text);
        const out = Buffer.concat([
          redactor.write(bytes.subarray(0, cut)),
          redactor.write(bytes.subarray(cut, second)),
          redactor.write(bytes.subarray(second)),
          redactor.end(),
        ]);
        expect(out.toString()).toBe(expected);
      }
    }
  });

  it("holds back only an end that could begin a secret: other output passes at once (what is shown live does not lag)", () => {
    const redactor = new StreamRedactor([SECRET]);
    expect(redactor.write(Buffer.from("building...\n")).toString()).toBe("building...\n");
    expect(redactor.write(Buffer.from("token ghp_at")).toString()).toBe("token ");
    expect(redactor.write(Buffer.from("tempt\n")).toString()).toBe("ghp_attempt\n");
    expect(redactor.write(Buffer.from(`x ${SECRET.slice(0, 10)}`)).toString()).toBe("x ");
    expect(redactor.write(Buffer.from(`${SECRET.slice(10)} y`)).toString()).toBe(`${REDACTED} y`);
    expect(redactor.end().toString()).toBe("");
  });

  it("also finds a secret reversed, in hex, and inside base64 at any alignment", () => {
    for (const prefix of ["", "a", "ab", "abc"]) {
      const encoded = Buffer.from(`${prefix}token=${SECRET}\nmore`).toString("base64");
      expect(redactValues(encoded, [SECRET])).toContain(REDACTED);
    }
    const hex = Buffer.from(SECRET).toString("hex");
    expect(redactValues(`${hex} ${hex.toUpperCase()} ${[...SECRET].reverse().join("")}`, [SECRET])).toBe(
      `${REDACTED} ${REDACTED} ${REDACTED}`,
    );
  });

  it("passes bytes through untouched without secrets", () => {
    const redactor = new StreamRedactor([]);
    const chunk = Buffer.from([0, 255, 10]);
    expect(redactor.write(chunk)).toBe(chunk);
    expect(redactor.end().length).toBe(0);
  });

  it("redacts JSON values, also where JSON escapes the secret", () => {
    const value = { out: `x ${QUOTED} y`, nested: [SECRET] };
    expect(redactJson(value, [QUOTED, SECRET])).toEqual({ out: `x ${REDACTED} y`, nested: [REDACTED] });
    expect(redactJson(value, [])).toBe(value);
  });
});

describe("tool results and artifacts", () => {
  it("the shell's output reaches neither the model nor the artifact with a secret in it, however long", async () => {
    const ws = makeWorkspace({ "config.txt": `token=${SECRET}\n` }, { secrets: [SECRET] });
    const small = await ws.call("shell", { command: "cat config.txt" });
    expect(small.content).toContain(`token=${REDACTED}`);
    expect(small.content).not.toContain(SECRET);
    // Over 4 MB: spooled to a file, then saved whole as an artifact.
    const big = await ws.call("shell", { command: `yes "line: $(cat config.txt)" | head -n 120000` });
    expect(big.content).not.toContain(SECRET);
    const artifacts = filesUnder(ws.ctx.artifactsDir);
    expect(artifacts.length).toBeGreaterThan(0);
    expect(artifacts.some(({ bytes }) => bytes.includes(`token=${REDACTED}`))).toBe(true);
    for (const { path, bytes } of artifacts) expect(bytes.includes(SECRET), path).toBe(false);
  });

  it("read_file and grep show the value redacted, and a long result's artifact too", async () => {
    const long = `${"filler line\n".repeat(5000)}key: ${SECRET}\n`;
    const ws = makeWorkspace({ "a.txt": `key: ${SECRET}\n`, "long.txt": long }, { secrets: [SECRET] });
    expect((await ws.call("read_file", { path: "a.txt" })).content).toContain(`key: ${REDACTED}`);
    expect((await ws.call("grep", { pattern: "key:" })).content).not.toContain(SECRET);
    const read = await ws.call("read_file", { path: "long.txt", limit: 100000 });
    expect(read.content).not.toContain(SECRET);
    for (const { path, bytes } of filesUnder(ws.ctx.artifactsDir)) expect(bytes.includes(SECRET), path).toBe(false);
  });
});

describe("checkpoints and pending writes", () => {
  it("the store never holds a secret from the environment, whatever a node puts in the state", async () => {
    const ws = tempWorkspace();
    const db = join(ws.dir, "store.db");
    const store = await openStore({ db, env: { GITHUB_TOKEN: SECRET, DATABASE_URL: `postgres://u:${QUOTED}@h/db` } }, "create");
    const State = Annotation.Root({ notes: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }) });
    const graph = new StateGraph(State)
      .addNode("leak", async () => ({ notes: [`token ${SECRET}`, `url postgres://u:${QUOTED}@h/db`] }))
      .addEdge(START, "leak")
      .addEdge("leak", END)
      .compile({ checkpointer: store.saver });
    const config = { configurable: { thread_id: "t" } };
    await graph.invoke({ notes: [] }, config);
    const state = await graph.getState(config);
    await store.close();
    // The whole connection string is the secret value.
    expect(state.values.notes).toEqual([`token ${REDACTED}`, `url ${REDACTED}`]);
    for (const file of readdirSync(ws.dir).filter((name) => name.startsWith("store.db"))) {
      const bytes = readFileSync(join(ws.dir, file));
      expect(bytes.includes(SECRET), file).toBe(false);
      expect(bytes.includes(QUOTED) || bytes.includes(JSON.stringify(QUOTED).slice(1, -1)), file).toBe(false);
    }
  });
});

describe("workspace snapshots", () => {
  it("store a file that holds a secret with the value redacted, write no object with it, and a rewind leaves that file alone", async () => {
    const ws = tempWorkspace({ files: { "notes.txt": "v1\n" } });
    const repo = await openSnapshotRepository(ws.dir, { secrets: [SECRET] });
    const before = await repo.capture();
    writeFileSync(join(ws.dir, "notes.txt"), "v2\n");
    writeFileSync(join(ws.dir, "leak.txt"), `copied ${SECRET}\n`);
    const middle = await repo.capture();
    writeFileSync(join(ws.dir, "leak.txt"), "overwritten\n");
    writeFileSync(join(ws.dir, "notes.txt"), "v3\n");
    const after = await repo.capture();
    const gitDir = join(ws.dir, ".loopgraph", "snapshots.git");
    const objects = allObjects(gitDir);
    expect(objects).not.toContain(SECRET);
    expect(objects).toContain(`copied ${REDACTED}`);
    // No quarantine is left behind.
    expect(readdirSync(join(gitDir, "objects")).filter((name) => name.startsWith("incoming-"))).toEqual([]);

    const snapshots = [
      {
        threadId: "t",
        seq: 1,
        checkpoint: { ns: "", id: "c1", map: { "": "c1" } },
        node: "coder",
        tool: "shell",
        toolCallId: "a",
        treeBefore: before,
        treeAfter: middle,
        paths: ["leak.txt", "notes.txt"],
        createdAt: "",
      },
      {
        threadId: "t",
        seq: 2,
        checkpoint: { ns: "", id: "c2", map: { "": "c2" } },
        node: "coder",
        tool: "shell",
        toolCallId: "b",
        treeBefore: middle,
        treeAfter: after,
        paths: ["leak.txt", "notes.txt"],
        createdAt: "",
      },
    ];
    const parents = (ns: string) => new Map(ns === "" ? [["c2", "c1"]] : []);
    const toMiddle = await planRewind(repo, snapshots, { ns: "", id: "c2", map: { "": "c2" } }, parents);
    expect(toMiddle.withheld).toEqual(["leak.txt"]);
    expect(toMiddle.changes).toEqual([{ action: "restore", path: "notes.txt" }]);
    // Rewinding to before the leak restores the file's earlier state (it did not exist): nothing withheld.
    const toStart = await planRewind(repo, snapshots, { ns: "", id: "c1", map: { "": "c1" } }, parents);
    expect(toStart.withheld).toEqual([]);
    expect(toStart.changes).toEqual([
      { action: "delete", path: "leak.txt" },
      { action: "restore", path: "notes.txt" },
    ]);
    expect(statSync(join(ws.dir, "leak.txt")).isFile()).toBe(true);
  });

  it("remove a quarantine left by a process killed in the middle of a snapshot, and only a stale one", async () => {
    const ws = tempWorkspace({ files: { "a.txt": "a\n" } });
    const repo = await openSnapshotRepository(ws.dir, { secrets: [SECRET] });
    await repo.capture();
    const objects = join(ws.dir, ".loopgraph", "snapshots.git", "objects");
    for (const name of ["incoming-stale", "incoming-fresh"]) {
      mkdirSync(join(objects, name, "ab"), { recursive: true });
      writeFileSync(join(objects, name, "ab", "cdef"), `unredacted ${SECRET}`);
    }
    const old = new Date(Date.now() - 60 * 60_000);
    utimesSync(join(objects, "incoming-stale"), old, old);
    writeFileSync(join(ws.dir, "a.txt"), "b\n");
    await repo.capture();
    expect(readdirSync(objects).filter((name) => name.startsWith("incoming-"))).toEqual(["incoming-fresh"]);
  });

  it("keep a hard-linked file as a note, never its content (another link may be outside the workspace)", async () => {
    const ws = tempWorkspace({ files: { "plain.txt": "plain\n" } });
    const outside = join(ws.dir, "..", "outside-secret.txt");
    writeFileSync(outside, "outside canary 7f3e\n");
    linkSync(outside, join(ws.dir, "hl.txt"));
    const repo = await openSnapshotRepository(ws.dir);
    const tree = await repo.capture();
    const objects = allObjects(join(ws.dir, ".loopgraph", "snapshots.git"));
    expect(objects).not.toContain("outside canary 7f3e");
    expect(objects).toContain("plain\n");
    expect(objects).toContain("not kept: this file has several hard links");
    expect(await repo.withheld(tree, ["hl.txt", "plain.txt"])).toEqual(["hl.txt"]);
  });

  it("the Review's baseline writes no object with a secret into the user's repository", async () => {
    const { captureBaseline, changesSinceBaseline } = await import("../src/nodes/review/baseline.js");
    const ws = tempWorkspace({ git: true, files: { "README.md": "# x\n" } });
    const baseline = await captureBaseline(ws.dir, [SECRET]);
    writeFileSync(join(ws.dir, "config.txt"), `token=${SECRET}\n`);
    const changes = await changesSinceBaseline(ws.dir, baseline, [SECRET]);
    expect(changes.patch).toContain(`+token=${REDACTED}`);
    expect(allObjects(join(ws.dir, ".git"))).not.toContain(SECRET);
  });
});
