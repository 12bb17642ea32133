/** The throwaway PostgreSQL server of the tests, shared with the benchmarks (bench/postgres-server.ts). */
import pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { lacks } from "./requirements.js";

export { startPostgres, type PostgresServer };

/**
 * A describe block whose tests share one throwaway server, started before them and stopped
 * after; skipped with one line (`what` names the tests) where no server can start, except under
 * LOOPGRAPH_REQUIRE_POSTGRES=1 (CI), where the file fails instead (tests/helpers/requirements.ts). `server()` is the running server, inside the tests.
 */
export function describeOnPostgres(title: string, what: string, body: (server: () => PostgresServer) => void): void {
  describe.skipIf(lacks("postgres", what))(title, () => {
    body(usePostgres());
  });
}

/** A throwaway server for the tests of the describe block this is called in: started before them, stopped after. */
export function usePostgres(): () => PostgresServer {
  let running: PostgresServer | undefined;
  beforeAll(async () => {
    running = await startPostgres();
  });
  afterAll(() => {
    running?.stop();
  });
  return () => {
    if (!running) throw new Error("usePostgres: the server is read before its beforeAll ran");
    return running;
  };
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
