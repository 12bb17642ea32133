import { describe, expect, it } from "vitest";
import { compilePattern, decidingRule, escapeRegExp, ruleMatches, stricter, toolMatches } from "../src/policy/match.js";
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

  it("reports an invalid pattern by name", () => {
    expect(() => compilePattern("a(")).toThrow(/invalid policy pattern \/a\(\//);
  });

  it("escapes text for a literal match", () => {
    expect(new RegExp(`^${escapeRegExp("a.b*(c)[d]$")}$`).test("a.b*(c)[d]$")).toBe(true);
  });
});

describe("which rule decides", () => {
  it("the highest priority wins, whatever its decision", () => {
    const rules = [rule({ decision: "deny", priority: 5 }), rule({ decision: "allow", priority: 10 }), rule({ decision: "ask", priority: 1 })];
    expect(decidingRule(rules, "shell", ["x"])?.priority).toBe(10);
  });

  it("on a tie the stricter decision wins, in any order", () => {
    const allow = rule({ decision: "allow", priority: 7 });
    const ask = rule({ decision: "ask", priority: 7 });
    const deny = rule({ decision: "deny", priority: 7 });
    for (const order of [[allow, ask, deny], [deny, ask, allow], [ask, deny, allow]]) {
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
