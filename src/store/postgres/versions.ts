/**
 * A checkpoint's channel versions as the PostgreSQL saver stores them: whole (a "base"), or as
 * the entries that differ from a base checkpoint of the same thread namespace
 * (`versions_base` names it). A state of many channels changes a few of them a step: the
 * versions of fifty channels take about 1 KB a checkpoint whole, the few that changed since the
 * base a fraction of that. A base is always stored whole, so a read joins one row, never a chain.
 */
import type { ChannelVersions } from "@langchain/langgraph-checkpoint";

/** A checkpoint whose versions are stored whole: what later checkpoints' versions are stored against. */
export interface VersionsBase {
  readonly checkpointId: string;
  readonly versions: ChannelVersions;
}

/** How a checkpoint's versions are stored: `text` against the checkpoint `base`, or whole (`base` null). */
export interface StoredVersions {
  readonly text: string;
  readonly base: string | null;
}

/** A delta is stored while it names at most this share of the channels: else the versions are stored whole, as the next base. */
const MAX_DELTA_SHARE = 0.5;

/**
 * How to store `versions` given the thread namespace's current base: the entries that differ from
 * it, when they are few and `{...base, ...delta}` gives the same channels in the same order
 * (LangGraph keeps a channel's place and appends new ones); else whole.
 */
export function storedVersions(versions: ChannelVersions, base: VersionsBase | undefined): StoredVersions {
  const whole = { text: JSON.stringify(versions), base: null };
  if (!base) return whole;
  const keys = Object.keys(versions);
  const baseKeys = Object.keys(base.versions);
  if (baseKeys.length > keys.length || baseKeys.some((key, i) => keys[i] !== key)) return whole;
  const delta: ChannelVersions = {};
  let changed = 0;
  for (const key of keys) {
    if (key in base.versions && String(base.versions[key]) === String(versions[key])) continue;
    delta[key] = versions[key]!;
    changed += 1;
  }
  if (changed > keys.length * MAX_DELTA_SHARE) return whole;
  return { text: JSON.stringify(delta), base: base.checkpointId };
}

/** A checkpoint's versions from its stored column and, when it was stored against a base, the base's. */
export function readVersions(text: string, baseText: string | null): ChannelVersions {
  const own = JSON.parse(text) as ChannelVersions;
  return baseText === null ? own : { ...(JSON.parse(baseText) as ChannelVersions), ...own };
}

/**
 * SQL: given a CTE `cp` of checkpoint rows with their base's versions as `base_versions`, the CTE
 * `cv(channel, version)` of each channel's version (the row's own entry, else its base's).
 * For one checkpoint.
 */
export const CHANNEL_VERSIONS_CTE = `cv AS (
  SELECT DISTINCT ON (channel) channel, version FROM (
    SELECT e.key AS channel, e.value AS version, 0 AS rank FROM cp CROSS JOIN LATERAL json_each_text(cp.channel_versions::json) AS e
    UNION ALL
    SELECT e.key, e.value, 1 FROM cp CROSS JOIN LATERAL json_each_text(cp.base_versions::json) AS e
  ) v ORDER BY channel, rank
)`;

/** SQL: the join that gives a checkpoint row `c` its base's versions (`b.channel_versions`, null when stored whole). */
export const BASE_JOIN = `LEFT JOIN loopgraph_checkpoints b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.checkpoint_id = c.versions_base`;
