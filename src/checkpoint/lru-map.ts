/** A Map that forgets its least recently used entries beyond `capacity`. */
export class LruMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
    }
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  deleteWhere(predicate: (key: K) => boolean): void {
    for (const key of [...this.entries.keys()]) {
      if (predicate(key)) this.entries.delete(key);
    }
  }
}
