/**
 * `loopgraph init`, the configuration files and `loopgraph config`, with the real CLI: a project
 * made from an empty folder, its settings applied from a subdirectory, each setting's source.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli, SANDBOX_AS_FOUND, trustIn } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const SCRIPT = [
  "responses:",
  '  - { node: coder, content: "Nothing to change: done." }',
  '  - { node: reviewer, content: "The task is done." }',
  "",
].join("\n");

describe("loopgraph init", () => {
  it("makes a project of an empty folder, keeps what exists when run again, and its starter graph validates against the schema copy", async () => {
    const { root } = tempWorkspace();
    const env = cleanEnv({ XDG_CONFIG_HOME: join(root, "config") });
    const project = join(root, "project");
    mkdirSync(project);
    const first = await runCli(["init"], { cwd: project, env });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^created +loopgraph\.yaml$/m);
    expect(first.stdout).toMatch(/^created +graphs\/starter\.yaml$/m);
    expect(first.stdout).toMatch(/^created +graphs\/prompts\/reviewer\.md$/m);
    expect(first.stdout).toMatch(/^created +\.loopgraph\/graph\.schema\.json$/m);
    expect(readFileSync(join(project, ".loopgraph", ".gitignore"), "utf8")).toContain("*");
    expect(readFileSync(join(project, "graphs", "starter.yaml"), "utf8")).toMatch(
      /^# yaml-language-server: \$schema=\.\.\/\.loopgraph\/graph\.schema\.json$/m,
    );
    expect(JSON.parse(readFileSync(join(project, ".loopgraph", "graph.schema.json"), "utf8"))).toHaveProperty("$schema");

    writeFileSync(
      join(project, "graphs", "starter.yaml"),
      readFileSync(join(project, "graphs", "starter.yaml"), "utf8").replace("then a reviewer", "then my reviewer"),
    );
    const again = await runCli(["init"], { cwd: project, env });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toMatch(/^created/m);
    expect(readFileSync(join(project, "graphs", "starter.yaml"), "utf8")).toContain("then my reviewer");
    expect((await runCli(["graphs", "validate", "graphs/starter.yaml"], { cwd: project, env })).code).toBe(0);
  });

  it("refuses to write through a link in the project", async () => {
    const { root } = tempWorkspace();
    const project = join(root, "project");
    mkdirSync(join(root, "elsewhere"), { recursive: true });
    mkdirSync(project);
    symlinkSync(join(root, "elsewhere"), join(project, "graphs"));
    const refused = await runCli(["init"], { cwd: project, env: cleanEnv({ XDG_CONFIG_HOME: join(root, "config") }) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/graphs is not a directory \(a link\?\)/);
  });
});

describe("configuration files", () => {
  it("a project's model applies from a subdirectory; loopgraph config says where each setting comes from; flags and the environment come first", async () => {
    const { root } = tempWorkspace();
    const env = cleanEnv({ XDG_CONFIG_HOME: join(root, "config") });
    const project = join(root, "project");
    mkdirSync(join(project, "src", "deep"), { recursive: true });
    expect((await runCli(["init"], { cwd: project, env })).code).toBe(0);
    writeFileSync(join(project, "starter.script.yaml"), SCRIPT);
    writeFileSync(join(project, "loopgraph.yaml"), "model: scripted:starter.script.yaml\nmodel_timeout: 45\nplanning: { reminders: 3 }\n");
    trustIn(project, env);
    mkdirSync(join(root, "config", "loopgraph"), { recursive: true });
    writeFileSync(
      join(root, "config", "loopgraph", "config.yaml"),
      "approval: auto\nmodel: openai:gpt-4o\nplanning: { reminders: 7, stop_check: 1 }\nprices: { openai:gpt-4o: { input: 2.5, output: 10 } }\n",
    );
    const sub = { cwd: join(project, "src", "deep"), env };

    const ran = await runCli(["run", "starter", "--task", "check the project", "--thread", "c1", "--json"], sub);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    const inspected = JSON.parse((await runCli(["inspect", "c1", "--json"], sub)).stdout) as {
      thread: { model: string; approval: string };
    };
    expect(inspected.thread).toMatchObject({ model: `scripted:${join(project, "starter.script.yaml")}`, approval: "auto" });

    // Without the tests' LOOPGRAPH_SANDBOX=off (cleanEnv), so that the sandbox's line is its default.
    const shown = JSON.parse((await runCli(["config", "--json"], { ...sub, env: { ...env, ...SANDBOX_AS_FOUND } })).stdout) as {
      projectRoot: string;
      settings: { name: string; value?: string; source: string }[];
    };
    expect(shown.projectRoot).toBe(project);
    expect(shown.settings).toEqual([
      {
        name: "model",
        value: `scripted:${join(project, "starter.script.yaml")}`,
        source: "project",
        from: join(project, "loopgraph.yaml"),
      },
      { name: "approval", value: "auto", source: "user", from: join(root, "config", "loopgraph", "config.yaml") },
      { name: "model_timeout", value: "45 s", source: "project", from: join(project, "loopgraph.yaml") },
      { name: "store", value: join(project, ".loopgraph", "loopgraph.db"), source: "default" },
      { name: "providers", source: "the built-in ones only" },
      { name: "environment.include", source: "none: every variable named like a credential is removed" },
      { name: "environment.exclude", source: "none besides the credentials" },
      { name: "sandbox", value: "on", source: "default" },
      { name: "mcp_servers", source: "none (a graph's mcp_servers: adds its own)" },
      { name: "hooks", source: "none" },
      { name: "subagents", source: "none (a coder node's subagents: adds its own)" },
      { name: "mode", source: "each Coder node's mode:, else agent" },
      // The project's keys over the user's, the defaults for the rest.
      {
        name: "planning",
        value: "reminders 3, two_action_rule true, stop_check 1, findings 20",
        source: "project",
        from: `${join(root, "config", "loopgraph", "config.yaml")} + ${join(project, "loopgraph.yaml")}`,
      },
      { name: "prices", value: "openai:gpt-4o 2.5 in / 10 out", source: "user", from: join(root, "config", "loopgraph", "config.yaml") },
    ]);
    const overridden = JSON.parse(
      (await runCli(["--db", "x.db", "config", "--json"], { ...sub, env: { ...env, LOOPGRAPH_APPROVAL: "deny" } })).stdout,
    ) as typeof shown;
    expect(overridden.settings.map((setting) => setting.source).slice(0, 4)).toEqual(["project", "environment", "project", "flag"]);
    const asked = await runCli(["run", "starter", "--task", "check", "--thread", "c2", "--approval", "ask", "--json"], sub);
    expect(asked.code).toBe(0);
    expect((JSON.parse((await runCli(["inspect", "c2", "--json"], sub)).stdout) as typeof inspected).thread.approval).toBe("ask");
  });

  it("a bad file stops every command with its problems as file:line:col (exit 2)", async () => {
    const { root } = tempWorkspace();
    const env = cleanEnv({ XDG_CONFIG_HOME: join(root, "config") });
    const project = join(root, "project");
    mkdirSync(project);
    writeFileSync(join(project, "loopgraph.yaml"), "approval: auto\nmodle: openai:gpt-4o\n");
    // init and completion use no setting, and work beside the broken file.
    expect((await runCli(["init"], { cwd: project, env })).code).toBe(0);
    // Untrusted, the file is not read at all (see tests/cli.trust.e2e.test.ts); trusted, its problems stop every command.
    trustIn(project, env);
    for (const args of [["inspect"], ["run", "coder", "--task", "x"], ["config"]]) {
      const failed = await runCli(args, { cwd: project, env });
      expect(failed.code, args.join(" ")).toBe(2);
      expect(failed.stderr).toContain(
        `${join(project, "loopgraph.yaml")}:1:11: approval: a project's loopgraph.yaml cannot loosen approvals`,
      );
      expect(failed.stderr).toContain(`${join(project, "loopgraph.yaml")}:2:1: unknown key "modle": did you mean "model"?`);
    }
  });
});

describe("the agent's environment and sandbox in the config files", () => {
  it("the user's file passes a credential on and may turn the sandbox off; the project's only takes more out", async () => {
    const { root } = tempWorkspace();
    const project = join(root, "project");
    mkdirSync(project);
    const configHome = join(root, "config");
    mkdirSync(join(configHome, "loopgraph"), { recursive: true });
    writeFileSync(
      join(configHome, "loopgraph", "config.yaml"),
      "environment: { include: [DEPLOY_TOKEN], exclude: [USER_GONE] }\nsandbox: { enabled: false }\n",
    );
    writeFileSync(join(project, "loopgraph.yaml"), "environment: { exclude: [PROJECT_GONE] }\n");
    const script = join(project, "env.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        "  - node: coder",
        "    tool_calls:",
        '      - { name: shell, args: { command: "echo token=$DEPLOY_TOKEN user=$USER_GONE project=$PROJECT_GONE kept=$KEPT_VAR > env.txt" } }',
        '  - { node: coder, content: "done" }',
        "",
      ].join("\n"),
    );
    const env = cleanEnv({ XDG_CONFIG_HOME: configHome, DEPLOY_TOKEN: "dt-123456789", USER_GONE: "u", PROJECT_GONE: "p", KEPT_VAR: "k" });
    trustIn(project, env);
    const ran = await runCli(["run", "coder", "--task", "env", "--model", `scripted:${script}`, "--approval", "auto", "--json"], {
      cwd: project,
      env,
    });
    expect(ran.code, ran.stderr).toBe(0);
    // DEPLOY_TOKEN is passed on by the user's file; KEPT_VAR, named by nobody, is not (the agent's environment is an allow-list).
    expect(readFileSync(join(project, "env.txt"), "utf8")).toBe("token=dt-123456789 user= project= kept=\n");
    expect(ran.stdout).toMatch(/"type":"run_started".*"sandbox":"off"/);
    const shown = JSON.parse((await runCli(["config", "--json"], { cwd: project, env })).stdout) as {
      settings: { name: string; value?: string; source: string }[];
    };
    expect(shown.settings.find((setting) => setting.name === "environment.exclude")).toMatchObject({
      value: "PROJECT_GONE,USER_GONE",
      source: "project",
    });

    writeFileSync(join(project, "loopgraph.yaml"), "environment: { include: [DEPLOY_TOKEN] }\nsandbox: { enabled: false }\n");
    trustIn(project, env);
    const refused = await runCli(["config"], { cwd: project, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "loopgraph.yaml:1:16: environment: a project's loopgraph.yaml cannot pass credentials to the agent (environment.include)",
    );
    expect(refused.stderr).toContain("loopgraph.yaml:2:21: sandbox.enabled: a project's loopgraph.yaml cannot turn the sandbox off");
  });
});
