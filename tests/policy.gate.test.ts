import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideToolCall, sessionRuleFor } from "../src/policy/gate.js";
import type { PolicyCall } from "../src/policy/evaluate.js";
import type { PolicyRule } from "../src/state/rules.js";
import type { ApprovalMode } from "../src/state/thread.js";

let workspace: string;
beforeAll(() => {
  workspace = mkdtempSync(join(tmpdir(), "loopgraph-gate-"));
  mkdirSync(join(workspace, "src"));
});
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const decide = (call: PolicyCall, rules: PolicyRule[] = [], mode: ApprovalMode = "ask") => decideToolCall(call, { rules, mode, workspace });
const shell = (command: string): PolicyCall => ({ name: "shell", args: { command } });

/** Asks, answers "always", and returns the session rule plus how later calls are decided with it. */
function approveAlways(call: PolicyCall, rules: PolicyRule[] = []) {
  const gate = decide(call, rules);
  if (gate.kind !== "ask") throw new Error(`expected ask, got ${gate.kind}`);
  const rule = sessionRuleFor(call, gate.verdict);
  return { rule, later: (next: PolicyCall) => decide(next, [...rules, rule]).kind };
}

describe("decideToolCall", () => {
  it("runs allowed calls, asks with the verdict, and blocks with a tool result", () => {
    expect(decide({ name: "read_file", args: { path: "src/a.ts" } })).toMatchObject({ kind: "run", verdict: { decision: "allow" } });
    expect(decide(shell("ls"))).toMatchObject({ kind: "ask", verdict: { decision: "ask", reason: expect.stringContaining("approval") } });
    const blocked = decide(shell("echo hi && rm -rf ~"), [], "auto");
    expect(blocked).toMatchObject({ kind: "blocked", verdict: { decision: "deny", subject: "rm -rf ~" } });
    if (blocked.kind !== "blocked") throw new Error("unreachable");
    expect(blocked.result).toEqual({
      ok: false,
      errorKind: "blocked",
      content: "Blocked by policy: `rm -rf ~`: deletes the whole file system or your home directory",
    });
  });

  it("blocks a path outside the workspace with the reason the model needs", () => {
    const gate = decide({ name: "read_file", args: { path: "../x" } }, [], "auto");
    expect(gate.kind).toBe("blocked");
    expect(gate.kind === "blocked" && gate.result.content).toMatch(/^Blocked by policy: \.\.\/x is outside the workspace/);
  });
});

describe("sessionRuleFor: what an 'always' approval allows from then on", () => {
  it("a file edit asked by the mode allows that tool everywhere in the workspace, at priority 0", () => {
    const { rule, later } = approveAlways({ name: "write_file", args: { path: "src/a.ts", contents: "" } });
    expect(rule).toEqual({ tool: "write_file", decision: "allow", priority: 0, source: "session", reason: 'approved with "always" in this session' });
    expect(later({ name: "write_file", args: { path: "lib/b.ts", contents: "" } })).toBe("run");
    expect(later({ name: "edit_file", args: { path: "lib/b.ts", old_string: "a", new_string: "b" } })).toBe("ask");
    expect(later({ name: "write_file", args: { path: ".env", contents: "" } })).toBe("ask");
    expect(later({ name: "write_file", args: { path: "../escape.ts", contents: "" } })).toBe("blocked");
  });

  it("a sensitive file allows exactly that path, one above the rule that asked", () => {
    const { rule, later } = approveAlways({ name: "read_file", args: { path: "config/.env" } });
    expect(rule).toMatchObject({ tool: "read_file", pattern: String.raw`^config/\.env$`, priority: 101 });
    expect(later({ name: "read_file", args: { path: "config/.env" } })).toBe("run");
    expect(later({ name: "read_file", args: { path: ".env" } })).toBe("ask");
  });

  it("a shell command allows its command name, with the subcommand for tools like git and npm", () => {
    const git = approveAlways(shell("git status --short"));
    expect(git.rule).toMatchObject({ tool: "shell", pattern: String.raw`^git\s+status(?:\s|$)`, priority: 0 });
    expect(git.later(shell("git status"))).toBe("run");
    expect(git.later(shell("git push"))).toBe("ask");
    expect(git.later(shell("git status && rm -rf build"))).toBe("ask");

    const ls = approveAlways(shell("ls -la src"));
    expect(ls.later(shell("ls"))).toBe("run");
    expect(ls.later(shell("lsof"))).toBe("ask");
  });

  it("covers every part that asked, and only those", () => {
    const allowEcho: PolicyRule = { tool: "shell", pattern: "^echo ", decision: "allow", priority: 0, source: "user" };
    const { rule, later } = approveAlways(shell("echo start && npm test && make lint"), [allowEcho]);
    expect(rule.pattern).toBe(String.raw`^(?:npm\s+test(?:\s|$)|make\s+lint(?:\s|$))`);
    expect(later(shell("npm test -- --watch=false; make lint"))).toBe("run");
  });

  it("commands that delete, download or run inline code stay exact", () => {
    const rm = approveAlways(shell("rm -rf build"));
    expect(rm.rule.pattern).toBe("^rm -rf build$");
    expect(rm.later(shell("rm -rf build"))).toBe("run");
    expect(rm.later(shell("rm -rf src"))).toBe("ask");
    expect(approveAlways(shell("python3 -c 'print(1)'")).rule.pattern).toBe("^python3 -c 'print\\(1\\)'$");
  });

  it("a command a rule asked about allows exactly that command, one above the rule", () => {
    const { rule, later } = approveAlways(shell("git push --force origin feature"));
    expect(rule).toMatchObject({ pattern: "^git push --force origin feature$", priority: 101 });
    expect(later(shell("git push --force origin feature"))).toBe("run");
    expect(later(shell("git push --force origin main"))).toBe("ask");
  });

  it("never lifts a deny, even one written by the user below the asking rule", () => {
    const denyMain: PolicyRule = { tool: "shell", pattern: "origin main", decision: "deny", priority: 500, source: "user" };
    const { later } = approveAlways(shell("git push --force origin feature"), [denyMain]);
    expect(later(shell("git push --force origin main"))).toBe("blocked");
    expect(decide(shell("rm -rf /"), [{ tool: "shell", decision: "allow", priority: 0, source: "session" }], "ask").kind).toBe("blocked");
  });
});
