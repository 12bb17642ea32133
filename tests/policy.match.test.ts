import { describe, expect, it } from "vitest";
import { compilePattern, decidingRule, escapeRegExp, ruleMatches, stricter, toolMatches } from "../src/policy/match.js";
import { parseShellCommand } from "../src/policy/shell-parts.js";
import type { PolicyRule } from "../src/state/rules.js";

const rule = (overrides: Partial<PolicyRule>): PolicyRule => ({
  tool: "*",
  decision: "allow",
  priority: 0,
  source: "user",
  ...overrides,
});

describe("tool wildcards", () => {
  it.each([
    ["shell", "shell", true],
    ["shell", "shell2", false],
    ["*", "anything", true],
    ["*_file", "write_file", true],
    ["*_file", "list_dir", false],
    ["?rep", "grep", true],
    ["?rep", "egrep_x", false],
    ["mcp.*", "mcp.github", true],
    ["mcp.*", "mcpXgithub", false],
    ["read_*", "read_file", true],
  ])("%s matches %s: %s", (glob, name, expected) => {
    expect(toolMatches(glob, name)).toBe(expected);
  });
});

describe("rule matching", () => {
  it("matches every call of the tool when the rule has no pattern", () => {
    expect(ruleMatches(rule({ tool: "shell" }), "shell", ["anything"])).toBe(true);
    expect(ruleMatches(rule({ tool: "shell" }), "grep", ["anything"])).toBe(false);
  });

  it("matches when the pattern matches any form of the subject", () => {
    const byAbsolutePath = rule({ tool: "read_file", pattern: "^/srv/data/" });
    expect(ruleMatches(byAbsolutePath, "read_file", ["data/x.csv", "/srv/data/x.csv"])).toBe(true);
    expect(ruleMatches(byAbsolutePath, "read_file", ["data/x.csv", "/home/data/x.csv"])).toBe(false);
  });

  it("matches a shell command one of its command scopes covers, or its pattern matches", () => {
    const part = (command: string) => parseShellCommand(command).parts[0]!;
    const scoped = rule({ tool: "shell", pattern: "^make lint$", commands: [{ name: "git", subcommand: "status", readOnly: true }] });
    expect(ruleMatches(scoped, "shell", ["git status -s"], part("git status -s"))).toBe(true);
    expect(ruleMatches(scoped, "shell", ["make lint"], part("make lint"))).toBe(true);
    expect(ruleMatches(scoped, "shell", ["git status > x"], part("git status > x"))).toBe(false);
    // Without the parsed command (a whole script), only the pattern can match.
    expect(ruleMatches(scoped, "shell", ["git status -s"])).toBe(false);
    expect(decidingRule([scoped], "shell", ["git log"], part("git log"))).toBeUndefined();
  });

  it("reports an invalid pattern by name", () => {
    expect(() => compilePattern("a(")).toThrow(/invalid policy pattern \/a\(\//);
  });

  it("escapes text for a literal match", () => {
    expect(new RegExp(`^${escapeRegExp("a.b*(c)[d]$")}$`).test("a.b*(c)[d]$")).toBe(true);
  });
});

describe("which rule decides", () => {
  it("the highest priority wins, whatever its decision", () => {
    const rules = [
      rule({ decision: "deny", priority: 5 }),
      rule({ decision: "allow", priority: 10 }),
      rule({ decision: "ask", priority: 1 }),
    ];
    expect(decidingRule(rules, "shell", ["x"])?.priority).toBe(10);
  });

  it("on a tie the stricter decision wins, in any order", () => {
    const allow = rule({ decision: "allow", priority: 7 });
    const ask = rule({ decision: "ask", priority: 7 });
    const deny = rule({ decision: "deny", priority: 7 });
    for (const order of [
      [allow, ask, deny],
      [deny, ask, allow],
      [ask, deny, allow],
    ]) {
      expect(decidingRule(order, "shell", ["x"])?.decision).toBe("deny");
    }
    expect(decidingRule([allow, ask], "shell", ["x"])?.decision).toBe("ask");
  });

  it("rules that do not match are ignored; none matching decides nothing", () => {
    const rules = [rule({ tool: "grep", decision: "deny", priority: 999 }), rule({ pattern: "^npm ", priority: 3 })];
    expect(decidingRule(rules, "shell", ["npm test"])?.priority).toBe(3);
    expect(decidingRule(rules, "shell", ["make"])).toBeUndefined();
  });

  it("orders decisions deny > ask > allow", () => {
    expect(stricter("allow", "ask")).toBe("ask");
    expect(stricter("deny", "ask")).toBe("deny");
    expect(stricter("allow", "allow")).toBe("allow");
  });
});
