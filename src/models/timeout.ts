import { ConfigError } from "../errors.js";

// The model timeout (`--model-timeout`, LOOPGRAPH_MODEL_TIMEOUT): how long a model attempt may go
// without receiving data. No heavy imports: the CLI parses its option with this before loading a command.

/** The longest model timeout: one day (timers cannot wait much beyond 24 days). */
const MAX_MODEL_TIMEOUT_SECONDS = 86_400;

/**
 * A model timeout in seconds (`--model-timeout`, LOOPGRAPH_MODEL_TIMEOUT) as milliseconds;
 * undefined unless it is a number above 0 and at most a day.
 */
export function parseModelTimeoutSeconds(value: string): number | undefined {
  const seconds = Number(value.trim());
  if (!value.trim() || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_MODEL_TIMEOUT_SECONDS) return undefined;
  return Math.max(1, Math.round(seconds * 1000));
}

/** What a model timeout must be, for messages about a bad one. */
export const MODEL_TIMEOUT_EXPECTED = `a number of seconds above 0 and at most ${MAX_MODEL_TIMEOUT_SECONDS}`;

/** The model timeout LOOPGRAPH_MODEL_TIMEOUT sets (milliseconds), if any; a bad value is a ConfigError. */
export function modelTimeoutFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const value = env.LOOPGRAPH_MODEL_TIMEOUT;
  if (value === undefined || value.trim() === "") return undefined;
  const ms = parseModelTimeoutSeconds(value);
  if (ms === undefined) throw new ConfigError(`invalid LOOPGRAPH_MODEL_TIMEOUT "${value}": use ${MODEL_TIMEOUT_EXPECTED}`);
  return ms;
}
