/** Lists of named declarations in order of precedence, lowest first: a later one replaces an earlier of the same name. */
export function mergeByName<T extends { name: string }>(...lists: readonly (readonly T[])[]): T[] {
  const byName = new Map<string, T>();
  for (const list of lists) for (const item of list) byName.set(item.name, item);
  return [...byName.values()];
}
