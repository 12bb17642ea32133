/**
 * Hooks: their declarations' checks, one hook run with its event on stdin (as the shell tool runs a
 * command), and how a before_tool hook's outcome decides the call.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkHooks, type Hook } from "../src/tools/hook-config.js";
import { blockingReason, hookFailure, runHook, type HookOutcome } from "../src/tools/hooks.js";
import { availableSandbox, NO_SANDBOX } from "../src/tools/sandbox.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace } from "./helpers/workspace.js";

const user = { trusted: true, origin: "/home/me/.config/loopgraph/config.yaml" };
const hook = (command: string, overrides: Partial<Hook> = {}): Hook => ({
  event: "before_tool",
  command,
  timeoutMs: 5_000,
  ...user,
  ...overrides,
});
const outcome = (exitCode: number | null, stdout = "", stderr = "", extra: Partial<HookOutcome> = {}): HookOutcome => ({
  command: "check",
  exitCode,
  stdout,
  stderr,
  ...extra,
});

describe("hook declarations", () => {
  it("reads each event's hooks with their defaults", () => {
    const checked = checkHooks(
      { before_tool: [{ tools: "shell", command: "./check.sh", timeout: 5 }], stop: [{ command: "notify" }] },
      user,
    );
    expect(checked.problems).toEqual([]);
    expect(checked.hooks).toEqual([
      { event: "before_tool", command: "./check.sh", tools: "shell", timeoutMs: 5_000, ...user },
      { event: "stop", command: "notify", timeoutMs: 60_000, ...user },
    ]);
  });

  it("says what is wrong", () => {
    const messages = (value: unknown) => checkHooks(value, user).problems.map((problem) => `${problem.path.join(".")}: ${problem.message}`);
    expect(messages({ befor_tool: [] })).toEqual(['hooks.befor_tool: unknown key "befor_tool": did you mean "before_tool"?']);
    expect(messages({ stop: { command: "x" } })).toEqual(["hooks.stop: hooks.stop must be a list of { command, tools, timeout }"]);
    expect(messages({ stop: [{ command: "x", tools: "shell" }] })).toEqual([
      "hooks.stop.0.tools: tools is for before_tool and after_tool hooks",
    ]);
    expect(messages({ after_tool: [{ command: "", tools: "a b", timeout: 0, when: 1 }] })).toEqual([
      'hooks.after_tool.0.when: unknown key "when": a hook has command, tools, timeout',
      "hooks.after_tool.0.command: command must be a bash command line, run in the workspace",
      "hooks.after_tool.0.tools: tools must be a tool name with * and ? wildcards, e.g. shell, *_file, docs__*",
      "hooks.after_tool.0.timeout: timeout must be the seconds the hook may take (a number, at most 3600)",
    ]);
  });
});

describe("a hook's outcome", () => {
  it("blocks a call by exit code 2 or a JSON decision; a hook that fails otherwise blocks it too", () => {
    expect(blockingReason(outcome(0, "looks fine\n"))).toBeUndefined();
    expect(blockingReason(outcome(0, '{"decision": "block", "reason": "not on main"}'))).toBe("not on main");
    expect(blockingReason(outcome(0, '{"decision": "allow"}'))).toBeUndefined();
    expect(blockingReason(outcome(2, "", "no rm here\n"))).toBe("no rm here");
    expect(blockingReason(outcome(2))).toBe("the hook `check` blocked it");
    expect(blockingReason(outcome(1, "", "jq: not found"))).toBe(
      "the before_tool hook `check` failed (it exited with 1), so the call was not run: jq: not found",
    );
    expect(blockingReason(outcome(null, "", "", { timedOut: true }))).toBe(
      "the before_tool hook `check` failed (it timed out), so the call was not run",
    );
    expect(hookFailure("stop", outcome(0))).toBeUndefined();
    expect(hookFailure("stop", outcome(3, "", "a\nb\nc\nd"))).toBe("the stop hook `check` exited with 3: b | c | d");
  });

  it("runs in the workspace with its event as JSON on stdin, its output redacted, killed at its timeout", async () => {
    const ws = tempWorkspace();
    const ctx = {
      workspace: ws.dir,
      env: process.env,
      artifactsDir: `${ws.dir}/.loopgraph/artifacts/t`,
      sandbox: NO_SANDBOX,
      secrets: ["s3cr3t-value"],
    };
    const ran = await runHook(hook('cat; pwd; echo "s3cr3t-value" >&2'), { event: "before_tool", tool: { name: "shell" } }, ctx);
    expect(ran).toMatchObject({ exitCode: 0, stderr: "[redacted]\n" });
    expect(ran.stdout).toBe(`{"event":"before_tool","tool":{"name":"shell"}}\n${ws.dir}\n`);
    const slow = await runHook(hook("sleep 5", { timeoutMs: 200 }), { event: "stop" }, ctx);
    expect(slow).toMatchObject({ exitCode: null, timedOut: true });
  });

  it("runs without the user's ~/.bashrc, which a bash reading its input from a socket would otherwise run (as if sshd started it)", async () => {
    const ws = tempWorkspace();
    const home = join(ws.root, "home");
    mkdirSync(home);
    writeFileSync(join(home, ".bashrc"), `touch ${join(ws.root, "bashrc-ran")}\n`);
    const ctx = {
      workspace: ws.dir,
      env: { ...process.env, HOME: home },
      artifactsDir: `${ws.dir}/.loopgraph/artifacts/t`,
      sandbox: NO_SANDBOX,
    };
    const ran = await runHook(hook("cat"), { event: "stop" }, ctx);
    expect(ran).toMatchObject({ exitCode: 0, stdout: '{"event":"stop"}\n' });
    expect(existsSync(join(ws.root, "bashrc-ran"))).toBe(false);
  });

  it("a project's hook runs only in the OS sandbox, with the workspace read-only: elsewhere it is skipped, and a before_tool one then blocks", async () => {
    const ws = tempWorkspace();
    const planted = hook("touch ran", { trusted: false, origin: "/p/loopgraph.yaml" });
    const skipped = await runHook(
      planted,
      { event: "before_tool" },
      { workspace: ws.dir, env: process.env, artifactsDir: ws.dir, sandbox: NO_SANDBOX },
    );
    expect(skipped.skipped).toBe(
      "not run: it is declared in /p/loopgraph.yaml, and such a hook runs only in the OS sandbox, but no OS sandbox can start here",
    );
    expect(blockingReason(skipped)).toMatch(/^the before_tool hook `touch ran` failed \(not run: it is declared in/);
  });

  it.skipIf(lacks("sandbox", "the hooks-in-bubblewrap test"))(
    "in the OS sandbox a project's hook reads the workspace but cannot change it; the user's own can",
    async () => {
      const ws = tempWorkspace();
      const planted = hook("touch ran", { trusted: false, origin: "/p/loopgraph.yaml" });
      const sandbox = availableSandbox({});
      const touch = `cat; touch ran; touch ${JSON.stringify(`${ws.root}/outside`)}`;
      const sandboxed = await runHook(
        { ...planted, command: touch },
        { event: "stop" },
        { workspace: ws.dir, env: process.env, artifactsDir: ws.dir, sandbox },
      );
      expect(sandboxed.stdout).toBe('{"event":"stop"}\n');
      expect(sandboxed.stderr).toMatch(/touch: cannot touch 'ran': Read-only file system/);
      expect(existsSync(join(ws.dir, "ran"))).toBe(false);
      const own = await runHook(
        { ...planted, trusted: true, command: touch },
        { event: "stop" },
        { workspace: ws.dir, env: process.env, artifactsDir: ws.dir, sandbox },
      );
      // What it wrote beside the workspace went to the sandbox's private /tmp, never to the real one.
      expect(own.exitCode).toBe(0);
      expect(existsSync(join(ws.dir, "ran"))).toBe(true);
      expect(existsSync(join(ws.root, "outside"))).toBe(false);
    },
  );
});
