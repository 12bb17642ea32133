/**
 * The environment of everything the agent runs (the shell tool, hooks, MCP servers): by
 * allow-list, as Codex's `inherit = "core"`. The agent gets the core variables (PATH, HOME, USER,
 * LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE, LC_*), less any that looks like a credential,
 * and the variables the user names; nothing else of loopgraph's environment, whatever its name
 * (`MYSQL_PWD`, `DB_PASS`, `SENTRY_DSN` reach no command). Configured by loopgraph's own
 * environment, which the agent cannot change:
 *
 * - `LOOPGRAPH_SHELL_ENV_INCLUDE`: comma-separated names (`*` wildcards) passed on besides, even
 *   one that looks like a credential, e.g. `NPM_CONFIG_TOKEN` or `JAVA_HOME` (never a model key);
 * - `LOOPGRAPH_SHELL_ENV_EXCLUDE`: names removed, even core ones.
 */
import { MODEL_KEY_VARIABLES } from "../models/spec.js";
import { isCoreVariable, isSecretVariable, nameMatcher, variableNames } from "../runs/redact.js";

export interface EnvironmentPolicy {
  /** Names (globs) passed on besides the core ones, even credentials; never the model providers' keys. */
  include: readonly string[];
  /** Names (globs) removed, core ones too. */
  exclude: readonly string[];
}

/** The policy set in loopgraph's own environment. */
export function environmentPolicyOf(env: NodeJS.ProcessEnv): EnvironmentPolicy {
  return { include: variableNames(env.LOOPGRAPH_SHELL_ENV_INCLUDE), exclude: variableNames(env.LOOPGRAPH_SHELL_ENV_EXCLUDE) };
}

/** `env` as the agent's commands see it, under `policy` (default: the one `env` sets). */
export function agentEnvironment(env: NodeJS.ProcessEnv, policy: EnvironmentPolicy = environmentPolicyOf(env)): NodeJS.ProcessEnv {
  const included = nameMatcher(policy.include);
  const excluded = nameMatcher(policy.exclude);
  const kept: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (MODEL_KEY_VARIABLES.includes(name) || excluded(name)) continue;
    const core = isCoreVariable(name) && !isSecretVariable(name, value, MODEL_KEY_VARIABLES);
    if (core || included(name)) kept[name] = value;
  }
  return kept;
}
