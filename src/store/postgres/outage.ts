/**
 * A PostgreSQL store that went away (the server stopped, restarts, or the network dropped): told
 * apart from a bad query, wherever it surfaces (a checkpoint write, a node's step, the queue), so
 * that a run stops at its last checkpoint instead of failing, and a worker waits for the server
 * instead of dying. No `pg` import: the engine's error paths read this.
 */
import { ConfigError } from "../../errors.js";

/**
 * Node's socket errors, and PostgreSQL's: 57P01 admin shutdown (`pg_ctl stop -m fast`), 57P02
 * crash shutdown, 57P03 cannot connect now (starting up, shutting down); class 08 is connection
 * exceptions.
 */
const LOST_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "57P01",
  "57P02",
  "57P03",
]);

/** What node-postgres says, with no code, when a connection it had or wanted is gone. */
const LOST_MESSAGES = /Connection terminated|not queryable|timeout exceeded when trying to connect|connection timeout/i;

/** The server of a PostgreSQL store could not be reached (exit 2 outside a run). */
export class StoreUnreachableError extends ConfigError {
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = "StoreUnreachableError";
    this.cause = cause;
  }
}

/** Whether `error`, or an error it wraps (`cause`), is a lost or refused connection to the store's server. */
export function isConnectionLost(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 10; depth++) {
    if (current instanceof StoreUnreachableError || lostByItself(current)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function lostByItself(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (LOST_CODES.has(code) || code.startsWith("08"))) return true;
  // A connect() to a host with several addresses fails with all of them at once.
  if (error instanceof AggregateError) return error.errors.some(lostByItself);
  return error instanceof Error && LOST_MESSAGES.test(error.message);
}

/** The first line of what the server or the driver said, for a one-line message. */
export function lostReason(error: unknown): string {
  for (let current = error, depth = 0; current instanceof Error && depth < 10; depth++) {
    if (lostByItself(current)) return current.message.split("\n")[0] || (current as { code?: string }).code || "connection lost";
    current = current.cause;
  }
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/** The line a run stopped by a lost store ends with: where, why, and how to go on. */
export function storeWentAway(path: string, threadId: string, error: unknown): string {
  return `the PostgreSQL server of ${path} went away (${lostReason(error)}): the run stopped at its last checkpoint; continue it with \`loopgraph resume ${threadId}\` once the server is back`;
}
