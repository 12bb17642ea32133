import { ConfigError } from "../errors.js";
import { APPROVAL_MODES, CODER_MODES, type ApprovalMode, type CoderMode } from "../state/thread.js";

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
