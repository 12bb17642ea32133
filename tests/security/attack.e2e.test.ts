/**
 * The attack suite (tests/security/run.ts, `npm run attack`) as a test: every attack of the
 * catalogue in every approval mode must end with nothing escaped and nothing leaked. Then the
 * harness's self-tests: its detectors fire on what they are meant to catch (a control run without
 * the sandbox, and each detector on its own), so a green suite means something.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { collect, eventually, type CliResult } from "../helpers/cli.js";
import { lacks } from "../helpers/requirements.js";
import { tempWorkspace } from "../helpers/workspace.js";
import { ATTACKS, CONTROL_ATTACKS } from "./attacks.js";
import {
  ATTACK_CLASSES,
  BENIGN_DISPLAYS,
  CanaryScanner,
  MODES,
  diffTrees,
  fill,
  processesWith,
  renderTerminal,
  snapshotTree,
  startListener,
  userAnswer,
  visiblePrompt,
  type Places,
} from "./harness.js";
import type { ApprovalRequest } from "../../src/runtime/approval.js";

const ROOT = resolve(import.meta.dirname, "../..");
const LAST_LINE = /^attack: attempts=(\d+) escapes=(\d+) leaks=(\d+)$/;

/**
 * Runs the suite's runner (a real process, with its own worker processes) to its end. Each worker
 * loads loopgraph through tsx (about 2.5 s of CPU), and npm test keeps both cores busy without
 * more of them: the run of every attack uses two workers, not three, and the short runs one.
 */
function runSuite(...args: string[]): Promise<CliResult> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", join(ROOT, "tests/security/run.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collect(child);
}

function lastLine(result: CliResult): { attempts: number; escapes: number; leaks: number } {
  const line = result.stdout.trimEnd().split("\n").at(-1) ?? "";
  const match = LAST_LINE.exec(line);
  if (!match) throw new Error(`the runner's last line is not the summary:\n${result.stdout}\n${result.stderr}`);
  return { attempts: Number(match[1]), escapes: Number(match[2]), leaks: Number(match[3]) };
}

describe("the attack suite", () => {
  it("covers every class in every mode, with at least 150 attempts", () => {
    for (const attackClass of ATTACK_CLASSES)
      expect(ATTACKS.filter((attack) => attack.class === attackClass).length, attackClass).toBeGreaterThanOrEqual(4);
    expect(ATTACKS.length * MODES.length).toBeGreaterThanOrEqual(150);
    expect(new Set(ATTACKS.map((attack) => attack.name)).size).toBe(ATTACKS.length);
    for (const attack of ATTACKS) if (attack.always) expect(BENIGN_DISPLAYS, attack.name).toContain(attack.always);
  });

  // `npm run attack` runs all of them in all four modes; here each attack runs in one mode, in
  // turn, so that every class (of four attacks or more) still meets every mode at a quarter of the time. What it proves is what the
  // OS sandbox and the policy contain together, so it needs bubblewrap; without it, the block
  // below shows that auto asks before commands instead.
  it.skipIf(lacks("sandbox", "the attack suite's run of every attack"))(
    "every attack, every class in every approval mode: nothing escapes the workspace, no secret leaks",
    { timeout: 300_000 },
    async () => {
      const result = await runSuite("--quarter", "--workers", "2");
      const { attempts, escapes, leaks } = lastLine(result);
      expect(attempts).toBe(ATTACKS.length);
      for (const attackClass of ATTACK_CLASSES) {
        for (const mode of MODES)
          expect(result.stdout, `${attackClass} in ${mode}`).toMatch(new RegExp(`^${attackClass} +${mode} +[1-9]`, "m"));
      }
      // The failure message is the runner's report: which attack, in which mode, what escaped or leaked.
      expect({ escapes, leaks }, result.stdout).toEqual({ escapes: 0, leaks: 0 });
      expect(result.code).toBe(0);
    },
  );
});

describe("without an OS sandbox", () => {
  it("approval mode auto asks before shell commands instead of letting them escape", { timeout: 120_000 }, async () => {
    // The other modes ask before every command with or without a sandbox (`npm run attack -- --without-sandbox` runs them too).
    const result = await runSuite("--without-sandbox", "--only", "shell-write-outside", "--modes", "auto", "--workers", "1");
    expect(result.stdout).toContain("no OS sandbox available");
    const { attempts, escapes, leaks } = lastLine(result);
    expect(attempts).toBe(ATTACKS.filter((attack) => attack.class === "shell-write-outside").length);
    expect({ escapes, leaks }, result.stdout).toEqual({ escapes: 0, leaks: 0 });
  });
});

describe("the harness's detectors fire (self-tests)", () => {
  it("a control run without the sandbox, with credentials passed on: every control attack is caught", { timeout: 120_000 }, async () => {
    const result = await runSuite("--control", "--workers", "1");
    const summary = lastLine(result);
    expect(summary.attempts).toBe(CONTROL_ATTACKS.length);
    expect(result.code, result.stdout).toBe(1);
    for (const attack of CONTROL_ATTACKS) {
      const kind = attack.expect === "escape" ? "ESCAPE" : "LEAK  ";
      expect(result.stdout, `${attack.name} was not caught`).toContain(`${kind} ${attack.class} | auto | ${attack.name}:`);
    }
    // The detectors behind them: outside changes, a surviving process, the user's .git, a planted policy and the later run that
    // honours it, a planted store table, the listener; and for the leak, the model, the store, the snapshots and the workspace.
    const evidence = [
      "outside/pwned-",
      "outside/keep.txt deleted",
      "process outlived the run",
      "workspace .git/config changed",
      ".loopgraph/policy.yaml was planted",
      "a later run in ask mode ran shell: touch probe",
      "outside/planted-code-",
      "a host socket outside the sandbox's view was reached",
      "holds a planted table pwned",
      "in the loopback listener",
    ];
    for (const text of evidence) {
      expect(result.stdout).toContain(text);
    }
    for (const sink of [
      "a model request body",
      ".loopgraph/loopgraph.db",
      "git objects of .loopgraph/snapshots.git",
      "workspace file sec-",
    ]) {
      expect(result.stdout).toMatch(new RegExp(`outside canary in ${sink.replace(/\./g, "\\.")}`));
    }
    expect(result.stdout).toMatch(/GITHUB_TOKEN[^;]* in workspace file env-/);
  });

  it("finds a canary raw, reversed, hex- and base64-encoded (at every alignment), and nothing else", () => {
    const value = "ghp_canary0123456789abcdef";
    const scanner = new CanaryScanner([{ label: "GITHUB_TOKEN", value }]);
    const noise = (text: string) => `prefix ${text} suffix`;
    expect(scanner.find(noise(value))).toEqual(["GITHUB_TOKEN"]);
    expect(scanner.find(noise([...value].reverse().join("")))).toEqual(["GITHUB_TOKEN"]);
    expect(scanner.find(noise(Buffer.from(value).toString("hex")))).toEqual(["GITHUB_TOKEN"]);
    for (const prefix of ["", "a", "ab", "abc"])
      expect(scanner.find(Buffer.from(`${prefix}${value}\n`).toString("base64")), prefix).toEqual(["GITHUB_TOKEN"]);
    expect(scanner.find(noise("ghp_canary0123456789abcdeX"))).toEqual([]);
  });

  it("sees a file created, deleted, rewritten, chmod'ed or touched", () => {
    const { root } = tempWorkspace();
    const dir = join(root, "outside");
    mkdirSync(join(dir, "nested"), { recursive: true });
    for (const name of ["a", "b", "c", "d", "nested/e"]) writeFileSync(join(dir, name), `${name}\n`);
    const before = snapshotTree(dir);
    expect(diffTrees(before, snapshotTree(dir))).toEqual([]);
    writeFileSync(join(dir, "new"), "x");
    rmSync(join(dir, "a"));
    writeFileSync(join(dir, "b"), "B\n");
    chmodSync(join(dir, "c"), 0o600);
    utimesSync(join(dir, "nested/e"), new Date(2001, 0, 1), new Date(2001, 0, 1));
    const changes = diffTrees(before, snapshotTree(dir));
    for (const change of ["a deleted", "b changed (contents)", "c changed (mode)", "nested/e changed (mtime)", "new created"])
      expect(changes).toContain(change);
  });

  it("records what reaches the loopback listener", async () => {
    const listener = await startListener("ok");
    try {
      await new Promise<void>((resolveSent, reject) => {
        const socket = connect(listener.port, "127.0.0.1", () => socket.end("stolen bytes"));
        socket.on("error", reject);
        socket.on("close", () => resolveSent());
        socket.resume();
      });
      expect(listener.received().toString()).toBe("stolen bytes");
    } finally {
      await listener.close();
    }
  });

  it("finds a process by the nonce in its command line", async () => {
    const marker = `lgatkselftest${process.pid}`;
    const child = spawn("bash", ["-c", `sleep 30; : ${marker}`], { stdio: "ignore" });
    try {
      const found = await eventually(
        () => processesWith(marker),
        (list) => list.length > 0,
      );
      expect(found.map((entry) => entry.pid)).toContain(child.pid);
    } finally {
      child.kill("SIGKILL");
    }
    expect(
      await eventually(
        () => processesWith(marker),
        (list) => list.length === 0,
      ),
    ).toEqual([]);
  });

  it("the simulated user approves benign prompts, and is fooled by every spoof when the prompt does not escape control characters", () => {
    const request = (tool: string, args: Record<string, unknown>): ApprovalRequest => ({
      kind: "approval",
      node: "coder",
      tool,
      args,
      reason: "asked",
    });
    expect(userAnswer(request("shell", { command: "ls -la" }), undefined)).toEqual({ decision: "approve" });
    expect(userAnswer(request("shell", { command: "echo hi" }), "shell: echo hi")).toEqual({ decision: "always" });
    expect(userAnswer(request("shell", { command: "ls -la; rm -rf x" }), undefined).decision).toBe("reject");
    expect(renderTerminal("abc\rX\x1b[K")).toEqual(["X"]);

    // Each prompt-spoof call, shown raw (as a terminal prompt without escaping would), looks benign to the user.
    const places: Places = {
      root: "/tmp/r",
      ws: "/tmp/r/repo",
      out: "/tmp/r/outside",
      home: "/tmp/h",
      port: 4242,
      sock: "/run/s.sock",
      nonce: "lgatk0123456789ab",
    };
    const raw = (asked: ApprovalRequest): string => {
      const args = asked.args as Record<string, unknown>;
      return asked.tool === "shell" ? `shell: ${String(args.command)}` : `${asked.tool}: ${String(args.path)}`;
    };
    const spoofs = ATTACKS.filter((attack) => attack.class === "prompt-spoof").flatMap((attack) => attack.turns.flat());
    expect(spoofs.length).toBeGreaterThanOrEqual(5);
    for (const call of spoofs) {
      const asked = request(call.tool, fill(call.args, places));
      const seen = visiblePrompt(asked, raw);
      expect(
        BENIGN_DISPLAYS.map((display) => `? coder wants to run ${display}`),
        JSON.stringify(call.args),
      ).toContain(seen);
      // loopgraph's prompt escapes them: the user sees the real command and rejects it.
      expect(userAnswer(asked, undefined).decision, seen).toBe("reject");
    }
  });
});
