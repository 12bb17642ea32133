/**
 * Lists the config files set (MCP servers, hooks) travel to the commands that use them as JSON in
 * an environment variable (see src/config/settings.ts): read back here.
 */

/** The list in `variable` (empty when unset); a value that is not such a list is an error naming the variable and what `key:` in a config file is for. */
export function jsonListVariable<T>(
  env: NodeJS.ProcessEnv,
  variable: string,
  key: string,
  isItem: (item: Record<string, unknown>) => boolean,
): T[] {
  const text = env[variable]?.trim();
  if (!text) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    !parsed.every((item) => item !== null && typeof item === "object" && isItem(item as Record<string, unknown>))
  ) {
    throw new Error(`${variable} must be the JSON list loopgraph writes from ${key}: (declare them in your config file instead)`);
  }
  return parsed as T[];
}

/** Lists of named declarations in order of precedence, lowest first: a later one replaces an earlier of the same name. */
export function mergeByName<T extends { name: string }>(...lists: readonly (readonly T[])[]): T[] {
  const byName = new Map<string, T>();
  for (const list of lists) for (const item of list) byName.set(item.name, item);
  return [...byName.values()];
}
