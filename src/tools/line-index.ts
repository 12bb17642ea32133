/**
 * Where lines start in large files read_file has read, so that a window far into a file is read
 * from a nearby line instead of from the start. Kept in memory for the process, bounded, one
 * index per file (device and inode), for one version of it: its size, modification and change
 * times (the change time is set by the kernel on every write and cannot be set back). An index
 * is only kept for a file whose change time is older than TIMESTAMP_GRANULARITY_MS when the
 * reading starts: a file changed again within the same tick of the file system's clock keeps
 * its stamps, and would otherwise be read with a stale index. Each use also checks that the byte
 * before the line it starts at is a newline.
 */
import type { Stats } from "node:fs";

/** Every LINE_STEP-th line's start is kept. */
export const LINE_STEP = 1024;
/** Files indexed at once; the least recently used is dropped first. */
const MAX_FILES = 16;
/** Line starts kept across all files (8 bytes each). */
const MAX_STARTS = 1 << 20;
/** The coarsest clock of a file system loopgraph may meet (FAT: 2 s). */
const TIMESTAMP_GRANULARITY_MS = 2_000;

type FileStats = Pick<Stats, "dev" | "ino" | "size" | "mtimeMs" | "ctimeMs">;

interface Index {
  version: string;
  /** starts[k]: the byte offset where line k * LINE_STEP + 1 starts (starts[0] = 0). */
  starts: number[];
}

/** A line and the byte offset where it starts. */
export interface LineStart {
  line: number;
  byte: number;
}

export interface LineIndexOptions {
  /** The clock the change time is compared with (tests move it). */
  now?: () => number;
}

export class LineIndexes {
  private readonly indexes = new Map<string, Index>();
  private readonly now: () => number;

  constructor(options: LineIndexOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** The indexed line start nearest before `line` in this version of the file (line 1 when none). */
  nearest(stats: FileStats, line: number): LineStart {
    const index = this.current(stats);
    if (!index) return { line: 1, byte: 0 };
    // Used: most recently.
    this.indexes.delete(identity(stats));
    this.indexes.set(identity(stats), index);
    const k = Math.min(Math.floor((line - 1) / LINE_STEP), index.starts.length - 1);
    return { line: k * LINE_STEP + 1, byte: index.starts[k]! };
  }

  /** Forgets the file's index (a check of it failed). */
  forget(stats: FileStats): void {
    this.indexes.delete(identity(stats));
  }

  /**
   * A recorder for a reading of this version of the file, to be told each line start it passes
   * (line number, byte offset); undefined when the file changed too recently to be indexed.
   */
  recorder(stats: FileStats): ((line: number, byte: number) => void) | undefined {
    if (this.now() - stats.ctimeMs < TIMESTAMP_GRANULARITY_MS) return undefined;
    const key = identity(stats);
    let index = this.current(stats);
    if (!index) {
      index = { version: versionOf(stats), starts: [0] };
      this.indexes.delete(key);
      this.indexes.set(key, index);
      this.evict();
    }
    const { starts } = index;
    return (line, byte) => {
      if ((line - 1) % LINE_STEP !== 0) return;
      const k = (line - 1) / LINE_STEP;
      if (k === starts.length && this.total() < MAX_STARTS) starts.push(byte);
    };
  }

  private current(stats: FileStats): Index | undefined {
    const index = this.indexes.get(identity(stats));
    return index?.version === versionOf(stats) ? index : undefined;
  }

  private total(): number {
    let total = 0;
    for (const index of this.indexes.values()) total += index.starts.length;
    return total;
  }

  private evict(): void {
    while (this.indexes.size > MAX_FILES) this.indexes.delete(this.indexes.keys().next().value!);
  }
}

const identity = (stats: FileStats) => `${stats.dev}:${stats.ino}`;
const versionOf = (stats: FileStats) => `${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
