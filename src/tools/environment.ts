/**
 * The environment of everything the agent runs (the shell tool): loopgraph's own, without its
 * credentials. Removed: the model providers' keys, every variable whose name contains KEY,
 * SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE or CREDENTIAL, and every value that is a URL with
 * a password (`DATABASE_URL=postgres://user:password@host/db`). Configured by loopgraph's own
 * environment, which the agent cannot change:
 *
 * - `LOOPGRAPH_SHELL_ENV_INCLUDE`: comma-separated names (`*` wildcards) kept although they look
 *   like credentials, e.g. `NPM_CONFIG_TOKEN` for a test run that needs it (never a model key);
 * - `LOOPGRAPH_SHELL_ENV_EXCLUDE`: names removed besides, e.g. `AWS_*`.
 */
import { MODEL_KEY_VARIABLES } from "../models/spec.js";
import { isSecretVariable, nameMatcher, variableNames } from "../runs/redact.js";

export interface EnvironmentPolicy {
  /** Names (globs) kept although they look like credentials; never the model providers' keys. */
  include: readonly string[];
  /** Names (globs) removed besides the credentials. */
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
    if (isSecretVariable(name, value, MODEL_KEY_VARIABLES) && !included(name)) continue;
    kept[name] = value;
  }
  return kept;
}
