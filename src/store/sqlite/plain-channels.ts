/**
 * Narrow reads of the saver's tables, for what needs a few small channels of a thread's root
 * checkpoint (`status`: `loopState`, `inboxCursor`, `task`; a chat polling its inbox; the visit
 * counts a run's outcome compares with the parent's) and must be fast: plain SQL and
 * `JSON.parse`, no serializer, no LangChain module, and not the whole state
 * (a long thread's messages take a tenth of a second to decode). Only channels stored as one plain
 * JSON value can be read so; any other (a list's history, a serializer's own type) throws: read it
 * through the saver.
 */
import type { CheckpointStore } from "./checkpoint-store.js";

/** The thread's root namespace. */
const root = (threadId: string) => ({ threadId, ns: "" });

/** The id of the thread's latest root checkpoint; undefined before its first. */
export function latestCheckpointId(store: CheckpointStore, threadId: string): string | undefined {
  return store.checkpoint(root(threadId))?.checkpoint_id;
}

/** Channel values (those it has of `channels`) of a root checkpoint of the thread, its latest when no id is given; `{}` when there is no such checkpoint. */
export function plainChannels(
  store: CheckpointStore,
  threadId: string,
  channels: readonly string[],
  checkpointId?: string,
): Record<string, unknown> {
  return store.readTransaction(() => {
    const row = store.checkpoint(root(threadId), checkpointId);
    if (!row) return {};
    const versions = JSON.parse(row.channel_versions) as Record<string, string | number>;
    const values: Record<string, unknown> = {};
    for (const channel of channels) {
      const version = versions[channel];
      if (version === undefined) continue;
      const record = store.blob(root(threadId), channel, String(version))?.record;
      if (!record || record.kind === "empty") continue;
      if (record.kind !== "value" || record.type !== "json") {
        throw new Error(
          `channel "${channel}" of thread "${threadId}" is not stored as a plain JSON value (${record.kind}): read it through the saver`,
        );
      }
      values[channel] = JSON.parse(Buffer.from(record.data).toString("utf8"));
    }
    return values;
  });
}
