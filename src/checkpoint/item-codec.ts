import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { decodeItems, type SyncSerializer } from "./fast-serde.js";
import type { EncodedItem } from "./item-framing.js";
import { identicalPrefix, sharedPrefix, type StoredList } from "./list-history.js";

/**
 * List items to and from their stored form, for the savers. The encoding of an object item is
 * remembered (written or read), so the unchanged part of a list is neither re-serialized nor
 * compared item by item again: items are treated as immutable once checkpointed, as LangGraph's
 * reducers replace items (messages by id) and never edit them.
 */
export class ItemCodec {
  private readonly encodings = new WeakMap<object, EncodedItem>();

  constructor(
    private readonly serde: SerializerProtocol,
    /** The serde's synchronous twin, when it has one (see fast-serde.ts). */
    readonly sync: SyncSerializer | undefined,
  ) {}

  /**
   * A new version of a list against the version written before (`previous`): how many leading
   * items they share (see `sharedPrefix`), the encodings of those, and an encoder of the items
   * after the ones `previous` holds as they are (those are neither encoded nor looked up: a step
   * appending to a long list encodes its new items only).
   */
  async diff(
    values: readonly unknown[],
    previous: StoredList | undefined,
  ): Promise<{ shared: number; encoded: EncodedItem[]; encode: (item: unknown) => EncodedItem }> {
    const identical = identicalPrefix(values, previous);
    const encode = await this.encoder(values, identical);
    return { ...sharedPrefix(values, previous, encode, identical), encode };
  }

  /**
   * The encoding of each item of `values` from index `from` on: encoded up front, by the
   * synchronous twin where it can (plain JSON), else by the serde's own `dumpsTyped`.
   * Remembered encodings are reused.
   */
  private async encoder(values: readonly unknown[], from: number): Promise<(item: unknown) => EncodedItem> {
    const encodings = new Map<unknown, EncodedItem>();
    const slow = new Set<unknown>();
    for (let i = from; i < values.length; i += 1) {
      const item = values[i];
      if (this.rememberedOf(item) || encodings.has(item) || slow.has(item)) continue;
      const dumped = this.sync?.dumpsTypedSync(item);
      if (dumped) this.keep(encodings, item, { type: dumped[0], bytes: dumped[1] });
      else slow.add(item);
    }
    await Promise.all(
      [...slow].map(async (item) => {
        const [type, bytes] = await this.serde.dumpsTyped(item);
        this.keep(encodings, item, { type, bytes });
      }),
    );
    return (item) => this.rememberedOf(item) ?? encodings.get(item)!;
  }

  remember(item: unknown, encoded: EncodedItem): void {
    if (isObject(item)) this.encodings.set(item, encoded);
  }

  /** Items decoded (JSON ones in one parse where the serde allows), their encodings remembered. */
  decode(encoded: readonly EncodedItem[]): unknown[] | Promise<unknown[]> {
    const remember = (items: unknown[]): unknown[] => {
      items.forEach((item, i) => this.remember(item, encoded[i]!));
      return items;
    };
    const items = decodeItems(encoded, this.serde, this.sync);
    return items instanceof Promise ? items.then(remember) : remember(items);
  }

  private rememberedOf(item: unknown): EncodedItem | undefined {
    return isObject(item) ? this.encodings.get(item) : undefined;
  }

  /** An encoding made for this call, remembered for later ones when the item is an object. */
  private keep(encodings: Map<unknown, EncodedItem>, item: unknown, encoded: EncodedItem): void {
    encodings.set(item, encoded);
    this.remember(item, encoded);
  }
}

export function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}
