/**
 * LangGraph's checkpoint conformance suite (`validate` and `deltaChannelHistoryTests`) against the
 * PostgreSQL saver, on a throwaway server (tests/helpers/postgres.ts): a database of its own per
 * checkpointer, since several suites reuse fixed thread ids. Skipped, saying why, where
 * PostgreSQL cannot start, except under LOOPGRAPH_REQUIRE_POSTGRES=1 (CI).
 */
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import pg from "pg";
import { describe, it } from "vitest";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { startPostgres, type PostgresServer } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";

let server: PostgresServer;
let databases = 0;

const initializer: CheckpointSaverTestInitializer<PostgresCheckpointSaver> = {
  checkpointerName: "loopgraph PostgresCheckpointSaver",
  async beforeAll() {
    server = await startPostgres();
  },
  afterAll() {
    server?.stop();
  },
  async createCheckpointer() {
    databases += 1;
    const saver = new PostgresCheckpointSaver(new pg.Pool({ connectionString: server.createDatabase(`conformance_${databases}`), max: 4 }));
    await saver.setup();
    return saver;
  },
  async destroyCheckpointer(checkpointer) {
    await checkpointer.pool.end();
  },
};

if (lacks("postgres", "the PostgreSQL saver's conformance tests")) {
  describe.skip("the PostgreSQL saver's conformance", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
