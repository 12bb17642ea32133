/**
 * loopgraph's configuration files and the settings they give, with where each came from.
 *
 * - the user's: `$XDG_CONFIG_HOME/loopgraph/config.yaml` (default `~/.config/loopgraph/config.yaml`);
 * - the project's: `loopgraph.yaml` at the project root (see projectRoot), written by the user.
 *
 * Precedence, highest first: a command's flags, the environment (the variable of each setting,
 * ENVIRONMENT below), the project's file, the user's file, the graph (its `model:`), the default.
 * A project file comes with the repository, like its Makefile: it cannot loosen the approval mode
 * (only `ask` or `deny`), put the store outside the project, define providers, pass credentials to
 * the agent or turn the sandbox off (a planted file must not). The agent's file tools never write a
 * `loopgraph.yaml`, and its commands see the workspace's as read-only. The keys: docs/config.md.
 *
 *     model: openai:gpt-4o-mini   # for nodes that name no model (new threads)
 *     approval: ask               # ask | auto-edit | auto | deny (new threads)
 *     mode: agent                 # agent | ask | plan: what the Coders may do (new threads)
 *     model_timeout: 120          # seconds without data before a model request is retried
 *     store: .loopgraph/loopgraph.db   # or postgres://…; a path is taken from the file's folder
 *     providers: { inhouse: { base_url: "http://…/v1", api_key_env: INHOUSE_API_KEY, default_model: m } }
 *     environment: { include: [NPM_CONFIG_TOKEN], exclude: [AWS_*] }
 *     sandbox: { enabled: true }
 *     mcp_servers: { docs: { url: "http://127.0.0.1:3001/mcp" } }   # see src/tools/mcp-servers.ts
 *     hooks: { before_tool: [ { tools: shell, command: ./check.sh } ] }   # see src/tools/hooks.ts
 *     subagents: { reviewer: { prompt: reviewer.md, tools: [read_file, grep] } }   # see src/tools/subagent-config.ts
 *     planning: { reminders: 5, two_action_rule: true, stop_check: 2, findings: 20 }   # see src/tools/planning-config.ts
 *     prices: { "openai:gpt-4o": { input: 2.5, output: 10 } }   # see prices.ts
 */
import { existsSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { untrustedReason } from "../trust/trust.js";
import { parseYamlChecked, readSettingsText, unknownKeyProblem, type Problem, type SettingsCheck } from "../diagnostics/yaml-file.js";
import { parseModelSpec, PROVIDERS, type UserProvider, type UserProviders } from "../models/spec.js";
import { MODEL_TIMEOUT_EXPECTED, parseModelTimeoutSeconds } from "../models/timeout.js";
import { configFiles, PROJECT_CONFIG } from "../project.js";
import { isSecretVariable } from "../runs/redact.js";
import { APPROVAL_MODES, CODER_MODES, type ApprovalMode, type CoderMode } from "../state/thread.js";
import { checkMcpServers, type McpServer } from "../tools/mcp-servers.js";
import { checkHooks, type Hook } from "../tools/hook-config.js";
import { checkSubagents, type DeclaredSubagent } from "../tools/subagent-config.js";
import type { Settings } from "./environment-settings.js";
import { mergeByName } from "../tools/merge-by-name.js";
import { storeBackends } from "../store/registry.js";
import { checkPlanning, type PlanningConfig } from "../tools/planning-config.js";
import { checkPrices, type ModelPrice } from "./prices.js";

/** What a configuration file may set. */
export interface ConfigValues {
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  /** Milliseconds. */
  modelTimeoutMs?: number;
  /** A SQLite file's absolute path, or a postgres:// URL. */
  store?: string;
  /** The user's own OpenAI-compatible providers (their config file only). */
  providers?: UserProviders;
  /** Variables kept in the agent's environment although named like credentials (the user's file only), comma-separated. */
  shellEnvInclude?: string;
  /** Variables removed from the agent's environment besides the credentials, comma-separated (both files add theirs). */
  shellEnvExclude?: string;
  /** `off`: the agent's commands run without the OS sandbox (the user's file only). */
  sandbox?: string;
  /** MCP servers; both files' add up, the project's replacing the user's of the same name. */
  mcpServers?: McpServer[];
  /** Hooks; both files' run, the user's first. */
  hooks?: Hook[];
  /** Subagent types; both files' add up, the project's replacing the user's of the same name. */
  subagents?: DeclaredSubagent[];
  /** The Coders' planning settings; the project's keys over the user's, a coder node's over both. */
  planning?: PlanningConfig;
  /** Model prices for eval reports; the project's over the user's, model by model. */
  prices?: Record<string, ModelPrice>;
}

export interface ConfigFile {
  kind: "user" | "project";
  path: string;
  values: ConfigValues;
}

const CONFIG_KEYS = [
  "model",
  "approval",
  "mode",
  "model_timeout",
  "store",
  "providers",
  "environment",
  "sandbox",
  "mcp_servers",
  "hooks",
  "subagents",
  "planning",
  "prices",
];
const ENVIRONMENT_KEYS = ["include", "exclude"];
const SANDBOX_KEYS = ["enabled"];
/** A variable name, or a glob of them (`AWS_*`). */
const VARIABLE_GLOB = /^[A-Za-z_*?][A-Za-z0-9_*?]*$/;
const PROVIDER_KEYS = ["base_url", "api_key_env", "default_model"];
const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/;
/** An environment variable's name. */
const VARIABLE_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** The file's data, checked by hand (a schema library would load with every command): its settings as written, or every problem. */
function checkConfig(data: unknown, kind: ConfigFile["kind"], dir: string, userProviders: UserProviders): SettingsCheck<RawConfig> {
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return {
      problems: [{ path: [], at: "value", message: "a config file must be a mapping of settings, e.g. model: openai:gpt-4o-mini" }],
    };
  }
  const problems: Problem[] = [];
  const raw = data as Record<string, unknown>;
  // A model of a provider this file defines is checked against it.
  const providerProblems = raw.providers === undefined || kind === "project" ? [] : checkProviders(raw.providers);
  const providers =
    raw.providers !== undefined && kind === "user" && providerProblems.length === 0
      ? providersOf(raw.providers as RawConfig["providers"] & object)
      : userProviders;
  const approvals: readonly string[] = kind === "project" ? ["ask", "deny"] : APPROVAL_MODES;
  for (const [key, value] of Object.entries(raw)) {
    const bad = (message: string) => problems.push({ path: [key], at: "value", message });
    switch (key) {
      case "model": {
        const problem =
          typeof value === "string" ? modelProblem(value, providers) : "model must be provider:model, e.g. openai:gpt-4o-mini";
        if (problem) bad(problem);
        break;
      }
      case "approval":
        if (
          typeof value === "string" &&
          kind === "project" &&
          !approvals.includes(value) &&
          (APPROVAL_MODES as readonly string[]).includes(value)
        ) {
          bad(`a project's ${PROJECT_CONFIG} cannot loosen approvals (approval: ${value}): set it in your user config or pass --approval`);
        } else if (typeof value !== "string" || !approvals.includes(value)) bad(`approval must be ${approvals.join(", ")}`);
        break;
      case "mode":
        if (typeof value !== "string" || !(CODER_MODES as readonly string[]).includes(value)) bad(`mode must be ${CODER_MODES.join(", ")}`);
        break;
      case "model_timeout":
        if ((typeof value !== "number" && typeof value !== "string") || parseModelTimeoutSeconds(String(value)) === undefined)
          bad(`model_timeout must be ${MODEL_TIMEOUT_EXPECTED}`);
        break;
      case "store": {
        const backend = typeof value === "string" ? storeBackends.forLocation(value.trim()) : undefined;
        if (typeof value !== "string" || value.trim() === "" || !backend) bad("store must be a SQLite file's path or a postgres:// URL");
        // A project's file comes with the repository: it must not send the runs' data to another
        // database or folder (a planted file would). A shared store is the user's to set.
        else if (kind === "project" && (!backend.inFolder || relative(dir, resolve(dir, value)).startsWith(".."))) {
          bad(`a project's ${PROJECT_CONFIG} keeps the store inside the project: set a shared store in your user config or LOOPGRAPH_DB`);
        }
        break;
      }
      case "environment":
        problems.push(...checkEnvironment(value, kind));
        break;
      case "sandbox":
        problems.push(...checkSandbox(value, kind));
        break;
      case "mcp_servers":
        problems.push(...checkMcpServers(value, declarationSource(kind, dir)).problems);
        break;
      case "hooks":
        problems.push(...checkHooks(value, declarationSource(kind, dir)).problems);
        break;
      case "subagents":
        problems.push(
          ...checkSubagents(value, { ...declarationSource(kind, dir), dir, project: kind === "project" }, (spec) =>
            modelProblem(spec, providers),
          ).problems,
        );
        break;
      case "planning":
        problems.push(...checkPlanning(value).problems);
        break;
      case "prices":
        problems.push(...checkPrices(value, providers).problems);
        break;
      case "providers":
        if (kind === "project")
          bad(
            `a project's ${PROJECT_CONFIG} cannot define providers (a planted one could send your keys elsewhere): define them in your user config`,
          );
        else problems.push(...providerProblems);
        break;
      default:
        problems.push(unknownKeyProblem([], key, CONFIG_KEYS, `unknown key "${key}": a config file has ${CONFIG_KEYS.join(", ")}`));
    }
  }
  return problems.length > 0 ? { problems } : { value: raw as RawConfig };
}

/** What is wrong with a model spec, or undefined. */
function modelProblem(spec: string, providers: UserProviders): string | undefined {
  try {
    parseModelSpec(spec, providers);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Whose servers and hooks a file declares: the user's own, or the project's (which come with the repository). */
function declarationSource(kind: ConfigFile["kind"], dir: string) {
  const origin = resolve(dir, kind === "user" ? "config.yaml" : PROJECT_CONFIG);
  return kind === "user"
    ? ({ trusted: true, origin } as const)
    : ({ trusted: false, origin, where: `a project's ${PROJECT_CONFIG}` } as const);
}

/** The user's own OpenAI-compatible providers: `name: { base_url, api_key_env?, default_model? }`. */
function checkProviders(value: unknown): Problem[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [
      { path: ["providers"], at: "value", message: "providers must be a mapping of names to { base_url, api_key_env, default_model }" },
    ];
  }
  const problems: Problem[] = [];
  for (const [name, provider] of Object.entries(value as Record<string, unknown>)) {
    const at = ["providers", name];
    if (!PROVIDER_NAME.test(name))
      problems.push({
        path: at,
        at: "key",
        message: `provider name "${name}" must be lower-case letters, digits and _ (it is written before the colon: ${name}:<model>)`,
      });
    else if ((PROVIDERS as readonly string[]).includes(name) || name === "gemini")
      problems.push({ path: at, at: "key", message: `"${name}" is a built-in provider: give yours another name` });
    if (provider === null || typeof provider !== "object" || Array.isArray(provider)) {
      problems.push({ path: at, at: "value", message: "a provider is a mapping: { base_url, api_key_env, default_model }" });
      continue;
    }
    const fields = provider as Record<string, unknown>;
    for (const [key, field] of Object.entries(fields)) {
      const bad = (message: string) => problems.push({ path: [...at, key], at: "value", message });
      if (key === "base_url") {
        if (typeof field !== "string" || !/^https?:\/\/[^\s]+$/.test(field))
          bad("base_url must be the http(s) URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1");
      } else if (key === "api_key_env") {
        // Named like a credential, it is kept from the agent and out of everything written (redact.ts).
        if (typeof field !== "string" || !VARIABLE_NAME.test(field) || !isSecretVariable(field, undefined, [])) {
          bad(
            "api_key_env must name an environment variable that looks like a credential (e.g. MYLLM_API_KEY), so loopgraph keeps it from the agent and out of everything it writes",
          );
        }
      } else if (key === "default_model") {
        if (typeof field !== "string" || field.trim() === "") bad("default_model must be a model name");
      } else problems.push(unknownKeyProblem(at, key, PROVIDER_KEYS, `unknown key "${key}": a provider has ${PROVIDER_KEYS.join(", ")}`));
    }
    if (fields.base_url === undefined) problems.push({ path: at, at: "value", message: 'missing "base_url"' });
  }
  return problems;
}

/** `environment: { include: [NAME…], exclude: [NAME…] }`: the agent's environment; a project may only take more out. */
function checkEnvironment(value: unknown, kind: ConfigFile["kind"]): Problem[] {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return [{ path: ["environment"], at: "value", message: "environment must be a mapping: { include: [NAME…], exclude: [NAME…] }" }];
  const problems: Problem[] = [];
  for (const [key, names] of Object.entries(value as Record<string, unknown>)) {
    const at = ["environment", key];
    if (!ENVIRONMENT_KEYS.includes(key))
      problems.push(unknownKeyProblem(["environment"], key, ENVIRONMENT_KEYS, `unknown key "${key}": environment has include, exclude`));
    else if (key === "include" && kind === "project") {
      problems.push({
        path: at,
        at: "key",
        message: `a project's ${PROJECT_CONFIG} cannot pass credentials to the agent (environment.include): set it in your user config`,
      });
    } else if (!Array.isArray(names) || !names.every((name) => typeof name === "string" && VARIABLE_GLOB.test(name))) {
      problems.push({
        path: at,
        at: "value",
        message: `environment.${key} must be a list of variable names (* and ? wildcards), e.g. [AWS_*, NPM_CONFIG_TOKEN]`,
      });
    }
  }
  return problems;
}

/** `sandbox: { enabled: false }`: the agent's commands without the OS sandbox, the user's choice only. */
function checkSandbox(value: unknown, kind: ConfigFile["kind"]): Problem[] {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return [{ path: ["sandbox"], at: "value", message: "sandbox must be a mapping: { enabled: true | false }" }];
  const problems: Problem[] = [];
  for (const [key, enabled] of Object.entries(value as Record<string, unknown>)) {
    if (!SANDBOX_KEYS.includes(key)) {
      const network =
        key === "network"
          ? `unknown key "network": the sandbox's network is set in policy.yaml of your config folder (sandbox: { network: allow })`
          : `unknown key "${key}": sandbox has enabled`;
      problems.push(unknownKeyProblem(["sandbox"], key, SANDBOX_KEYS, network));
    } else if (typeof enabled !== "boolean")
      problems.push({ path: ["sandbox", key], at: "value", message: "sandbox.enabled must be true or false" });
    else if (!enabled && kind === "project")
      problems.push({
        path: ["sandbox", key],
        at: "value",
        message: `a project's ${PROJECT_CONFIG} cannot turn the sandbox off: set it in your user config or pass --no-sandbox`,
      });
  }
  return problems;
}

/** The providers as the models read them. */
function providersOf(providers: NonNullable<RawConfig["providers"]>): UserProviders {
  return Object.fromEntries(
    Object.entries(providers).map(([name, provider]): [string, UserProvider] => [
      name,
      {
        baseURL: provider.base_url,
        ...(provider.api_key_env && { apiKeyEnv: provider.api_key_env }),
        ...(provider.default_model && { defaultModel: provider.default_model }),
      },
    ]),
  );
}

/** A config file's settings as written (checked). */
interface RawConfig {
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  model_timeout?: number | string;
  store?: string;
  providers?: Record<string, { base_url: string; api_key_env?: string; default_model?: string }>;
  environment?: { include?: string[]; exclude?: string[] };
  sandbox?: { enabled?: boolean };
  mcp_servers?: Record<string, unknown>;
  hooks?: Record<string, unknown>;
  subagents?: Record<string, unknown>;
  planning?: Record<string, unknown>;
  prices?: Record<string, unknown>;
}

/** A configuration file, checked (ConfigError with `file:line:col` for each problem); undefined when there is none. */
export function readConfigFile(path: string, kind: ConfigFile["kind"], userProviders: UserProviders = {}): ConfigFile | undefined {
  const text = readSettingsText(path, "config file");
  if (text === undefined) return undefined;
  const data = parseYamlChecked(text, path, (parsed) => checkConfig(parsed, kind, dirname(path), userProviders));
  const values: ConfigValues = {};
  // A script's path in the file is taken from the file's folder, as a store's path is.
  if (data.model !== undefined)
    values.model = data.model.replace(/^scripted:(?!\/)(.+)$/, (_, script: string) => `scripted:${resolve(dirname(path), script.trim())}`);
  if (data.approval !== undefined) values.approval = data.approval;
  if (data.mode !== undefined) values.mode = data.mode;
  if (data.model_timeout !== undefined) values.modelTimeoutMs = parseModelTimeoutSeconds(String(data.model_timeout));
  if (data.providers !== undefined) values.providers = providersOf(data.providers);
  if (data.environment?.include?.length) values.shellEnvInclude = data.environment.include.join(",");
  if (data.environment?.exclude?.length) values.shellEnvExclude = data.environment.exclude.join(",");
  if (data.sandbox?.enabled === false) values.sandbox = "off";
  if (data.mcp_servers !== undefined) values.mcpServers = checkMcpServers(data.mcp_servers, declarationSource(kind, dirname(path))).servers;
  if (data.hooks !== undefined) values.hooks = checkHooks(data.hooks, declarationSource(kind, dirname(path))).hooks;
  if (data.subagents !== undefined) {
    const source = { ...declarationSource(kind, dirname(path)), dir: dirname(path), project: kind === "project" };
    values.subagents = checkSubagents(data.subagents, source, () => undefined).subagents;
  }
  if (data.planning !== undefined) values.planning = checkPlanning(data.planning).planning;
  if (data.prices !== undefined) values.prices = checkPrices(data.prices, userProviders).prices;
  if (data.store !== undefined)
    values.store = storeBackends.forLocation(data.store.trim())?.inFolder === false ? data.store : resolve(dirname(path), data.store);

  return { kind, path, values };
}

/** The project root of `cwd` and both configuration files (each absent when there is none). */
export interface LoadedConfig {
  root: string;
  userPath: string;
  projectPath: string;
  user?: ConfigFile;
  project?: ConfigFile;
  /** Why the project's file is there but not read: the user does not trust it as it is (src/trust/). */
  projectIgnored?: string;
}

/**
 * Both configuration files. The project's comes with the repository, and may name hooks and MCP
 * servers to run: it is read only when the user trusts it as it is (with the scripts it names).
 */
export function loadConfig(cwd: string, env: NodeJS.ProcessEnv): LoadedConfig {
  const { root, user: userPath, project: projectPath } = configFiles(cwd, env);
  const user = readConfigFile(userPath, "user");
  const untrusted = existsSync(projectPath) ? untrustedReason(projectPath, env) : undefined;
  if (untrusted) {
    const projectIgnored = `${projectPath} is not read (${untrusted}): its settings, hooks, MCP servers and subagents are ignored; review it, then run \`loopgraph trust\``;
    return { root, userPath, projectPath, ...(user && { user }), projectIgnored };
  }
  // The project's model may name one of the user's own providers.
  const project = readConfigFile(projectPath, "project", user?.values.providers);
  return { root, userPath, projectPath, ...(user && { user }), ...(project && { project }) };
}

export type SettingName = keyof ConfigValues;

/** Where a setting's value came from. */
export type SettingSource = "flag" | "environment" | "project" | "user" | "default";

export interface EffectiveSetting<T> {
  value: T | undefined;
  source: SettingSource;
  /** The file or variable it came from. */
  from?: string;
}

/** The settings the environment sets too, each by its variable, above the files. */
type PlainSettingName = Exclude<SettingName, ListSettingName | "providers">;
/** The settings that are lists of declarations (or, planning, a block of them): only the files give them. */
type ListSettingName = "mcpServers" | "hooks" | "subagents" | "planning" | "prices";

/** The variable of each plain setting: the environment sets it above the files, and a run reads the files' value from it (see `resolveSettings`). */
const ENVIRONMENT: Record<PlainSettingName, string> = {
  model: "LOOPGRAPH_MODEL",
  approval: "LOOPGRAPH_APPROVAL",
  mode: "LOOPGRAPH_MODE",
  modelTimeoutMs: "LOOPGRAPH_MODEL_TIMEOUT",
  store: "LOOPGRAPH_DB",
  shellEnvInclude: "LOOPGRAPH_SHELL_ENV_INCLUDE",
  shellEnvExclude: "LOOPGRAPH_SHELL_ENV_EXCLUDE",
  sandbox: "LOOPGRAPH_SANDBOX",
};

/** Settings whose values add up over both files (in this order) instead of the project's replacing the user's. */
const COMBINED: { [K in SettingName]?: { projectFirst: boolean; combine(values: NonNullable<ConfigValues[K]>[]): ConfigValues[K] } } = {
  // What the agent's environment loses: a project can only take more out.
  shellEnvExclude: { projectFirst: true, combine: (values) => values.join(",") },
  // Hooks: all run, the user's first.
  hooks: { projectFirst: false, combine: (values) => values.flat() },
  // Servers: the project's replace the user's of the same name.
  mcpServers: { projectFirst: false, combine: (values) => mergeByName(...values) },
  // Subagent types: the project's replace the user's of the same name.
  subagents: { projectFirst: false, combine: (values) => mergeByName(...values) },
  // Planning: the project's keys over the user's.
  planning: { projectFirst: false, combine: (values) => Object.assign({}, ...values) },
  // Prices: the project's over the user's, model by model.
  prices: { projectFirst: false, combine: (values) => Object.assign({}, ...values) },
};

/**
 * A setting as it applies: the flag's value if given, else the environment's variable, else the
 * project's file, else the user's; undefined (source "default") when none sets it.
 */
export function effectiveSetting<K extends SettingName>(
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  name: K,
  flag?: ConfigValues[K],
): EffectiveSetting<ConfigValues[K]> {
  if (flag !== undefined) return { value: flag, source: "flag" };
  const variable = (ENVIRONMENT as Partial<Record<SettingName, string>>)[name];
  const fromEnv = variable === undefined ? undefined : env[variable]?.trim();
  if (variable !== undefined && fromEnv) {
    const value = name === "modelTimeoutMs" ? parseModelTimeoutSeconds(fromEnv) : fromEnv;
    return { value: value as ConfigValues[K], source: "environment", from: variable };
  }
  const combined = COMBINED[name];
  if (combined) {
    const files = (combined.projectFirst ? [config.project, config.user] : [config.user, config.project]).filter(
      (file): file is ConfigFile => file?.values[name] !== undefined,
    );
    if (files.length > 0) {
      const value = combined.combine(files.map((file) => file.values[name] as NonNullable<ConfigValues[K]>));
      const source = files.some((file) => file.kind === "project") ? "project" : "user";
      return { value, source, from: files.map((file) => file.path).join(" + ") };
    }
  }
  for (const file of [config.project, config.user]) {
    const value = file?.values[name];
    if (value !== undefined) return { value, source: file!.kind, from: file!.path };
  }
  return { value: undefined, source: "default" };
}

/**
 * The settings a command runs with, resolved once: flags > environment > project > user > graph
 * holds wherever they are read (a flag is read before the variable; a graph's model after it).
 * The plain settings reach the run as the variables that set them: `env` with the files' values
 * filled in where `env` does not set them (the result only: never process.env). The lists come
 * typed. Throws ConfigError for a bad file.
 */
export function resolveSettings(config: LoadedConfig, env: NodeJS.ProcessEnv): Settings {
  const filled: NodeJS.ProcessEnv = { ...env };
  for (const name of Object.keys(ENVIRONMENT) as PlainSettingName[]) {
    const setting = effectiveSetting(config, env, name);
    if (setting.source !== "project" && setting.source !== "user") continue;
    filled[ENVIRONMENT[name]] = name === "modelTimeoutMs" ? String(Number(setting.value) / 1000) : String(setting.value);
  }
  return {
    env: filled,
    providers: config.user?.values.providers ?? {},
    mcpServers: effectiveSetting(config, env, "mcpServers").value ?? [],
    hooks: effectiveSetting(config, env, "hooks").value ?? [],
    subagents: effectiveSetting(config, env, "subagents").value ?? [],
    ...withPlanning(effectiveSetting(config, env, "planning").value),
    ...withPrices(effectiveSetting(config, env, "prices").value),
  };
}

/** The files' planning settings, when they set any. */
function withPlanning(planning: PlanningConfig | undefined): { planning?: PlanningConfig } {
  return planning && Object.keys(planning).length > 0 ? { planning } : {};
}

/** The files' prices, when they set any. */
function withPrices(prices: Record<string, ModelPrice> | undefined): { prices?: Record<string, ModelPrice> } {
  return prices && Object.keys(prices).length > 0 ? { prices } : {};
}
