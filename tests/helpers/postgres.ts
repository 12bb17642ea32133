/** The throwaway PostgreSQL server of the tests, shared with the benchmarks (bench/postgres-server.ts). */
import pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";
import { POSTGRES_REQUIRED, postgresUnavailable, startPostgres, type PostgresServer } from "../../bench/postgres-server.js";

export { POSTGRES_REQUIRED, postgresUnavailable, startPostgres, type PostgresServer };

/**
 * A describe block whose tests share one throwaway server, started before them and stopped
 * after; skipped with a warning (`what` names the tests) where no server can start, except in CI,
 * where the block fails instead. `server()` is the running server, inside the tests.
 */
export function describeOnPostgres(title: string, what: string, body: (server: () => PostgresServer) => void): void {
  const unavailable = postgresUnavailable();
  if (unavailable && !POSTGRES_REQUIRED) console.warn(`skipping ${what}: ${unavailable}`);
  describe.skipIf(unavailable !== undefined && !POSTGRES_REQUIRED)(title, () => {
    let running: PostgresServer | undefined;
    beforeAll(async () => {
      running = await startPostgres();
    });
    afterAll(() => {
      running?.stop();
    });
    body(() => {
      if (!running) throw new Error("describeOnPostgres: the server is read before its beforeAll ran");
      return running;
    });
  });
}

/** The rows a query returns, on a connection of its own. */
export async function queryRows<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
