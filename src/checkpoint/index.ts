export { SqliteCheckpointSaver } from "./sqlite-saver.js";
export { BUSY_TIMEOUT_MS, busyTimeoutMs, createCheckpointTables } from "./schema.js";
