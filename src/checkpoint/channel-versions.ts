/**
 * The version after `current`: the next whole number plus a random fraction.
 *
 * Blobs are keyed by channel version, and a run resumed from an older checkpoint (time travel)
 * counts up from that checkpoint's versions again; the fraction keeps the fork's values from
 * colliding with those the original branch stored under the same counter. Versions stay
 * numbers, so the saver remains a plain `BaseCheckpointSaver`.
 */
export function nextChannelVersion(current: number | undefined): number {
  return Math.floor(current ?? 0) + 1 + Math.random();
}
