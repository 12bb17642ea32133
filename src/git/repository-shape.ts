/** What makes a folder look like a git repository to git, whatever its name. */

/** The file a bare repository has at its top; removing it makes the folder no repository to git (it looks for HEAD first). */
export const BARE_REPOSITORY_MARK = "HEAD";

/** What git looks for in a folder it may take as a repository: HEAD, with objects/ and refs/ there or in the folder a `commondir` file names. */
export function looksLikeBareRepository(names: ReadonlySet<string>): boolean {
  return names.has(BARE_REPOSITORY_MARK) && (names.has("commondir") || (names.has("objects") && names.has("refs")));
}
