import { isDeepStrictEqual } from "node:util";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SyncSerializer } from "./fast-serde.js";
import type { DecodedChannel } from "./history-reader.js";

/**
 * Small plain JSON values are decoded both ways, to check the fast path: the first CHECKS of
 * them, then one in CHECK_EVERY. A short process (an `inspect`) pays the serde's walk for the
 * first few only.
 */
const CHECKED_BELOW = 512;
const CHECKS = 16;
const CHECK_EVERY = 64;
const textDecoder = new TextDecoder();

/**
 * Decodes a saver's stored values as its serde's `loadsTyped` does, JSON with no LangChain object
 * in it (no "lc" key) by one `JSON.parse`, which gives what JsonPlusSerializer's reviver gives in
 * one native call instead of one promise per node. Only for a serde that is LangGraph's own (or a
 * wrapper offering its synchronous twin, see fast-serde.ts); small values are decoded both ways
 * now and then and compared, and any difference turns the fast path off for good. Both savers
 * read their values through one of these.
 */
export class PlainJsonReader {
  private off: boolean;
  private small = 0;

  constructor(
    private readonly serde: SerializerProtocol,
    sync: SyncSerializer | undefined,
  ) {
    this.off = sync === undefined;
  }

  /** A stored value, with `plainJson` set where `JSON.parse` made it (nothing in it needs converting). */
  async decode(type: string, data: Uint8Array): Promise<DecodedChannel> {
    const value = this.parsed(type, data);
    if (value === NOT_PLAIN) return { value: await this.serde.loadsTyped(type, data) };
    const small = data.length <= CHECKED_BELOW ? ++this.small : 0;
    if (!(small > 0 && (small <= CHECKS || small % CHECK_EVERY === 0))) return { value, plainJson: true };
    const decoded: unknown = await this.serde.loadsTyped(type, data);
    if (!isDeepStrictEqual(decoded, value)) this.off = true;
    return { value: decoded };
  }

  /** A stored value, as `decode` gives it. */
  async loads(type: string, data: Uint8Array): Promise<unknown> {
    return (await this.decode(type, data)).value;
  }

  private parsed(type: string, data: Uint8Array): unknown {
    if (type !== "json" || this.off) return NOT_PLAIN;
    const text = textDecoder.decode(data);
    // `"__proto__"` as a key would set the prototype in the reviver, not a property.
    if (text.includes('"lc"') || text.includes('"__proto__"')) return NOT_PLAIN;
    return JSON.parse(text) as unknown;
  }
}

const NOT_PLAIN = Symbol("not plain JSON");
