/**
 * Narrow reads of a thread's checkpoints without decoding any (SQLite: SqliteCheckpointQueries;
 * PostgreSQL: PostgresCheckpointQueries): ids and parent links in every namespace (root graph and
 * subgraphs), and the few small channels stored as plain JSON that `status` and a run's bookkeeping
 * read. No LangChain module is loaded.
 */
export interface CheckpointQueries {
  /** The id of the thread's latest root checkpoint; undefined before its first. */
  latestCheckpointId(threadId: string): Promise<string | undefined>;
  /**
   * Channel values (those it has of `channels`) of a root checkpoint of the thread, its latest when
   * no id is given; `{}` when there is no such checkpoint. Only channels stored as one plain JSON
   * value can be read so; any other throws: read it through the saver.
   */
  plainChannels(threadId: string, channels: readonly string[], checkpointId?: string): Promise<Record<string, unknown>>;
  /** The thread's checkpoints whose id starts with `prefix`, in any namespace. */
  checkpointsWithPrefix(threadId: string, prefix: string): Promise<CheckpointAddress[]>;
  /** Up to `limit` ids of the thread's root checkpoints that start with `prefix`, in order. */
  rootCheckpointIdsWithPrefix(threadId: string, prefix: string, limit: number): Promise<string[]>;
  /** How many root checkpoints each thread has (threads without any are absent). */
  rootCheckpointCounts(): Promise<Map<string, number>>;
  /** Every checkpoint id of the thread, any namespace. */
  allCheckpointIds(threadId: string): Promise<string[]>;
  /** Checkpoint id → its parent's id (undefined for the first) in one namespace of the thread. */
  parentLinks(threadId: string, ns: string): Promise<Map<string, string | undefined>>;
}

export interface CheckpointAddress {
  ns: string;
  id: string;
}
