import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { executeToolCall } from "../src/tools/registry.js";
import { createShellTool } from "../src/tools/shell.js";
import { makeWorkspace, type TestWorkspace } from "./helpers/tool-workspace.js";
import { eventually } from "./helpers/cli.js";

const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** State and process group of a process from /proc, or undefined when it is gone. */
function procStat(pid: number | string): { state: string; pgid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state, , group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: state!, pgid: Number(group) };
  } catch {
    return undefined;
  }
}

/**
 * Whether a process still runs. Zombies do not count: killed orphans wait there until the
 * container's PID 1 reaps them, which some do late or never.
 */
function isRunning(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

/** Running processes of group `pgid`. */
function liveMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && isRunning(Number(name)) && procStat(name)?.pgid === pgid)
    .map(Number);
}

function readPid(ws: TestWorkspace, file: string): number {
  return Number(readFileSync(join(ws.root, file), "utf8").trim());
}

/*
 * A killed process takes a moment to die, longer when the machine is busy: the tests wait for that
 * (`eventually`), not for a fixed time. The commands they start sleep for 60 s, far longer.
 */
/** The group's running members, once there are none (or still some after the wait). */
const membersAfterKill = (pgid: number): Promise<number[]> =>
  eventually(
    () => liveMembers(pgid),
    (members) => members.length === 0,
  );

/** The process-group checks read /proc. */
const hasProc = existsSync("/proc/self/stat");
const needsProc = (name: string) => (hasProc ? name : `${name} (skipped: no /proc to watch process groups)`);

describe("shell", () => {
  it("runs bash in the workspace and reports exit code, stdout and stderr; a failing command is not an error", async () => {
    const ws = makeWorkspace();
    const result = await ws.call("shell", { command: "pwd; echo oops >&2; printf 'no newline'; exit 3" });
    expect(result).toEqual({ ok: true, content: `exit code: 3\n--- stdout ---\n${ws.root}\nno newline\n--- stderr ---\noops\n` });
  });

  it("gives the command an empty stdin and says when there is no output", async () => {
    const ws = makeWorkspace();
    expect(await ws.call("shell", { command: "cat" })).toEqual({ ok: true, content: "exit code: 0\n(no output)\n" });
  });

  it.skipIf(!hasProc)(needsProc("kills the whole process group on timeout and returns the output so far"), async () => {
    const ws = makeWorkspace();
    const begin = Date.now();
    const result = await ws.call("shell", {
      command: "echo $$ > pgid; sleep 60 & echo $! > child.pid; (sleep 60 &); echo waiting; wait",
      timeout_ms: 500,
    });
    // The command would wait 60 s for its sleeps: returning well before proves the timeout ended it.
    expect(Date.now() - begin).toBeLessThan(30_000);
    expect(result).toMatchObject({ ok: false, errorKind: "timeout" });
    expect(result.content).toBe(
      "timed out after 500 ms: the command and every process it started were killed. Output until then:\n--- stdout ---\nwaiting\n",
    );
    expect(await membersAfterKill(readPid(ws, "pgid"))).toEqual([]);
    expect(
      await eventually(
        () => isRunning(readPid(ws, "child.pid")),
        (running) => !running,
      ),
    ).toBe(false);
  });

  it.skipIf(!hasProc)(needsProc("follows SIGTERM with SIGKILL for processes that ignore it"), async () => {
    const ws = makeWorkspace();
    const tools = [createShellTool({ killGraceMs: 200 })];
    const result = await ws.call("shell", { command: "trap '' TERM; echo $$ > pgid; sleep 60; sleep 60", timeout_ms: 300 }, tools);
    expect(result.errorKind).toBe("timeout");
    expect(await membersAfterKill(readPid(ws, "pgid"))).toEqual([]);
  });

  it.skipIf(!hasProc)(needsProc("is cancelled through the context's AbortSignal, killing the group"), async () => {
    const ws = makeWorkspace();
    const controller = new AbortController();
    // Cancelled once the command has started (it wrote its group id), however slow the machine.
    void eventually(
      () => existsSync(join(ws.root, "pgid")) && readFileSync(join(ws.root, "pgid"), "utf8").endsWith("\n"),
      Boolean,
      40_000,
    ).then(() => controller.abort());
    const result = await executeToolCall(
      { id: "c1", name: "shell", args: { command: "echo $$ > pgid; (sleep 60 &); sleep 60" } },
      { ...ws.ctx, signal: controller.signal },
    );
    expect(result).toMatchObject({ ok: false, errorKind: "failed" });
    expect(result.content).toMatch(/^cancelled: the command and every process it started were killed/);
    expect(await membersAfterKill(readPid(ws, "pgid"))).toEqual([]);
  });

  it("returns when the command exits even if a background process keeps running", async () => {
    const ws = makeWorkspace();
    const begin = Date.now();
    const quiet = await ws.call("shell", { command: "sleep 30 > /dev/null 2>&1 & echo $!" });
    started.push(Number(/\n(\d+)\n/.exec(quiet.content)![1]));
    const holding = await ws.call("shell", { command: "sleep 30 & echo $!" });
    started.push(Number(/\n(\d+)\n/.exec(holding.content)![1]));
    // The background sleeps last 30 s: returning well before proves the shell did not wait for them.
    expect(Date.now() - begin).toBeLessThan(20_000);
    expect(quiet.content).toMatch(/^exit code: 0\n--- stdout ---\n\d+\n$/);
    expect(holding.content).toMatch(/^exit code: 0\nnote: background processes still hold stdout\/stderr/);
  });

  it("streams a 5 MB output into its artifact as it comes, keeps only a bounded view, and shows the model its head and tail", async () => {
    const ws = makeWorkspace();
    const command = "yes abcdefghi | head -n 500000; echo done >&2; while [ ! -e go ]; do sleep 0.02; done";
    const running = createShellTool().run({ command }, ws.ctx);
    // The whole stdout is on disk, in the file the result will name, before the command ends.
    const spool = await eventually(
      () => (existsSync(ws.ctx.artifactsDir) ? readdirSync(ws.ctx.artifactsDir) : []).map((name) => join(ws.ctx.artifactsDir, name)),
      (files) => files.length === 1 && statSync(files[0]!).size === 5_000_015,
    );
    const inode = statSync(spool[0]!).ino;
    ws.write("go", "");
    const output = await running;
    // The view holds the head and tail the model's budget needs, not the stream.
    expect(output.content.length).toBeLessThan(300_000);
    expect(output.fullOutput).toMatchObject({ file: spool[0], viewOnlyLines: 1 });
    expect(statSync(spool[0]!).ino).toBe(inode);

    const result = await ws.call("shell", { command: "seq 1 600000; echo done >&2" });
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThan(31_000);
    expect(result.content.startsWith("exit code: 0\n--- stdout ---\n1\n2\n")).toBe(true);
    expect(result.content.endsWith("\n600000\n--- stderr ---\ndone\n")).toBe(true);
    const artifact = result.artifact!;
    expect(artifact.startsWith(ws.ctx.artifactsDir)).toBe(true);
    // The full output, less the status line the view begins with.
    const numbers = Array.from({ length: 600_000 }, (_, i) => `${i + 1}\n`).join("");
    const expected = Buffer.from(`--- stdout ---\n${numbers}--- stderr ---\ndone\n`);
    expect(readFileSync(artifact).equals(expected)).toBe(true);
    expect(readdirSync(ws.ctx.artifactsDir).sort()).toEqual(
      [spool[0]!, artifact].map((file) => file.slice(ws.ctx.artifactsDir.length + 1)).sort(),
    );

    const relative = artifact.slice(ws.root.length + 1);
    const marker = result.content.split("\n").find((line) => line.startsWith("[... "))!;
    expect(marker).toMatch(
      new RegExp(
        `^\\[\\.\\.\\. \\d+ bytes cut here \\(lines (\\d+)-(\\d+) of 600003\\); the full output is saved in ${relative.replace(/\./g, "\\.")}: read it with read_file, e\\.g\\. offset \\1 \\.\\.\\.\\]$`,
      ),
    );
    const [firstCut, lastCut] = /lines (\d+)-(\d+)/.exec(marker)!.slice(1).map(Number);
    // The lines around the cut are those the view shows last before it and first after it.
    const shown = result.content.split("\n");
    const markerAt = shown.indexOf(marker);
    const read = await ws.call("read_file", { path: relative, offset: firstCut! - 1, limit: lastCut! - firstCut! + 3 });
    const lines = read.content.split("\n").map((line) => line.slice(line.indexOf("\t") + 1));
    expect(lines[0]).toBe(shown[markerAt - 1]);
    expect(lines.at(-2)).toBe(shown[markerAt + 1]);
  });

  it("rejects timeouts out of range", async () => {
    const ws = makeWorkspace();
    expect(await ws.call("shell", { command: "true", timeout_ms: 0 })).toMatchObject({ errorKind: "invalid_arguments" });
    expect(await ws.call("shell", { command: "true", timeout_ms: 600_001 })).toMatchObject({ errorKind: "invalid_arguments" });
  });
});
