import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError } from "../src/errors.js";
import {
  loadPolicyFile,
  loadUserPolicy,
  loadUserRules,
  parsePolicyFile,
  policyRulesSchema,
  toPolicyRules,
  userPolicyFiles,
} from "../src/policy/rule-file.js";
import { trustIn } from "./helpers/cli.js";
import { sharedTempDir } from "./helpers/workspace.js";

const fixtures = join(import.meta.dirname, "fixtures", "policy");

const folder = sharedTempDir("loopgraph-policy-files-");
let dir: string;
beforeAll(() => {
  dir = folder.path;
});

const errorOf = (text: string, file = "policy.yaml"): string => {
  try {
    parsePolicyFile(text, file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error("expected a ConfigError");
};

describe("parsing a policy file", () => {
  it("turns a valid file into rules with source, default priority and origin", () => {
    const rules = loadPolicyFile(join(fixtures, "good.yaml"));
    expect(rules).toHaveLength(3);
    expect(rules[0]).toEqual({
      tool: "shell",
      pattern: "^npm (test|run (lint|build))$",
      decision: "allow",
      priority: 0,
      reason: "the project's checks are safe to run",
      source: "user",
      origin: `${join(fixtures, "good.yaml")} rules[0]`,
    });
    expect(rules[1]).toMatchObject({ tool: "*_file", decision: "deny", priority: 500 });
    expect(rules[2]).not.toHaveProperty("reason");
  });

  it("read_only marks an allow rule's tools as reads (their calls of one turn may run at once); on another decision it is an error", () => {
    expect(parsePolicyFile("rules:\n  - { tool: 'docs__*', decision: allow, read_only: true }\n", "p.yaml")[0]).toMatchObject({
      tool: "docs__*",
      readOnly: true,
    });
    expect(parsePolicyFile("rules:\n  - { tool: 'docs__*', decision: allow }\n", "p.yaml")[0]).not.toHaveProperty("readOnly");
    expect(errorOf("rules:\n  - { tool: 'docs__*', decision: ask, read_only: true }\n")).toMatch(
      /^policy\.yaml:2:50: rules\[0\]\.read_only: read_only belongs on an allow rule/,
    );
  });

  it("reads an empty file, or one without rules, as no rules", () => {
    expect(parsePolicyFile("", "p.yaml")).toEqual([]);
    expect(parsePolicyFile("# nothing yet\n", "p.yaml")).toEqual([]);
    expect(parsePolicyFile("rules: []\n", "p.yaml")).toEqual([]);
  });

  it("reports every problem of a file with file:line:col and the rule's index", () => {
    const message = errorOf(
      `rules:
  - tool: shell
    pattern: 'rm -rf ('
    decision: deny
  - tool: write_file
    decison: deny
  - tool: shell
    decision: allow
    priority: 1500
`,
      "tests/bad.yaml",
    );
    expect(message.split("\n")).toEqual([
      expect.stringMatching(/^tests\/bad\.yaml:3:14: rules\[0\]\.pattern: invalid regular expression \/rm -rf \(\/: .+/),
      'tests/bad.yaml:6:5: rules[1]: unknown key "decison": did you mean "decision"?',
      "tests/bad.yaml:9:15: rules[2].priority: priority above 999: 1000 and up belong to the built-in denies, which no rule can override",
    ]);
  });

  it("reports the fixture's problems the same way", () => {
    expect(() => loadPolicyFile(join(fixtures, "bad.yaml"))).toThrow(/bad\.yaml:6:14: rules\[1\]\.pattern: invalid regular expression/);
  });

  it.each([
    ["rules:\n  - tool: shell\n    decision: maybe\n", "policy.yaml:3:15: rules[0].decision: decision must be allow, deny or ask"],
    ["rules:\n  - decision: deny\n", 'policy.yaml:2:5: rules[0].tool: missing "tool"'],
    ["rules:\n  - tool: read file\n    decision: deny\n", "policy.yaml:2:11: rules[0].tool: tool must be a tool name without spaces"],
    [
      "rules:\n  - tool: shell\n    decision: deny\n    priority: 1.5\n",
      "policy.yaml:4:15: rules[0].priority: priority must be a whole number from 0 to 999",
    ],
    [
      "rules:\n  - tool: shell\n    decision: deny\n    priority: -1\n",
      "policy.yaml:4:15: rules[0].priority: priority must be a whole number from 0 to 999",
    ],
    [
      "rules:\n  - tool: shell\n    decision: deny\n    pattern: 42\n",
      "policy.yaml:4:14: rules[0].pattern: pattern must be a regular expression, written as a string",
    ],
    ["rules:\n  - shell\n", "policy.yaml:2:5: rules[0]: a rule must be a mapping"],
    ["rules: shell\n", "policy.yaml:1:8: rules: rules must be a list of rules"],
    ["rule:\n  - tool: shell\n", 'policy.yaml:1:1: unknown key "rule": did you mean "rules"?'],
    ["allow:\n  - tool: shell\n", 'policy.yaml:1:1: unknown key "allow": a policy has only "rules"'],
    ["- tool: shell\n", "policy.yaml:1:1: a policy must be a mapping with a rules: list"],
    [
      "rules:\n  - tool: shell\n    decision: deny\n    colour: red\n",
      'policy.yaml:4:5: rules[0]: unknown key "colour": a rule has tool, pattern, decision, priority, reason',
    ],
    ["rules:\n  - tool: shell\n    decision: deny\n    decision: ask\n", "policy.yaml:4:5: YAML syntax error: Map keys must be unique"],
    ["rules:\n  - tool: shell\n   decision: deny\n", "policy.yaml:3:1: YAML syntax error"],
  ])("rejects %j", (text, expected) => {
    expect(errorOf(text)).toContain(expected);
  });
});

describe("loading the user's files", () => {
  it("a missing file has no rules; a directory is an error", () => {
    expect(loadPolicyFile(join(dir, "missing.yaml"))).toEqual([]);
    expect(() => loadPolicyFile(dir)).toThrow(`cannot read policy file ${dir}: it is a directory`);
  });

  it("reads the config-home file, then the workspace's .loopgraph/policy.yaml once the user trusts it", () => {
    const configHome = join(dir, "config");
    const workspace = join(dir, "ws");
    mkdirSync(join(configHome, "loopgraph"), { recursive: true });
    mkdirSync(join(workspace, ".loopgraph"), { recursive: true });
    writeFileSync(join(configHome, "loopgraph", "policy.yaml"), "rules:\n  - { tool: shell, pattern: '^ls', decision: allow }\n");
    writeFileSync(join(workspace, ".loopgraph", "policy.yaml"), "rules:\n  - { tool: write_file, decision: deny, priority: 3 }\n");
    const env = { XDG_CONFIG_HOME: configHome };
    expect(userPolicyFiles(workspace, env)).toEqual([
      join(configHome, "loopgraph", "policy.yaml"),
      join(workspace, ".loopgraph", "policy.yaml"),
    ]);
    const untrusted = loadUserPolicy(workspace, env);
    expect(untrusted.rules.map((rule) => rule.tool)).toEqual(["shell"]);
    expect(untrusted.ignored).toEqual([
      expect.stringMatching(
        /^.*ws\/\.loopgraph\/policy\.yaml is not applied \(.*which you have not trusted\): review it, then run `loopgraph trust`$/,
      ),
    ]);
    trustIn(workspace, env);
    const rules = loadUserRules(workspace, env);
    expect(rules.map((rule) => [rule.tool, rule.origin])).toEqual([
      ["shell", `${join(configHome, "loopgraph", "policy.yaml")} rules[0]`],
      ["write_file", `${join(workspace, ".loopgraph", "policy.yaml")} rules[0]`],
    ]);
  });

  it("lets only the user's own file open the sandbox's network; a workspace file that tries is an error", () => {
    const configHome = join(dir, "net-config");
    const workspace = join(dir, "net-ws");
    mkdirSync(join(configHome, "loopgraph"), { recursive: true });
    mkdirSync(join(workspace, ".loopgraph"), { recursive: true });
    const env = { XDG_CONFIG_HOME: configHome };
    expect(loadUserPolicy(workspace, env)).toEqual({ rules: [], network: false, read: [], write: [], ignored: [] });
    const own = join(configHome, "loopgraph", "policy.yaml");
    writeFileSync(own, "sandbox: { network: allow }\n");
    expect(loadUserPolicy(workspace, env).network).toBe(true);
    writeFileSync(own, "sandbox: { netwrok: allow }\n");
    expect(() => loadUserPolicy(workspace, env)).toThrow(`${own}:1:12: sandbox: unknown key "netwrok": did you mean "network"?`);
    writeFileSync(own, "sandbox: { network: yes }\n");
    expect(() => loadUserPolicy(workspace, env)).toThrow(`${own}:1:21: sandbox.network: network must be allow or deny`);
    // The folders it opens: absolute, or under the home directory.
    writeFileSync(own, "sandbox:\n  read: [/opt/toolchain, ~/.cache/tool]\n  write: [~/shared-out]\n");
    expect(loadUserPolicy(workspace, { ...env, HOME: "/home/me" })).toMatchObject({
      network: false,
      read: ["/opt/toolchain", "/home/me/.cache/tool"],
      write: ["/home/me/shared-out"],
    });
    writeFileSync(own, "sandbox:\n  read: [relative/dir]\n");
    expect(() => loadUserPolicy(workspace, env)).toThrow(
      `${own}:2:10: sandbox.read[0]: a folder must be an absolute path or start with ~/`,
    );
    writeFileSync(own, "rules: []\n");
    const project = join(workspace, ".loopgraph", "policy.yaml");
    writeFileSync(project, "sandbox: { network: allow }\n");
    trustIn(workspace, env);
    expect(() => loadUserPolicy(workspace, env)).toThrow(`${project}:1:1: unknown key "sandbox": a policy has only "rules"`);
  });

  it("falls back to ~/.config when XDG_CONFIG_HOME is not set", () => {
    expect(userPolicyFiles("/w", { HOME: "/home/me" })[0]).toBe("/home/me/.config/loopgraph/policy.yaml");
  });
});

describe("embedding in a graph file", () => {
  it("validates a policy: section inside another schema and converts it with the graph as source", () => {
    const graphSchema = z.strictObject({ name: z.string(), policy: policyRulesSchema.optional() });
    const parsed = graphSchema.parse({ name: "g", policy: { rules: [{ tool: "shell", pattern: "^make$", decision: "allow" }] } });
    expect(toPolicyRules(parsed.policy!, "graph", "graphs/g.yaml")).toEqual([
      { tool: "shell", pattern: "^make$", decision: "allow", priority: 0, source: "graph", origin: "graphs/g.yaml rules[0]" },
    ]);
    const bad = graphSchema.safeParse({ name: "g", policy: { rules: [{ tool: "shell", decision: "allow", pattern: "(" }] } });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({
      path: ["policy", "rules", 0, "pattern"],
      message: expect.stringContaining("invalid regular expression"),
    });
  });
});
