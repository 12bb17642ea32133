export {
  SETTLED_AT_ONCE,
  SqliteCheckpointSaver,
  type CheckpointHistoryEntry,
  type DecodedChannel,
  type KnownList,
  type StoredChannel,
} from "./sqlite-saver.js";
export type { EncodedItem } from "./item-framing.js";
export { BUSY_TIMEOUT_MS, busyTimeoutMs, createCheckpointTables } from "./schema.js";
export type { SeqRange } from "./list-history.js";
export { PostgresCheckpointSaver } from "./postgres-saver.js";
export { CHECKPOINT_MIGRATIONS, migrate, SchemaTooNewError, type Migration } from "./postgres-schema.js";
