import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";

let directory: string;
let databases = 0;

const initializer: CheckpointSaverTestInitializer<SqliteCheckpointSaver> = {
  checkpointerName: "loopgraph SqliteCheckpointSaver",
  beforeAll() {
    directory = mkdtempSync(join(tmpdir(), "loopgraph-conformance-"));
  },
  afterAll() {
    rmSync(directory, { recursive: true, force: true });
  },
  // A fresh file per checkpointer: several suites reuse fixed thread ids such as "thread-1".
  createCheckpointer() {
    databases += 1;
    return new SqliteCheckpointSaver(join(directory, `conformance-${databases}.db`));
  },
  destroyCheckpointer(checkpointer) {
    checkpointer.close();
  },
};

validate(initializer);
deltaChannelHistoryTests(initializer);
