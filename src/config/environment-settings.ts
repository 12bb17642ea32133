import { ConfigError } from "../errors.js";
import type { UserProviders } from "../models/spec.js";
import { APPROVAL_MODES, CODER_MODES, type ApprovalMode, type CoderMode } from "../state/thread.js";
import type { Hook } from "../tools/hook-config.js";
import type { McpServer } from "../tools/mcp-servers.js";
import type { DeclaredSubagent } from "../tools/subagent-config.js";
import type { PlanningConfig } from "../tools/planning-config.js";
import type { PriceTable } from "./prices.js";

// The thread settings the environment gives (set by the user, or by a config file through the CLI).
// Light on purpose: `loopgraph config` checks them with these, as a run reads them.

/** LOOPGRAPH_MODE: the Coder mode of new threads. */
export function modeFromEnvironment(env: NodeJS.ProcessEnv): CoderMode | undefined {
  const value = env.LOOPGRAPH_MODE?.trim();
  if (!value) return undefined;
  if (!(CODER_MODES as readonly string[]).includes(value))
    throw new ConfigError(`invalid LOOPGRAPH_MODE "${value}": use ${CODER_MODES.join(", ")}`);
  return value as CoderMode;
}

/** LOOPGRAPH_APPROVAL: the approval mode of new threads. */
export function approvalFromEnvironment(env: NodeJS.ProcessEnv): ApprovalMode | undefined {
  const value = env.LOOPGRAPH_APPROVAL?.trim();
  if (!value) return undefined;
  if (!(APPROVAL_MODES as readonly string[]).includes(value))
    throw new ConfigError(`invalid LOOPGRAPH_APPROVAL "${value}": use ${APPROVAL_MODES.join(", ")}`);
  return value as ApprovalMode;
}

/**
 * What a command runs with, resolved once at the CLI's edge (src/config/settings.ts
 * `resolveSettings`) and handed down through the thread to the nodes and tools: nothing below
 * reads process.env.
 */
export interface Settings {
  /**
   * The environment runs are given: loopgraph's own, with the configuration files' plain settings
   * filled in as the variables that set them (LOOPGRAPH_MODEL, LOOPGRAPH_DB…: docs/config.md).
   * Model keys and the agent's environment are read from it.
   */
  readonly env: NodeJS.ProcessEnv;
  /** The user's own OpenAI-compatible providers (their config file). */
  readonly providers: UserProviders;
  /** The config files' MCP servers. */
  readonly mcpServers: readonly McpServer[];
  /** The config files' hooks, the user's first. */
  readonly hooks: readonly Hook[];
  /** The config files' subagent types. */
  readonly subagents: readonly DeclaredSubagent[];
  /** The config files' planning settings for the Coders (a coder node's own keys win). */
  readonly planning?: PlanningConfig;
  /** The config files' model prices, for eval reports (src/config/prices.ts). */
  readonly prices?: PriceTable;
}

/** The settings of `env` alone, where no configuration file is (or for a library caller). */
export function settingsOf(env: NodeJS.ProcessEnv): Settings {
  return { env, providers: {}, mcpServers: [], hooks: [], subagents: [] };
}

/** The model prices the config files give (the project's over the user's, model by model), for eval reports. */
export function priceTable(settings: Settings): PriceTable {
  return settings.prices ?? {};
}
