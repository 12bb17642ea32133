/**
 * The mistakes a new user makes, with the real CLI: each answer is short, says what was meant
 * when it can tell, and whatever it suggests works from the folder the user is in.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT, runCli } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const MONITOR_SCRIPT = `scripted:${join(ROOT, "examples", "monitor.script.yaml")}`;

describe("a usage mistake", () => {
  const mistakes: Array<{ args: string[]; first: RegExp; help: string }> = [
    { args: ["rnu"], first: /^loopgraph: unknown command 'rnu' \(did you mean run\?\)$/, help: "see loopgraph --help" },
    {
      args: ["run", "coder", "--taks", "x"],
      first: /^loopgraph: unknown option '--taks' \(did you mean --task\?\)$/,
      help: "see loopgraph run --help",
    },
    {
      args: ["run", "coder", "--approval", "yes"],
      first: /^loopgraph: option '--approval <mode>' argument 'yes' is invalid\. Allowed choices are ask, auto-edit, auto, deny\.$/,
      help: "see loopgraph run --help",
    },
    {
      args: ["threads", "prune", "--older-than"],
      first: /^loopgraph: option '--older-than <age>' argument missing$/,
      help: "see loopgraph threads prune --help",
    },
    {
      args: ["ui", "--port", "abc"],
      first: /^loopgraph: option '--port <n>' argument 'abc' is invalid\. expected a port number from 1 to 65535$/,
      help: "see loopgraph ui --help",
    },
  ];

  it.each(mistakes)("loopgraph $args prints one line and where to look, and exits 2", async ({ args, first, help }) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(first);
    expect(lines[1]).toBe(help);
  });
});

describe("a graph name misspelt", () => {
  it("names the nearest graph, the built-in ones and the project's, for run and chat", async () => {
    const ws = tempWorkspace({ git: "init" });
    mkdirSync(join(ws.dir, "graphs"));
    copyFileSync(join(ROOT, "graphs", "example-review.yaml"), join(ws.dir, "graphs", "release-notes.yaml"));
    const run = (graph: string) => runCli(["run", graph, "--task", "x", "--db", ws.db], { cwd: ws.dir });

    const builtIn = await run("codr");
    expect(builtIn.code).toBe(2);
    expect(builtIn.stderr).toMatch(/^loopgraph: graph "codr" not found \(tried .*\n^loopgraph: did you mean "coder"\?$/m);
    expect((await run("relase-notes")).stderr).toContain('did you mean "release-notes"?');
    expect((await run("zzzzzz")).stderr).not.toContain("did you mean");
    const chat = await runCli(["chat", "--graph", "monitr", "--db", ws.db], { cwd: ws.dir });
    expect(chat.code).toBe(2);
    expect(chat.stderr).toContain('did you mean "monitor"?');
  });
});

describe("loopgraph config", () => {
  it("refuses, in the run's own words and with exit 2, a setting of the environment that a run refuses", async () => {
    const ws = tempWorkspace({ git: "init" });
    for (const [variable, value] of [
      ["LOOPGRAPH_APPROVAL", "yolo"],
      ["LOOPGRAPH_MODEL_TIMEOUT", "abc"],
      ["LOOPGRAPH_MODE", "fast"],
    ] as const) {
      const env = cleanEnv({ [variable]: value });
      const run = await runCli(["run", "example-review", "--task", "x", "--model", MONITOR_SCRIPT, "--db", ws.db], { cwd: ws.dir, env });
      expect(run.code, variable).toBe(2);
      const config = await runCli(["config"], { cwd: ws.dir, env });
      expect(config.code, variable).toBe(2);
      expect(config.stderr, variable).toBe(run.stderr);
      expect(config.stdout, variable).toMatch(new RegExp(`^\\S+ +${value} +environment: ${variable}$`, "m"));
    }
    expect(
      (await runCli(["config"], { cwd: ws.dir, env: cleanEnv({ LOOPGRAPH_APPROVAL: "auto", LOOPGRAPH_MODEL_TIMEOUT: "30" }) })).code,
    ).toBe(0);
  });
});

describe("the way to try loopgraph offline", () => {
  it("that a missing API key suggests works from an empty folder", async () => {
    const { dir } = tempWorkspace();
    const env = cleanEnv({ LOOPGRAPH_DB: join(dir, "store.db") });
    const run = await runCli(["run", "coder", "--task", "x", "--model", "openai:gpt-4o"], { cwd: dir, env });
    expect(run.code).toBe(2);
    const suggested = /try offline with loopgraph (.+)$/m.exec(run.stderr)?.[1];
    expect(suggested, run.stderr).toBeDefined();
    const offline = await runCli(suggested!.split(" "), { cwd: dir, env });
    expect(offline.code, offline.stderr).toBe(0);
  }, 120_000);

  it("a model without its provider names no file the user does not have", async () => {
    const run = await runCli(["run", "coder", "--task", "x", "--model", "gpt-4o"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('invalid model "gpt-4o": use provider:model');
    expect(run.stderr).not.toMatch(/examples\//);
  });
});

describe("leaving a chat", () => {
  it("says how to come back, and chat --continue opens the chat used last", async () => {
    const ws = tempWorkspace({ git: "init" });
    const chat = (...args: string[]) => runCli(["chat", "--db", ws.db, "--model", MONITOR_SCRIPT, ...args], { cwd: ws.dir });
    // stdin is closed: the chat opens, finds no more input and ends.
    await chat("--thread", "older");
    const left = await chat("--thread", "newer");
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout).toContain(
      `Continue with: loopgraph chat --continue --db ${JSON.stringify(ws.db)}  (or loopgraph chat --thread newer --db ${JSON.stringify(ws.db)})`,
    );
    const back = await chat("--continue");
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/loopgraph chat {2}thread newer /);
    expect((await chat("--continue", "--thread", "older")).stderr).toContain("use either --continue or --thread, not both");
  });

  it("--continue with no chat in the store says how to start one", async () => {
    const ws = tempWorkspace({ git: "init" });
    const script = `scripted:${join(ROOT, "examples", "example-review.script.yaml")}`;
    expect((await runCli(["run", "example-review", "--task", "x", "--model", script, "--db", ws.db], { cwd: ws.dir })).code).toBe(0);
    const result = await runCli(["chat", "--continue", "--db", ws.db], { cwd: ws.dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("no chat to continue in this store: start one with loopgraph chat");
  });
});
