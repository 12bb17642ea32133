/** "Did you mean" suggestions for misspelled names in graph files. */

/** The candidate closest to `name` by edit distance, if it is close enough to be a likely typo. */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const allowed = Math.max(1, Math.floor(name.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

/**
 * Edit distance counting insertions, deletions, substitutions and swaps of adjacent letters
 * (optimal string alignment). `d[i][j]` is the distance between the first i letters of `a`
 * and the first j letters of `b`.
 */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i + j));
  const at = (i: number, j: number): number => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const substitution = at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1);
      const swap = i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1] ? at(i - 2, j - 2) + 1 : Infinity;
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, substitution, swap);
    }
  }
  return at(a.length, b.length);
}

/** `unknown node "critque": did you mean "critique"?`, or the list of valid names when none is close. */
export function unknownName(noun: string, name: string, candidates: readonly string[], where = ""): string {
  const suggestion = closestName(name, candidates);
  const subject = `unknown ${noun} "${name}"${where && ` in ${where}`}`;
  return suggestion === undefined ? `${subject}: use one of ${candidates.join(", ")}` : `${subject}: did you mean "${suggestion}"?`;
}
