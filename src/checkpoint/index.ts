export { SqliteCheckpointSaver } from "./sqlite-saver.js";
export { BUSY_TIMEOUT_MS, createCheckpointTables } from "./schema.js";
