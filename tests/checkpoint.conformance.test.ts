import { join } from "node:path";
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { createTempDir, type TempDir } from "./helpers/workspace.js";

let directory: TempDir;
let databases = 0;

const initializer: CheckpointSaverTestInitializer<SqliteCheckpointSaver> = {
  checkpointerName: "loopgraph SqliteCheckpointSaver",
  beforeAll() {
    directory = createTempDir("loopgraph-conformance-");
  },
  afterAll() {
    directory.remove();
  },
  // A fresh file per checkpointer: several suites reuse fixed thread ids such as "thread-1".
  createCheckpointer() {
    databases += 1;
    return new SqliteCheckpointSaver(join(directory.path, `conformance-${databases}.db`));
  },
  destroyCheckpointer(checkpointer) {
    checkpointer.close();
  },
};

validate(initializer);
deltaChannelHistoryTests(initializer);
