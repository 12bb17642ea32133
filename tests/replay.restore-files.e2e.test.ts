import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { historyOf } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/snapshots");

describe("replay --from <checkpoint> --restore-files", () => {
  it("puts the agent's files back as they were at the checkpoint before the branch runs; other files are left alone", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const run = await runCli([
      "run",
      "coder",
      "--task",
      "write a.txt",
      "--thread",
      "rf",
      "--workspace",
      ws.dir,
      "--db",
      ws.db,
      "--model",
      `scripted:${join(FIXTURES, "one-write.script.yaml")}`,
      "--approval",
      "auto",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("written by the agent\n");
    writeFileSync(join(ws.dir, "mine.txt"), "made by hand\n");

    const history = await historyOf(ws.db, "rf");
    const first = history.checkpoints[0]!.checkpointId;
    const fork = await runCli([
      "replay",
      "rf",
      "--from",
      first,
      "--restore-files",
      "--db",
      ws.db,
      "--json",
      "--model",
      `scripted:${join(FIXTURES, "no-op.script.yaml")}`,
      "--approval",
      "auto",
    ]);
    expect(fork.code, fork.stderr + fork.stdout).toBe(0);
    const forked = parseEvents(fork.stdout).find((event) => event.type === "fork");
    expect(forked?.restored).toEqual([{ action: "delete", path: "a.txt" }]);
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);
    expect(readFileSync(join(ws.dir, "mine.txt"), "utf8")).toBe("made by hand\n");

    const misused = await runCli(["replay", "rf", "--verify", "--restore-files", "--db", ws.db]);
    expect(misused.code).toBe(2);
    expect(misused.stderr.trim().split("\n")).toHaveLength(1);
  });
});
