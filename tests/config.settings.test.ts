import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.js";
import { MODEL_TIMEOUT_EXPECTED } from "../src/models/timeout.js";
import { effectiveSetting, loadConfig, readConfigFile, resolveSettings } from "../src/config/settings.js";
import { priceTable } from "../src/config/environment-settings.js";
import { modelPrice } from "../src/config/prices.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { trustIn } from "./helpers/cli.js";

function file(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function errorOf(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("no error");
}

describe("a configuration file", () => {
  it("gives its settings: a script's and a store's path are taken from the file's folder, the timeout in milliseconds", () => {
    const { root } = tempWorkspace();
    const path = file(
      root,
      "p/loopgraph.yaml",
      "model: scripted:scripts/a.yaml\napproval: deny\nmodel_timeout: 1.5\nstore: data/runs.db\n",
    );
    expect(readConfigFile(path, "project")).toEqual({
      kind: "project",
      path,
      values: {
        model: `scripted:${join(root, "p/scripts/a.yaml")}`,
        approval: "deny",
        modelTimeoutMs: 1500,
        store: join(root, "p/data/runs.db"),
      },
    });
    expect(readConfigFile(join(root, "none.yaml"), "user")).toBeUndefined();
    expect(readConfigFile(file(root, "empty.yaml", "# nothing set\n"), "user")?.values).toEqual({});
  });

  it("says what is wrong as file:line:col, every problem, with did-you-mean", () => {
    const { root } = tempWorkspace();
    const path = file(root, "config.yaml", "modle: openai:gpt-4o\napproval: sometimes\nmodel_timeout: -3\nstore: mysql://db/x\n");
    expect(errorOf(() => readConfigFile(path, "user")).split("\n")).toEqual([
      `${path}:1:1: unknown key "modle": did you mean "model"?`,
      `${path}:2:11: approval: approval must be ask, auto-edit, auto, deny`,
      `${path}:3:16: model_timeout: model_timeout must be ${MODEL_TIMEOUT_EXPECTED}`,
      `${path}:4:8: store: store must be a SQLite file's path or a postgres:// URL`,
    ]);
    expect(errorOf(() => readConfigFile(file(root, "m.yaml", "model: claude:x\n"), "user"))).toMatch(
      /m\.yaml:1:8: model: unknown model provider "claude"/,
    );
    expect(errorOf(() => readConfigFile(file(root, "bad.yaml", "model: [\n"), "user"))).toMatch(/bad\.yaml:\d+:\d+: YAML syntax error/);
    expect(errorOf(() => readConfigFile(file(root, "list.yaml", "- model\n"), "user"))).toMatch(
      /list\.yaml:1:1: a config file must be a mapping/,
    );
  });

  it("planning: its keys as set, a bad one said at its place", () => {
    const { root } = tempWorkspace();
    const good = file(root, "good.yaml", "planning: { reminders: 3, two_action_rule: false }\n");
    expect(readConfigFile(good, "project")?.values.planning).toEqual({ reminders: 3, twoActionRule: false });
    const bad = file(root, "bad.yaml", "planning:\n  stop_check: 50\n  reminder: 2\n");
    expect(errorOf(() => readConfigFile(bad, "user")).split("\n")).toEqual([
      `${bad}:2:15: planning.stop_check: planning.stop_check must be a whole number from 0 to 10`,
      `${bad}:3:3: planning: unknown key "reminder": did you mean "reminders"?`,
    ]);
  });

  it("prices: per model spec (aliases read as their provider), a bad one said at its place", () => {
    const { root } = tempWorkspace();
    const prices = "prices:\n  openai:gpt-4o: { input: 2.5, output: 10 }\n  gemini:flash: { input: 0, output: 0.3 }\n";
    const good = file(root, "good.yaml", prices);
    expect(readConfigFile(good, "user")?.values.prices).toEqual({
      "openai:gpt-4o": { input: 2.5, output: 10 },
      "google:flash": { input: 0, output: 0.3 },
    });
    const bad = file(
      root,
      "bad.yaml",
      "prices:\n  scripted:a.yaml: { input: 1, output: 1 }\n  gpt-4o: { input: 1, output: 1 }\n  openai:o3: { input: -1, ouput: 2 }\n",
    );
    expect(errorOf(() => readConfigFile(bad, "user")).split("\n")).toEqual([
      `${bad}:2:3: prices: a scripted model calls no provider: it has no price`,
      `${bad}:3:3: prices: "gpt-4o" is not a model: a price is given per model spec, e.g. openai:gpt-4o`,
      `${bad}:4:14: prices.openai:o3: missing "output"`,
      `${bad}:4:23: prices.openai:o3.input: input must be a number of at least 0 (currency units per million tokens)`,
      `${bad}:4:27: prices.openai:o3: unknown key "ouput": did you mean "output"?`,
    ]);
  });

  it("prices: the project's over the user's, model by model, looked up by any spelling of the model", () => {
    const { root } = tempWorkspace();
    const project = join(root, "proj");
    file(project, "loopgraph.yaml", "prices: { openai:gpt-4o: { input: 2, output: 8 } }\n");
    file(
      root,
      "home/loopgraph/config.yaml",
      "prices:\n  openai:gpt-4o: { input: 5, output: 15 }\n  google:flash: { input: 0.1, output: 0.4 }\n",
    );
    const env = { XDG_CONFIG_HOME: join(root, "home") };
    trustIn(project, env);
    const prices = priceTable(resolveSettings(loadConfig(project, env), env));
    expect(prices).toEqual({ "openai:gpt-4o": { input: 2, output: 8 }, "google:flash": { input: 0.1, output: 0.4 } });
    expect(modelPrice(prices, "gemini:flash")).toEqual({ input: 0.1, output: 0.4 });
    expect(modelPrice(prices, "openai:gpt-4o-mini")).toBeUndefined();
    expect(priceTable(resolveSettings(loadConfig(root, {}), {}))).toEqual({});
  });

  it("from a project (it comes with the repository) cannot loosen approvals or send the store outside the project; the user's may", () => {
    const { root } = tempWorkspace();
    const auto = file(root, "p/loopgraph.yaml", "approval: auto\n");
    expect(errorOf(() => readConfigFile(auto, "project"))).toBe(
      `${auto}:1:11: approval: a project's loopgraph.yaml cannot loosen approvals (approval: auto): set it in your user config or pass --approval`,
    );
    for (const store of ["postgres://db.example/runs", "../elsewhere.db", "/tmp/x.db"]) {
      const path = file(root, "p/loopgraph.yaml", `store: ${store}\n`);
      expect(errorOf(() => readConfigFile(path, "project"))).toMatch(
        /loopgraph\.yaml:1:8: store: a project's loopgraph.yaml keeps the store inside the project/,
      );
      expect(readConfigFile(path, "user")?.values.store).toBeDefined();
    }
    expect(readConfigFile(file(root, "u/config.yaml", "approval: auto\n"), "user")?.values.approval).toBe("auto");
  });
});

describe("subagent types in a configuration file", () => {
  it("are checked as file:line:col (name, keys, tools, steps, model, output); a project's prompt stays inside the project; both files add up, the project's winning by name", () => {
    const { root } = tempWorkspace();
    file(root, "u/reviewer.md", "review\n");
    const user = file(
      root,
      "u/config.yaml",
      "subagents:\n  reviewer: { description: reads diffs, prompt: reviewer.md, tools: [read_file, grep], max_steps: 4, output: { type: object, properties: { risk: { type: string } }, required: [risk] } }\n  shared: { description: the user's }\n",
    );
    const bad = file(
      root,
      "u/bad.yaml",
      [
        "subagents:",
        "  Bad Name: {}",
        "  a: { promt: x.md }",
        "  b: { tools: [read_file, task] }",
        "  c: { max_steps: 0, model: claude:x }",
        "  d: { output: { type: array } }",
        "  e: { prompt: missing.md }",
        "",
      ].join("\n"),
    );
    expect(errorOf(() => readConfigFile(bad, "user")).split("\n")).toEqual([
      `${bad}:2:3: subagents: a subagent's name is lower-case letters, digits, _ and - (at most 32)`,
      `${bad}:3:8: subagents.a: unknown key "promt": did you mean "prompt"?`,
      `${bad}:4:15: subagents.b.tools: tools must be a list of read_file, write_file, edit_file, list_dir, glob, grep, shell, todo_write (a subagent starts no subagents)`,
      `${bad}:5:19: subagents.c.max_steps: max_steps must be a whole number from 1 to 1000`,
      expect.stringMatching(/^.*bad\.yaml:5:29: subagents\.c\.model: unknown model provider "claude"/),
      `${bad}:6:16: subagents.d.output: output must be the JSON Schema of an object, e.g. { type: object, properties: { answer: { type: string } }, required: [answer] }`,
      `${bad}:7:16: subagents.e.prompt: prompt file ${join(root, "u/missing.md")} does not exist`,
    ]);
    file(root, "outside.md", "x\n");
    file(root, "p/inside.md", "x\n");
    const planted = file(root, "p/loopgraph.yaml", "subagents:\n  lister: { prompt: ../outside.md }\n");
    expect(errorOf(() => readConfigFile(planted, "project"))).toBe(
      `${planted}:2:21: subagents.lister.prompt: a project's prompt file must be inside the project (${join(root, "outside.md")} is not)`,
    );
    file(root, "p/loopgraph.yaml", "subagents:\n  lister: { prompt: inside.md }\n  shared: { description: the project's }\n");
    trustIn(join(root, "p"), { XDG_CONFIG_HOME: root, HOME: root });
    const config = loadConfig(join(root, "p"), { XDG_CONFIG_HOME: root, HOME: root });
    expect(config.user).toBeUndefined();
    const both = { ...config, user: readConfigFile(user, "user")! };
    const merged = effectiveSetting(both, {}, "subagents").value ?? [];
    expect(merged.map((agent) => [agent.name, agent.description ?? null, agent.promptFile ?? null])).toEqual([
      ["reviewer", "reads diffs", join(root, "u/reviewer.md")],
      ["shared", "the project's", null],
      ["lister", null, join(root, "p/inside.md")],
    ]);
    expect(merged[0]).toMatchObject({ tools: ["read_file", "grep"], maxSteps: 4, output: { required: ["risk"] }, origin: user });
  });
});

describe("the settings that apply", () => {
  it("flag > environment > project > user > default, and the environment filled in only where it sets nothing", () => {
    const { root } = tempWorkspace();
    const project = join(root, "proj");
    file(project, "loopgraph.yaml", "model: openai:gpt-4o\nmodel_timeout: 30\n");
    file(root, "home/loopgraph/config.yaml", "model: ollama:llama3\napproval: auto\nstore: /srv/runs.db\n");
    mkdirSync(join(project, "sub"), { recursive: true });
    const env = { XDG_CONFIG_HOME: join(root, "home"), LOOPGRAPH_MODEL_TIMEOUT: "9" };
    trustIn(project, env);
    const config = loadConfig(join(project, "sub"), env);
    expect(config.root).toBe(project);
    expect(effectiveSetting(config, env, "model", "scripted:flag.yaml")).toEqual({ value: "scripted:flag.yaml", source: "flag" });
    expect(effectiveSetting(config, env, "model")).toEqual({
      value: "openai:gpt-4o",
      source: "project",
      from: join(project, "loopgraph.yaml"),
    });
    expect(effectiveSetting(config, env, "approval")).toEqual({
      value: "auto",
      source: "user",
      from: join(root, "home/loopgraph/config.yaml"),
    });
    expect(effectiveSetting(config, env, "modelTimeoutMs")).toEqual({
      value: 9000,
      source: "environment",
      from: "LOOPGRAPH_MODEL_TIMEOUT",
    });
    expect(effectiveSetting(config, { ...env, LOOPGRAPH_DB: "x.db" }, "store")).toMatchObject({ value: "x.db", source: "environment" });
    expect(effectiveSetting(loadConfig(root, {}), {}, "approval")).toEqual({ value: undefined, source: "default" });

    const settings = resolveSettings(config, env);
    expect(settings.env).toMatchObject({
      LOOPGRAPH_MODEL: "openai:gpt-4o",
      LOOPGRAPH_APPROVAL: "auto",
      LOOPGRAPH_MODEL_TIMEOUT: "9",
      LOOPGRAPH_DB: "/srv/runs.db",
    });
    // The environment it was given is left as it was: settings travel in the object, not in process.env.
    expect(env).toEqual({ XDG_CONFIG_HOME: join(root, "home"), LOOPGRAPH_MODEL_TIMEOUT: "9" });
    expect(settings).toMatchObject({ providers: {}, mcpServers: [], hooks: [], subagents: [] });
  });
});

describe("the user's own providers", () => {
  it("are OpenAI-compatible endpoints of the user's file only, named apart from the built-in ones, with a credential-like key variable; a model may name one", () => {
    const { root } = tempWorkspace();
    const path = file(
      root,
      "config.yaml",
      "model: local\nproviders:\n  local: { base_url: 'http://127.0.0.1:8000/v1', api_key_env: LOCAL_API_KEY, default_model: m1 }\n",
    );
    expect(readConfigFile(path, "user")!.values.providers).toEqual({
      local: { baseURL: "http://127.0.0.1:8000/v1", apiKeyEnv: "LOCAL_API_KEY", defaultModel: "m1" },
    });
    const bad = file(
      root,
      "bad.yaml",
      "providers:\n  openai: { base_url: 'http://x/v1' }\n  mine: { base_url: ftp://x, api_key_env: HOME, extra: 1 }\n",
    );
    expect(errorOf(() => readConfigFile(bad, "user")).split("\n")).toEqual([
      `${bad}:2:3: providers: "openai" is a built-in provider: give yours another name`,
      `${bad}:3:21: providers.mine.base_url: base_url must be the http(s) URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1`,
      `${bad}:3:43: providers.mine.api_key_env: api_key_env must name an environment variable that looks like a credential (e.g. MYLLM_API_KEY), so loopgraph keeps it from the agent and out of everything it writes`,
      `${bad}:3:49: providers.mine: unknown key "extra": a provider has base_url, api_key_env, default_model`,
    ]);
    const project = file(root, "p/loopgraph.yaml", "providers:\n  local: { base_url: 'http://127.0.0.1:8000/v1' }\n");
    expect(errorOf(() => readConfigFile(project, "project", {}))).toMatch(
      /loopgraph\.yaml:2:3: providers: a project's loopgraph.yaml cannot define providers/,
    );
    expect(errorOf(() => readConfigFile(file(root, "m.yaml", "model: local:x\n"), "user", {}))).toMatch(/unknown model provider "local"/);
  });
});
