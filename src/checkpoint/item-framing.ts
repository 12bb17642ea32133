/** One list item as the saver's serde wrote it (`dumpsTyped` output). */
export interface EncodedItem {
  readonly type: string;
  readonly bytes: Uint8Array;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

// Layout, per item: u32 LE byte count, u8 type length, type (UTF-8), bytes.
const HEADER_BYTES = 5;

/** Packs items into one blob, so a whole snapshot or delta is a single row. */
export function frameItems(items: readonly EncodedItem[]): Uint8Array {
  const types = items.map((item) => textEncoder.encode(item.type));
  let size = 0;
  items.forEach((item, i) => {
    size += HEADER_BYTES + types[i]!.length + item.bytes.length;
  });
  const blob = new Uint8Array(size);
  const view = new DataView(blob.buffer);
  let offset = 0;
  items.forEach((item, i) => {
    const type = types[i]!;
    if (type.length > 0xff) throw new Error(`Serialization type name too long: ${item.type}`);
    view.setUint32(offset, item.bytes.length, true);
    view.setUint8(offset + 4, type.length);
    offset += HEADER_BYTES;
    blob.set(type, offset);
    offset += type.length;
    blob.set(item.bytes, offset);
    offset += item.bytes.length;
  });
  return blob;
}

/** Inverse of {@link frameItems}; item bytes are views into `blob`, not copies. */
export function unframeItems(blob: Uint8Array): EncodedItem[] {
  const { buffer, byteOffset } = blob;
  const view = new DataView(buffer, byteOffset, blob.byteLength);
  const items: EncodedItem[] = [];
  let offset = 0;
  while (offset < blob.length) {
    const byteCount = view.getUint32(offset, true);
    const typeLength = view.getUint8(offset + 4);
    offset += HEADER_BYTES;
    const type = isJsonType(blob, offset, typeLength) ? "json" : textDecoder.decode(blob.subarray(offset, offset + typeLength));
    offset += typeLength;
    // A plain Uint8Array view: Buffer.subarray (the blob is a Buffer when read from SQLite) costs several times more.
    items.push({ type, bytes: new Uint8Array(buffer, byteOffset + offset, byteCount) });
    offset += byteCount;
  }
  return items;
}

/** Whether the type at `offset` is "json", nearly every item's: no decoder call for it. */
function isJsonType(blob: Uint8Array, offset: number, length: number): boolean {
  return length === 4 && blob[offset] === 0x6a && blob[offset + 1] === 0x73 && blob[offset + 2] === 0x6f && blob[offset + 3] === 0x6e;
}

export function sameEncoding(a: EncodedItem, b: EncodedItem): boolean {
  return a === b || (a.type === b.type && Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.length).equals(b.bytes));
}
