import { load } from "@langchain/core/load";
import { DeltaSnapshot, JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { EncodedItem } from "./item-framing.js";

/**
 * A serializer that can also work without a promise per value. The saver uses it for list items:
 * a list of N plain JSON items is serialized item by item without N async calls (other items,
 * messages say, take the serde's own `dumpsTyped`), and decoded with one `JSON.parse` of the
 * whole list instead of one per item.
 *
 * `loadsJsonItems` returns, for each JSON text, the revived value, or a promise where reviving
 * needs LangChain's async `load` (serialized LangChain objects, such as messages).
 */
export interface SyncSerializer {
  /**
   * The serde's `dumpsTyped` without a promise, for the values it can write so (bytes, plain JSON);
   * undefined for any other, which the caller gives the serde's own `dumpsTyped`.
   */
  dumpsTypedSync(value: unknown): [string, Uint8Array] | undefined;
  loadsJsonItems(texts: readonly Uint8Array[]): unknown[];
  /**
   * The items of a JSON array's text, revived as `loadsJsonItems` does; `itemText(i)`, when
   * given, is item i's own text (a LangChain object may then be loaded from it, see reviveItem).
   */
  loadsJsonArray(text: string, itemText?: (index: number) => string): unknown[];
}

/** A serializer that offers `syncSerializer()` (a wrapper around one that has it, see redactingSerializer). */
export interface WithSyncSerializer {
  syncSerializer(): SyncSerializer | undefined;
}

/**
 * The synchronous twin of `serde`: built in for LangGraph's own JsonPlusSerializer (its exact
 * class: a subclass may change the format), or what a wrapper offers; none otherwise.
 */
export function syncSerializerOf(serde: SerializerProtocol): SyncSerializer | undefined {
  if ("syncSerializer" in serde && typeof (serde as Partial<WithSyncSerializer>).syncSerializer === "function") {
    return (serde as unknown as WithSyncSerializer).syncSerializer();
  }
  return Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype ? JSON_PLUS_SYNC : undefined;
}

const COMMA = 0x2c;

/** Deeper values take the serializer's own walk (a cycle, say, which it writes as "[Circular]"). */
const PLAIN_JSON_DEPTH = 32;

/**
 * Whether `value` is plain JSON, which JSON.stringify writes as JsonPlusSerializer does: null,
 * booleans, strings, finite numbers, arrays without holes and objects of Object's (or no)
 * prototype, of such values. Its replacer changes nothing there; it rewrites `undefined`, Sets,
 * Maps, dates, errors, bytes, LangChain objects (toJSON), Sends (lg_name), which all fail this.
 */
export function isPlainJson(value: unknown, depth: number): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || depth >= PLAIN_JSON_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!(i in value) || !isPlainJson(value[i], depth + 1)) return false;
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key of Object.keys(value)) {
    if (key === "toJSON" || key === "lg_name" || !isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/** JsonPlusSerializer's synchronous twin: it holds no state, so one serves every instance. */
const JSON_PLUS_SYNC: SyncSerializer = {
  dumpsTypedSync(value) {
    if (value instanceof Uint8Array) return ["bytes", value];
    // Plain JSON needs no replacer walk: JSON.stringify writes the same text.
    if (isPlainJson(value, 0)) return ["json", Buffer.from(JSON.stringify(value), "utf8")];
    return undefined;
  },
  loadsJsonArray(text, itemText) {
    const parsed = JSON.parse(text) as unknown[];
    return itemText ? parsed.map((item, i) => reviveItem(item, () => itemText(i))) : parsed.map(revive);
  },
  loadsJsonItems(texts) {
    if (texts.length === 0) return [];
    let size = 1 + texts.length;
    for (const text of texts) size += text.length;
    const joined = Buffer.allocUnsafe(size);
    let offset = 0;
    joined[offset++] = 0x5b; // [
    texts.forEach((text, i) => {
      if (i > 0) joined[offset++] = COMMA;
      joined.set(text, offset);
      offset += text.length;
    });
    joined[offset++] = 0x5d; // ]
    const parsed = JSON.parse(joined.toString("utf8", 0, offset)) as unknown[];
    return parsed.map((item, i) =>
      reviveItem(item, () => Buffer.from(texts[i]!.buffer, texts[i]!.byteOffset, texts[i]!.byteLength).toString("utf8")),
    );
  },
};

/**
 * An item (a list's, parsed from `text`) revived as `revive` does. A LangChain object (a message)
 * whose text has no "lc" key below its top and no "__proto__" key is loaded from that text: the
 * walk below it would only copy it, and write the copy out again for `load` to parse.
 */
function reviveItem(item: unknown, text: () => string): unknown {
  if (item !== null && typeof item === "object" && !Array.isArray(item)) {
    const record = item as Record<string, unknown>;
    if (record.lc === 1 && record.type === "constructor" && Array.isArray(record.id)) {
      const own = text();
      const first = own.indexOf('"lc"');
      if (first >= 0 && own.indexOf('"lc"', first + 1) < 0 && !own.includes('"__proto__"')) return load(own);
    }
  }
  return revive(item);
}

/**
 * JsonPlusSerializer's reviver, synchronous wherever it can be: values are rebuilt bottom-up the
 * same way, and only serialized LangChain objects (lc: 1) go through the async `load`.
 */
function revive(value: unknown): unknown {
  if (!value || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let pending = false;
    const items = value.map((item) => {
      const revived = revive(item);
      if (revived instanceof Promise) pending = true;
      return revived;
    });
    return pending ? Promise.all(items) : items;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  let pending = false;
  const revivedEntries = entries.map(([key, item]): [string, unknown] => {
    const revived = revive(item);
    if (revived instanceof Promise) pending = true;
    return [key, revived];
  });
  if (!pending) return reviveObject(revivedEntries);
  return Promise.all(revivedEntries.map(async ([key, item]): Promise<[string, unknown]> => [key, await item])).then(reviveObject);
}

function reviveObject(entries: [string, unknown][]): unknown {
  const record: Record<string, unknown> = {};
  for (const [key, item] of entries) record[key] = item;
  if (record.lc === 2 && record.type === "undefined") return undefined;
  if (record.lc === 2 && record.type === "delta_snapshot" && Object.prototype.hasOwnProperty.call(record, "value")) {
    return new DeltaSnapshot(record.value);
  }
  if (record.lc === 2 && record.type === "constructor") return reviveConstructorRecord(record) ?? record;
  if (record.lc === 1 && record.type === "constructor" && Array.isArray(record.id)) return load(JSON.stringify(record));
  return record;
}

/** The closed set of lc: 2 constructor records JsonPlusSerializer writes (copied from it: it is not exported). */
function reviveConstructorRecord(record: Record<string, unknown>): unknown {
  const id = record.id;
  const name = Array.isArray(id) && id.length === 1 ? id[0] : undefined;
  const noMethod = record.method === undefined || record.method === null;
  const args = record.args;
  const singleArray = Array.isArray(args) && args.length === 1 && Array.isArray(args[0]);
  if (name === "Set" && noMethod) return singleArray ? new Set(args[0] as unknown[]) : undefined;
  if (name === "Map" && noMethod) {
    if (!singleArray || !(args[0] as unknown[]).every((entry) => Array.isArray(entry) && entry.length === 2)) return undefined;
    return new Map(args[0] as [unknown, unknown][]);
  }
  if (name === "RegExp" && noMethod) {
    if (!Array.isArray(args) || args.length !== 2 || typeof args[0] !== "string" || typeof args[1] !== "string") return undefined;
    try {
      return new RegExp(args[0], args[1]);
    } catch {
      return undefined;
    }
  }
  if (name === "Error" && noMethod) {
    if (!Array.isArray(args) || args.length !== 1 || typeof args[0] !== "string") return undefined;
    return new Error(args[0]);
  }
  if (name === "Uint8Array" && (noMethod || record.method === "from")) {
    if (!singleArray) return undefined;
    const bytes = args[0] as unknown[];
    if (!bytes.every((item) => typeof item === "number" && Number.isInteger(item) && item >= 0 && item <= 255)) return undefined;
    return new Uint8Array(bytes as number[]);
  }
  return undefined;
}

/**
 * Decodes list items: JSON items with one parse through `sync` when there is one, the rest (and
 * everything without `sync`) through the serde. Resolves to the items in order.
 */
export function decodeItems(
  items: readonly EncodedItem[],
  serde: SerializerProtocol,
  sync: SyncSerializer | undefined,
): unknown[] | Promise<unknown[]> {
  if (!sync) return Promise.all(items.map((item) => serde.loadsTyped(item.type, item.bytes)));
  const values = new Array<unknown>(items.length);
  const jsonIndexes: number[] = [];
  const jsonTexts: Uint8Array[] = [];
  let pending = false;
  items.forEach((item, i) => {
    if (item.type === "json") {
      jsonIndexes.push(i);
      jsonTexts.push(item.bytes);
    } else {
      values[i] = serde.loadsTyped(item.type, item.bytes);
      pending = true;
    }
  });
  const revived = sync.loadsJsonItems(jsonTexts);
  jsonIndexes.forEach((index, j) => {
    const value = revived[j];
    if (value instanceof Promise) pending = true;
    values[index] = value;
  });
  return pending ? Promise.all(values) : values;
}
