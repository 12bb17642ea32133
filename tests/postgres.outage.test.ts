/**
 * A PostgreSQL store's server going away under a connection loopgraph holds (`pg_ctl stop -m
 * fast` ends every session with 57P01): the error reaches the statement that needs the
 * connection, never the process as an unhandled 'error' event; and such errors are told apart
 * from a bad query wherever they surface.
 */
import { expect, it } from "vitest";
import { inTransaction } from "../src/store/postgres/schema.js";
import { storeStopOutcome } from "../src/engine/outcome.js";
import { LoopgraphError } from "../src/errors.js";
import { openPostgresPool, postgresError } from "../src/store/postgres/connection.js";
import { isConnectionLost, StoreUnreachableError } from "../src/store/postgres/outage.js";
import { describeOnPostgres } from "./helpers/postgres.js";

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeOnPostgres("a PostgreSQL server going away", "the outage tests", (server) => {
  it("a transaction whose connection the server ends (pg_ctl stop -m fast) fails its next statement, as a lost connection; nothing is thrown at the process", async () => {
    const uncaught: unknown[] = [];
    const note = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", note);
    const pool = await openPostgresPool(server().url, {}, 2);
    try {
      const failure = await inTransaction(pool, async (client) => {
        await client.query("SELECT 1");
        server().pgCtl("stop");
        // The server's "terminating connection" arrives while the transaction waits between statements.
        await delay(300);
        await client.query("SELECT 1");
      }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(uncaught).toEqual([]);
      expect(isConnectionLost(failure), String(failure)).toBe(true);
      // The broken connection left the pool: once the server is back, the pool works again.
      server().pgCtl("start");
      expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    } finally {
      process.off("uncaughtException", note);
      server().pgCtl("start");
      await pool.end();
    }
  }, 60_000);
});

it("a lost connection is told from a bad query: by its code (Node's, PostgreSQL's 57P0x and class 08), its driver message, or its cause", () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  for (const code of ["ECONNREFUSED", "ECONNRESET", "57P01", "57P02", "57P03", "08006", "08001"])
    expect(isConnectionLost(coded(code)), code).toBe(true);
  expect(isConnectionLost(new Error("Connection terminated unexpectedly"))).toBe(true);
  expect(isConnectionLost(new Error('node "coder" failed: connect ECONNREFUSED', { cause: coded("ECONNREFUSED") }))).toBe(true);
  expect(isConnectionLost(new AggregateError([coded("ECONNREFUSED")], ""))).toBe(true);
  for (const code of ["42601", "23505", "40001", "SQLITE_BUSY"]) expect(isConnectionLost(coded(code)), code).toBe(false);
  expect(isConnectionLost(new Error('node "coder" failed: scripted model has no response left'))).toBe(false);
  // Outside a run, a server that cannot be reached stays one line, exit 2, the password hidden.
  const unreachable = postgresError("postgres://u:secret@127.0.0.1:1/db", coded("ECONNREFUSED"));
  expect(unreachable).toBeInstanceOf(StoreUnreachableError);
  expect(unreachable.message).toBe(
    "cannot reach the PostgreSQL server of postgres://u:***@127.0.0.1:1/db (ECONNREFUSED): check that it runs and that the host and port are right",
  );
});

it("a node that failed on a lost connection (its cause) stops the run interrupted, 130, saying how to go on; a node's own failure stays a failure", () => {
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  const failed = new LoopgraphError('node "coder" failed: connect ECONNREFUSED 127.0.0.1:5432', undefined, { cause: refused });
  expect(storeStopOutcome(failed, "postgres://u:***@127.0.0.1:5432/db", "t1", {})).toEqual({
    threadId: "t1",
    status: "interrupted",
    exitCode: 130,
    storeLost: true,
    error:
      "the PostgreSQL server of postgres://u:***@127.0.0.1:5432/db went away (connect ECONNREFUSED 127.0.0.1:5432): the run stopped at its last checkpoint; continue it with `loopgraph resume t1` once the server is back",
  });
  expect(storeStopOutcome(new LoopgraphError('node "coder" failed: no response left'), "postgres://u:***@h/db", "t1", {})).toBeUndefined();
});
