/**
 * Connecting to a PostgreSQL store (src/store/postgres/connection.ts) on a throwaway server: a
 * wrong password, a missing database and a server that is not there are each one line, exit 2,
 * naming the server without the password, which no message contains.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.js";
import { openPostgresPool } from "../src/store/postgres/connection.js";
import { startPostgres, type PostgresServer } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

async function failure(url: string): Promise<ConfigError> {
  const error = await openPostgresPool(url, { LOOPGRAPH_PG_CONNECT_TIMEOUT_MS: "3000" }).then(
    (pool) => pool.end().then(() => undefined),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe.skipIf(lacks("postgres", "the PostgreSQL connection tests"))("connecting to a PostgreSQL store", () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(() => server?.stop());

  it("connects with the right password, and says in one line, without the password, what is wrong otherwise", async () => {
    const pool = await openPostgresPool(server.url, {});
    expect((await pool.query("SELECT current_user AS user")).rows).toEqual([{ user: "loopgraph" }]);
    // The server's JIT compiler is off for loopgraph's short queries; a URL's own options win.
    expect((await pool.query("SHOW jit")).rows).toEqual([{ jit: "off" }]);
    await pool.end();
    const own = await openPostgresPool(`${server.url}?options=${encodeURIComponent("-c jit=on")}`, {});
    expect((await own.query("SHOW jit")).rows).toEqual([{ jit: "on" }]);
    await own.end();

    const secret = "Wr0ng-s3cret@pass";
    const wrong = await failure(server.url.replace(server.password, encodeURIComponent(secret)));
    expect(wrong.message).toMatch(
      /^the PostgreSQL server of postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/postgres refused the login \(password authentication failed for user "loopgraph"\): check the user and password$/,
    );
    expect(wrong.exitCode).toBe(2);

    const missing = await failure(server.url.replace(/\/postgres$/, "/nosuchdb"));
    expect(missing.message).toMatch(
      /^postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/nosuchdb: database "nosuchdb" does not exist: create the database \(createdb\) or name another one$/,
    );

    const port = await freePort();
    const gone = await failure(`postgres://loopgraph:${server.password}@127.0.0.1:${port}/postgres`);
    expect(gone.message).toMatch(
      new RegExp(
        `^cannot reach the PostgreSQL server of postgres://loopgraph:\\*\\*\\*@127\\.0\\.0\\.1:${port}/postgres \\(.*ECONNREFUSED.*\\): check that it runs`,
      ),
    );

    for (const error of [wrong, missing, gone]) {
      expect(error.message).not.toContain(server.password);
      expect(error.message).not.toContain("s3cret");
      expect(error.message).not.toContain("\n");
    }
  });
});
