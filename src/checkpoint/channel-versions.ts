import { randomInt } from "node:crypto";

/** Random digits after the point: a fork's version meets the original branch's with odds of 1 in 10^9. */
const FRACTION_DIGITS = 9;

/**
 * The version after `current`: the next whole number plus a random fraction of FRACTION_DIGITS
 * decimal digits (`12.480193557`).
 *
 * Blobs are keyed by channel version, and a run resumed from an older checkpoint (time travel)
 * counts up from that checkpoint's versions again; the fraction keeps the fork's values from
 * colliding with those the original branch stored under the same counter. Versions stay
 * numbers, so the saver remains a plain `BaseCheckpointSaver`. The version is parsed from its
 * decimal text, so it prints as that text again: every checkpoint holds several versions (its
 * channel versions and the versions its nodes have seen), and a fraction of `Math.random()`
 * printed whole takes 16 or 17 digits.
 */
export function nextChannelVersion(current: number | undefined): number {
  const fraction = String(randomInt(1, 10 ** FRACTION_DIGITS)).padStart(FRACTION_DIGITS, "0");
  return Number(`${Math.floor(current ?? 0) + 1}.${fraction}`);
}
