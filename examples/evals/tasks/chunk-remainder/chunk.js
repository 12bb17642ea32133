/** Splits `items` into lists of `size` items; the last one holds what is left. */
export function chunk(items, size) {
  const chunks = [];
  for (let i = 0; i + size <= items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
