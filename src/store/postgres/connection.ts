import pg from "pg";
import { ConfigError } from "../../errors.js";
import { SchemaTooNewError } from "./schema.js";
import { isConnectionLost, StoreUnreachableError } from "./outage.js";
import { urlPasswords, withoutPassword } from "../../runs/url-password.js";

/** How long connecting to the server may take before it counts as unreachable, by default. */
const CONNECT_TIMEOUT_MS = 10_000;

/** How long connecting may take (LOOPGRAPH_PG_CONNECT_TIMEOUT_MS, a whole number of milliseconds), for every pool loopgraph opens. */
export function connectTimeoutMs(env: NodeJS.ProcessEnv): number {
  const timeout = Number(env.LOOPGRAPH_PG_CONNECT_TIMEOUT_MS);
  return Number.isInteger(timeout) && timeout > 0 ? timeout : CONNECT_TIMEOUT_MS;
}

/**
 * A pool of connections to the server a PostgreSQL URL names, checked with one query: a server
 * that cannot be reached or refuses the login, or a database that does not exist, is one line
 * (exit 2) that shows the URL without its password. The password is in no message either way.
 */
export async function openPostgresPool(url: string, env: NodeJS.ProcessEnv, max = 10): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectTimeoutMs(env),
    application_name: "loopgraph",
    // The server's JIT compiler pays off for long analytic queries; loopgraph's are short, and one
    // whose estimate passed jit_above_cost (a history page with its versions chains) spent 23 ms
    // compiling to run 35. Set at login (PostgreSQL 11 and newer); a URL's own `options` win.
    options: "-c jit=off",
  });
  // An idle connection the server drops must not end the process: the next query reconnects.
  pool.on("error", () => undefined);
  try {
    await pool.query("SELECT 1");
    return pool;
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw postgresError(url, error);
  }
}

/** A PostgreSQL error as one line naming the server (never the password), with what to do. */
export function postgresError(url: string, error: unknown): Error {
  const shown = withoutPassword(url.trim());
  const passwords = urlPasswords(url);
  const scrub = (text: string) => passwords.reduce((scrubbed, password) => scrubbed.split(password).join("***"), text);
  if (error instanceof ConfigError) return error;
  if (error instanceof SchemaTooNewError) return new ConfigError(`${shown}: ${error.message}`);
  const code = (error as { code?: unknown }).code;
  const message = scrub(error instanceof Error ? error.message.split("\n")[0]! : String(error));
  if (code === "28P01" || code === "28000") {
    return new ConfigError(`the PostgreSQL server of ${shown} refused the login (${message}): check the user and password`);
  }
  if (code === "3D000") return new ConfigError(`${shown}: ${message}: create the database (createdb) or name another one`);
  if ((typeof code === "string" && /^E[A-Z]+$/.test(code)) || /timeout/i.test(message) || isConnectionLost(error)) {
    const why = /timeout/i.test(message) ? "no answer in time" : message || String(code);
    return new StoreUnreachableError(
      `cannot reach the PostgreSQL server of ${shown} (${why}): check that it runs and that the host and port are right`,
      error,
    );
  }
  return new ConfigError(`PostgreSQL (${shown}): ${message}`);
}
