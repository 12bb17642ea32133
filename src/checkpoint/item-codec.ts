import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { decodeItems, type SyncSerializer } from "./fast-serde.js";
import type { EncodedItem } from "./item-framing.js";

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

  /** Each item's encoding: at once with a synchronous twin, else every item of `values` encoded up front first. */
  encoder(values: readonly unknown[]): ((item: unknown) => EncodedItem) | Promise<(item: unknown) => EncodedItem> {
    return this.sync ? (item) => this.encodeSync(item) : this.encodeAll(values);
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

  private encodeSync(item: unknown): EncodedItem {
    const remembered = isObject(item) ? this.encodings.get(item) : undefined;
    if (remembered) return remembered;
    const [type, bytes] = this.sync!.dumpsTypedSync(item);
    const encoded = { type, bytes };
    this.remember(item, encoded);
    return encoded;
  }

  private async encodeAll(values: readonly unknown[]): Promise<(item: unknown) => EncodedItem> {
    const encodings = new Map<unknown, EncodedItem>();
    await Promise.all(
      values.map(async (item) => {
        const remembered = isObject(item) ? this.encodings.get(item) : undefined;
        if (remembered) {
          encodings.set(item, remembered);
          return;
        }
        const [type, bytes] = await this.serde.dumpsTyped(item);
        const encoded = { type, bytes };
        this.remember(item, encoded);
        encodings.set(item, encoded);
      }),
    );
    return (item) => encodings.get(item)!;
  }
}

export function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}
