import type { EncodedItem } from "../../checkpoint/item-framing.js";
import type { SeqRange } from "../../checkpoint/list-history.js";

/**
 * A chunk of a list channel's item log: items [start_seq, end_seq). `data` is their bytes joined
 * by commas (so that, when every item is JSON, `[` data `]` is the JSON array of the items), `ends`
 * each item's end offset in `data` (u32 LE), `types` their types as a JSON array, or null when
 * every item is JSON.
 */
export interface LogChunk {
  start_seq: number;
  end_seq: number;
  data: Uint8Array;
  ends: Uint8Array;
  types: string | null;
}

/** Each chunk's item ends and types, parsed once (chunks are cached by the store and never change). */
const parsedColumns = new WeakMap<LogChunk, Pick<Segment, "ends" | "types">>();

/** Items [from, to) of one chunk (indexes within the chunk). */
interface Segment {
  readonly chunk: LogChunk;
  readonly ends: Buffer;
  readonly types: readonly string[] | undefined;
  readonly from: number;
  readonly to: number;
}

/**
 * The items of a list version as they lie in the item log's chunks, located but not copied. When
 * every item is JSON, the version's JSON array text is a few slices of the chunks joined (see
 * `jsonArrayText`): the read path makes no object per item.
 */
export class LogItems {
  private encodedItems: EncodedItem[] | undefined;

  private constructor(
    private readonly segments: readonly Segment[],
    readonly length: number,
  ) {}

  /** Locates the items at `ranges` in `chunks` (the chunks holding them, in log order). */
  static locate(channel: string, chunks: readonly LogChunk[], ranges: readonly SeqRange[]): LogItems {
    const segments: Segment[] = [];
    let length = 0;
    for (const [first, last] of ranges) {
      let seq = first;
      let index = firstChunkHolding(chunks, seq);
      while (seq < last) {
        const chunk = chunks[index];
        if (!chunk || chunk.start_seq > seq) throw new Error(`The item log of channel ${channel} has no item ${seq}`);
        let columns = parsedColumns.get(chunk);
        if (!columns) {
          columns = {
            ends: Buffer.from(chunk.ends.buffer, chunk.ends.byteOffset, chunk.ends.byteLength),
            types: chunk.types === null ? undefined : (JSON.parse(chunk.types) as string[]),
          };
          parsedColumns.set(chunk, columns);
        }
        const upTo = Math.min(last, chunk.end_seq);
        segments.push({ chunk, ...columns, from: seq - chunk.start_seq, to: upTo - chunk.start_seq });
        length += upTo - seq;
        seq = upTo;
        index += 1;
      }
    }
    return new LogItems(segments, length);
  }

  /** Whether every item is JSON (then `jsonArrayText` holds them all). */
  get allJson(): boolean {
    return this.segments.every((segment) => segment.types === undefined);
  }

  /** `[item0,item1,…]`: the JSON items' array text, from one slice per chunk segment. */
  jsonArrayText(): string {
    let text = "[";
    this.segments.forEach((segment, i) => {
      const { chunk, ends, from, to } = segment;
      const start = from === 0 ? 0 : ends.readUInt32LE(4 * (from - 1)) + 1;
      const end = ends.readUInt32LE(4 * (to - 1));
      const whole = from === 0 && to === chunk.end_seq - chunk.start_seq;
      text += i > 0 ? "," : "";
      // A whole chunk's text is kept with it (chunks are cached by the store and never change).
      if (whole) text += (chunk as TextCachingChunk).text ??= utf8(chunk.data, start, end);
      else text += utf8(chunk.data, start, end);
    });
    return `${text}]`;
  }

  /** Every item as the serde wrote it (views into the chunks; made once, on first use). */
  encoded(): EncodedItem[] {
    if (!this.encodedItems) {
      const items: EncodedItem[] = [];
      for (const { chunk, ends, types, from, to } of this.segments) {
        const { buffer, byteOffset } = chunk.data;
        for (let i = from; i < to; i += 1) {
          const start = i === 0 ? 0 : ends.readUInt32LE(4 * (i - 1)) + 1;
          const end = ends.readUInt32LE(4 * i);
          items.push({ type: types?.[i] ?? "json", bytes: new Uint8Array(buffer, byteOffset + start, end - start) });
        }
      }
      this.encodedItems = items;
    }
    return this.encodedItems;
  }

  /** Item `i` as the serde wrote it. */
  at(i: number): EncodedItem {
    return this.encoded()[i]!;
  }
}

/** The part of an item log a read needs: [start, end), and its chunks once read. */
interface LogSpan {
  readonly ns: string;
  readonly channel: string;
  readonly start: number;
  readonly end: number;
  chunks?: readonly LogChunk[];
}

/**
 * The item log reads of one read of the store (a page of `list`, say): the ranges it needs of
 * each log are declared first (`want`), then each log's chunks are read once, for all of them
 * (`items`), however many channel versions and pending writes refer to that log.
 */
export class LogReader {
  private readonly spans = new Map<string, LogSpan>();

  /** `readChunks`: the chunks of a log of the thread holding any item in [start, end), in order. */
  constructor(private readonly readChunks: (ns: string, channel: string, start: number, end: number) => readonly LogChunk[]) {}

  /** Declares that `ranges` of the log will be read. */
  want(ns: string, channel: string, ranges: readonly SeqRange[]): void {
    if (ranges.length === 0) return;
    const key = `${ns}\u0000${channel}`;
    const start = Math.min(...ranges.map(([first]) => first));
    const end = Math.max(...ranges.map(([, last]) => last));
    const span = this.spans.get(key);
    if (!span) {
      this.spans.set(key, { ns, channel, start, end });
    } else if (start < span.start || end > span.end) {
      // Beyond what was read: read again, the whole span.
      this.spans.set(key, { ns, channel, start: Math.min(start, span.start), end: Math.max(end, span.end) });
    }
  }

  /** The items at `ranges` of the log (declared or not). */
  items(ns: string, channel: string, ranges: readonly SeqRange[]): LogItems {
    if (ranges.length === 0) return LogItems.locate(channel, [], []);
    this.want(ns, channel, ranges);
    const span = this.spans.get(`${ns}\u0000${channel}`)!;
    span.chunks ??= this.readChunks(ns, channel, span.start, span.end);
    return LogItems.locate(channel, span.chunks, ranges);
  }
}

type TextCachingChunk = LogChunk & { text?: string };

function utf8(data: Uint8Array, start: number, end: number): string {
  return (Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString("utf8", start, end);
}

/** The index of the first chunk whose items reach past `seq` (chunks in order). */
function firstChunkHolding(chunks: readonly { end_seq: number }[], seq: number): number {
  let low = 0;
  let high = chunks.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (chunks[middle]!.end_seq <= seq) low = middle + 1;
    else high = middle;
  }
  return low;
}
