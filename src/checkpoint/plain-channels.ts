/**
 * Narrow reads of the saver's tables, for what needs a few small channels of a thread's latest
 * root checkpoint (`status`: `loopState`, `inboxCursor`, `task`; a chat polling its inbox) and must
 * be fast: plain SQL and `JSON.parse`, no serializer, no LangChain module, and not the whole state
 * (a long thread's messages take a tenth of a second to decode). Only channels stored as one plain
 * JSON value can be read so; any other (a list's history, a serializer's own type) throws: read it
 * through the saver.
 */
import type Database from "better-sqlite3";

/** The id of the thread's latest root checkpoint; undefined before its first. */
export function latestCheckpointId(db: Database.Database, threadId: string): string | undefined {
  return db
    .prepare<[string], string>(`SELECT checkpoint_id FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`)
    .pluck()
    .get(threadId);
}

/** Channel values of the thread's latest root checkpoint (those it has of `channels`); `{}` before its first checkpoint. */
export function latestPlainChannels(db: Database.Database, threadId: string, channels: readonly string[]): Record<string, unknown> {
  return db
    .transaction(() => {
      const row = db
        .prepare<[string], { channel_versions: string }>(
          `SELECT channel_versions FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`,
        )
        .get(threadId);
      if (!row) return {};
      const versions = JSON.parse(row.channel_versions) as Record<string, string | number>;
      const blob = db.prepare<[string, string, string], { kind: string; type: string | null; data: Uint8Array | null }>(
        `SELECT kind, type, data FROM loopgraph_checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = '' AND channel = ? AND version = ?`,
      );
      const values: Record<string, unknown> = {};
      for (const channel of channels) {
        const version = versions[channel];
        if (version === undefined) continue;
        const stored = blob.get(threadId, channel, String(version));
        if (!stored || stored.kind === "empty") continue;
        if (stored.kind !== "value" || stored.type !== "json" || stored.data === null) {
          throw new Error(`channel "${channel}" of thread "${threadId}" is not stored as a plain JSON value (${stored.kind}, ${stored.type}): read it through the saver`);
        }
        values[channel] = JSON.parse(Buffer.from(stored.data).toString("utf8"));
      }
      return values;
    })
    .deferred();
}
