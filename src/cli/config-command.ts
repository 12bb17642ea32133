import pc from "picocolors";
import { approvalFromEnvironment, modeFromEnvironment } from "../config/environment-settings.js";
import { effectiveSetting, loadConfig, resolveSettings, type EffectiveSetting, type LoadedConfig } from "../config/settings.js";
import type { Settings } from "../config/environment-settings.js";
import { ConfigError, ExitCode } from "../errors.js";
import { parseModelSpec } from "../models/spec.js";
import { modelTimeoutFromEnv } from "../models/timeout.js";
import { defaultStorePath } from "../project.js";
import { withoutPassword } from "../runs/url-password.js";
import { DEFAULT_PLANNING, describePlanning, effectivePlanning } from "../tools/planning-config.js";

interface ShownSetting {
  name: string;
  value: string | undefined;
  source: string;
  from?: string;
  /** Why a run would refuse this value, in the run's own words. */
  problem?: string;
}

/** The checks a run makes of the settings that reach it through the environment (the variable's, or a config file's). */
const RUN_CHECKS: Record<string, (settings: Settings) => unknown> = {
  model: ({ env, providers }) => env.LOOPGRAPH_MODEL?.trim() && parseModelSpec(env.LOOPGRAPH_MODEL, providers),
  approval: ({ env }) => approvalFromEnvironment(env),
  mode: ({ env }) => modeFromEnvironment(env),
  model_timeout: ({ env }) => modelTimeoutFromEnv(env),
};

/** What a run with `settings` would say of the setting `name`, if it would refuse it. */
function runProblem(name: string, settings: Settings): string | undefined {
  try {
    RUN_CHECKS[name]?.(settings);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

/** `loopgraph config`: the settings that apply here, and where each came from. */
export async function configCommand(options: { json?: boolean; db?: string; cwd?: string; env?: NodeJS.ProcessEnv }): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const config = loadConfig(cwd, env);
  const settings = shownSettings(config, env, options.db);
  const problems = settings.flatMap((setting) => (setting.problem ? [setting.problem] : []));
  const exitCode = problems.length > 0 ? ExitCode.BadInput : ExitCode.Finished;
  if (options.json) {
    const files = {
      projectRoot: config.root,
      userConfig: { path: config.userPath, found: Boolean(config.user) },
      projectConfig: {
        path: config.projectPath,
        found: Boolean(config.project),
        ...(config.projectIgnored && { ignored: config.projectIgnored }),
      },
    };
    process.stdout.write(`${JSON.stringify({ ...files, settings }, null, 2)}\n`);
    return exitCode;
  }
  const found = (path: string, present: boolean) => `${path}${present ? "" : pc.dim("  (none)")}`;
  process.stdout.write(
    [
      `project root    ${config.root}`,
      `user config     ${found(config.userPath, Boolean(config.user))}`,
      `project config  ${config.projectIgnored ? `${config.projectPath}${pc.yellow("  (not read: not trusted; see `loopgraph trust`)")}` : found(config.projectPath, Boolean(config.project))}`,
      "",
      ...settings.map(
        (setting) =>
          `${setting.name.padEnd(14)}  ${(setting.value ?? pc.dim("(none)")).padEnd(40)}  ${pc.dim(setting.from ? `${setting.source}: ${setting.from}` : setting.source)}`,
      ),
      "",
    ].join("\n"),
  );
  for (const problem of problems) process.stderr.write(`loopgraph: ${problem}\n`);
  return exitCode;
}

function shownSettings(config: LoadedConfig, env: NodeJS.ProcessEnv, db: string | undefined): ShownSetting[] {
  const run = resolveSettings(config, env);
  const show = <T>(
    name: string,
    setting: EffectiveSetting<T>,
    text: (value: NonNullable<T>) => string,
    fallback: { value?: string; source: string },
  ): ShownSetting => {
    const problem = runProblem(name, run);
    // A value a run refuses is shown as it was given (a bad model timeout reads as none at all).
    if (problem)
      return {
        name,
        value: setting.from && run.env[setting.from],
        source: setting.source,
        ...(setting.from && { from: setting.from }),
        problem,
      };
    return setting.value !== undefined
      ? { name, value: text(setting.value as NonNullable<T>), source: setting.source, ...(setting.from && { from: setting.from }) }
      : { name, value: fallback.value, source: fallback.source };
  };
  return [
    show("model", effectiveSetting(config, env, "model"), String, { source: "each graph's model:, if it has one" }),
    show("approval", effectiveSetting(config, env, "approval"), String, { value: "ask", source: "default" }),
    show("model_timeout", effectiveSetting(config, env, "modelTimeoutMs"), (ms) => `${Number(ms) / 1000} s`, {
      value: "120 s",
      source: "default",
    }),
    show("store", effectiveSetting(config, env, "store", db), (store) => withoutPassword(String(store)), {
      value: defaultStorePath(config.root),
      source: "default",
    }),
    show("providers", effectiveSetting(config, env, "providers"), (providers) => Object.keys(providers).join(", "), {
      source: "the built-in ones only",
    }),
    show("environment.include", effectiveSetting(config, env, "shellEnvInclude"), String, {
      source: "none: every variable named like a credential is removed",
    }),
    show("environment.exclude", effectiveSetting(config, env, "shellEnvExclude"), String, { source: "none besides the credentials" }),
    show("sandbox", effectiveSetting(config, env, "sandbox"), (value) => (value === "off" ? "off" : String(value)), {
      value: "on",
      source: "default",
    }),
    show(
      "mcp_servers",
      effectiveSetting(config, env, "mcpServers"),
      (servers) => servers.map((server) => `${server.name} (${server.transport})`).join(", "),
      { source: "none (a graph's mcp_servers: adds its own)" },
    ),
    show(
      "hooks",
      effectiveSetting(config, env, "hooks"),
      (hooks) => hooks.map((hook) => `${hook.event}${hook.tools ? ` (${hook.tools})` : ""}: ${hook.command}`).join("; "),
      { source: "none" },
    ),
    show(
      "subagents",
      effectiveSetting(config, env, "subagents"),
      (agents) => agents.map((agent) => `${agent.name}${agent.description ? ` (${agent.description})` : ""}`).join(", "),
      { source: "none (a coder node's subagents: adds its own)" },
    ),
    show("mode", effectiveSetting(config, env, "mode"), String, { source: "each Coder node's mode:, else agent" }),
    show("planning", effectiveSetting(config, env, "planning"), (planning) => describePlanning(effectivePlanning(planning, undefined)), {
      value: describePlanning(DEFAULT_PLANNING),
      source: "default (a coder node's planning: keys win)",
    }),
    show(
      "prices",
      effectiveSetting(config, env, "prices"),
      (prices) =>
        Object.entries(prices)
          .map(([model, price]) => `${model} ${price.input} in / ${price.output} out`)
          .join(", "),
      { source: "none: eval reports estimate no cost" },
    ),
  ];
}
