/**
 * A Map that forgets its least recently used entries beyond `capacity`: a number of entries, or
 * of weight units when `weigh` gives each value's weight (bytes, say). A value heavier than
 * `maxEntryWeight` is not kept (it would push out most of the others).
 */
export class LruMap<K, V> {
  private readonly entries = new Map<K, { value: V; weight: number }>();
  private weight = 0;
  private readonly weigh: (value: V) => number;
  private readonly maxEntryWeight: number;

  constructor(
    private readonly capacity: number,
    options: { weigh?: (value: V) => number; maxEntryWeight?: number } = {},
  ) {
    this.weigh = options.weigh ?? (() => 1);
    this.maxEntryWeight = options.maxEntryWeight ?? Number.POSITIVE_INFINITY;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.maxEntryWeight) return;
    this.delete(key);
    this.entries.set(key, { value, weight });
    this.weight += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.weight <= this.capacity) break;
      this.entries.delete(oldest);
      this.weight -= entry.weight;
    }
  }

  /** The keys, least recently used first (reading them uses none). */
  keys(): IterableIterator<K> {
    return this.entries.keys();
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.weight -= entry.weight;
  }

  deleteWhere(predicate: (key: K) => boolean): void {
    for (const key of [...this.entries.keys()]) {
      if (predicate(key)) this.delete(key);
    }
  }
}
