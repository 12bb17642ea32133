/**
 * A checkpoint's channel versions as the PostgreSQL saver stores them: whole, or as the entries
 * that differ from those of an earlier checkpoint of the same thread namespace (`versions_base`
 * names it: the last one the saver wrote there, the parent typically), whose own may be stored
 * so in turn, up to MAX_CHAIN links from one stored whole. A state of many channels changes a
 * few of them a step: the versions of fifty channels take about 1 KB a checkpoint whole, those
 * that changed since the parent a tenth of that. A read follows the chain in one statement
 * (`versionsChain`), a few rows by their key.
 */
import type { ChannelVersions } from "@langchain/langgraph-checkpoint";

/** A checkpoint the next one's versions may be stored against: its versions whole, and its links to one stored whole. */
export interface VersionsBase {
  readonly checkpointId: string;
  readonly versions: ChannelVersions;
  readonly depth: number;
}

/** How a checkpoint's versions are stored: `text` against the checkpoint `base`, or whole (`base` null). */
export interface StoredVersions {
  readonly text: string;
  readonly base: string | null;
}

/**
 * The `versions_base` of a checkpoint stored against its parent (most are: the saver's last
 * checkpoint of the thread namespace is the next one's parent), in a byte instead of the
 * parent's id again (schema 4; no checkpoint id is empty).
 */
const PARENT_BASE = "";
/** A delta is stored while it names at most this share of the channels: else the versions are stored whole. */
const MAX_DELTA_SHARE = 0.5;
/** Links from a checkpoint to the one stored whole its versions are read from, at most. */
export const MAX_CHAIN = 24;

/**
 * How to store `versions` given the thread namespace's last checkpoint written: the entries that
 * differ from it, when they are few, its chain is short enough, and `{...base, ...delta}` gives
 * the same channels in the same order (LangGraph keeps a channel's place and appends new ones);
 * else whole.
 */
export function storedVersions(versions: ChannelVersions, base: VersionsBase | undefined): StoredVersions {
  const whole = { text: versionsText(versions), base: null };
  if (!base || base.depth >= MAX_CHAIN) return whole;
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
  return { text: versionsText(delta), base: base.checkpointId };
}

/**
 * Versions as stored: the JSON object, or (schema 4) when shorter the channels in runs of the
 * same version, `[[version, channel, ...], ...]` in the object's order. LangGraph gives every
 * channel a step updates the same version: a step's entries take its version once.
 */
export function versionsText(versions: ChannelVersions): string {
  const runs: [number | string, ...string[]][] = [];
  for (const [channel, version] of Object.entries(versions)) {
    const run = runs[runs.length - 1];
    if (run && run[0] === version) run.push(channel);
    else runs.push([version, channel]);
  }
  const object = JSON.stringify(versions);
  const grouped = JSON.stringify(runs);
  return grouped.length < object.length ? grouped : object;
}

/** Versions as `versionsText` stored them. */
function parsedVersions(text: string): ChannelVersions {
  const parsed = JSON.parse(text) as ChannelVersions | [number | string, ...string[]][];
  if (!Array.isArray(parsed)) return parsed;
  const versions: ChannelVersions = {};
  for (const [version, ...channels] of parsed) for (const channel of channels) versions[channel] = version;
  return versions;
}

/** A checkpoint's versions from its chain as `versionsChain` gives it (a JSON array of the stored texts, the whole one first). */
export function readVersions(chain: string): ChannelVersions {
  const versions: ChannelVersions = {};
  for (const text of JSON.parse(chain) as string[]) Object.assign(versions, parsedVersions(text));
  return versions;
}

/**
 * SQL: the versions chain of the checkpoint row `row` (a scalar subquery: a JSON array of the
 * stored texts, the whole one first), its links looked up in the thread namespace given as SQL
 * expressions. Each link is one primary-key lookup (a LATERAL with LIMIT 1, which the planner
 * cannot fold into a join): once a small table is analyzed, a plain join made every link a scan
 * of the whole namespace (a 201-checkpoint history's first page: 96 ms instead of 4).
 */
export function versionsChain(row: string, threadId: string, ns: string): string {
  return `(WITH RECURSIVE chain AS (
    SELECT ${row}.channel_versions, ${baseOf(row)} AS base, 0 AS depth
    UNION ALL
    SELECT l.channel_versions, ${baseOf("l")}, chain.depth + 1 FROM chain CROSS JOIN LATERAL (
      SELECT l.channel_versions, l.versions_base, l.parent_checkpoint_id FROM loopgraph_checkpoints l
      WHERE l.thread_id = ${threadId} AND l.checkpoint_ns = ${ns} AND l.checkpoint_id = chain.base LIMIT 1) l
  ) SELECT json_agg(channel_versions ORDER BY depth DESC)::text FROM chain)`;
}

/** SQL: the id of the checkpoint the versions of checkpoint row `row` are stored against (PARENT_BASE: its parent), or null. */
function baseOf(row: string): string {
  return `CASE WHEN ${row}.versions_base = '${PARENT_BASE}' THEN ${row}.parent_checkpoint_id ELSE ${row}.versions_base END`;
}

/**
 * SQL: the `versions_base` to store for the base id `base` of a checkpoint whose parent is
 * `parent` (SQL expressions of text): PARENT_BASE when they are the same checkpoint.
 */
export function storedBase(base: string, parent: string): string {
  return `CASE WHEN ${base} = ${parent} THEN '${PARENT_BASE}' ELSE ${base} END`;
}

/**
 * SQL: given a CTE `cp` of one checkpoint row with its chain as `version_chain`, the CTE
 * `cv(channel, version)` of each channel's version (the nearest link's entry).
 */
export const CHANNEL_VERSIONS_CTE = `cv AS (
  SELECT DISTINCT ON (e.channel) e.channel, e.version
  FROM cp CROSS JOIN LATERAL json_array_elements_text(cp.version_chain::json) WITH ORDINALITY AS l(versions, link)
  CROSS JOIN LATERAL (
    SELECT o.key AS channel, o.value AS version
      FROM json_each_text(CASE WHEN json_typeof(l.versions::json) = 'object' THEN l.versions::json END) AS o
    UNION ALL
    SELECT c.channel, r.run->>0
      FROM json_array_elements(CASE WHEN json_typeof(l.versions::json) = 'array' THEN l.versions::json END) AS r(run)
      CROSS JOIN LATERAL json_array_elements_text(r.run) WITH ORDINALITY AS c(channel, n)
      WHERE c.n > 1
  ) e
  ORDER BY e.channel, l.link DESC
)`;
