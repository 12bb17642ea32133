import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node, type Pair } from "yaml";

/** A location inside the parsed data: keys of mappings and indexes of lists. */
export type DataPath = readonly (string | number)[];

/** The value at a data path of parsed YAML, or undefined where the path leads nowhere. */
export function valueAt(data: unknown, path: DataPath): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

/** A problem found in a graph file, located by data path; turned into `line:col` by `SourceLocator`. */
export interface PathIssue {
  path: DataPath;
  /** Point at the key of the last path segment (e.g. an unknown key) rather than at its value. */
  at?: "key" | "value";
  message: string;
}

export interface SourcePosition {
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
}

/**
 * Maps data paths to positions in the YAML source, using the document's own node ranges.
 * A path that does not fully exist (a missing key) resolves to the deepest part that does, so
 * "missing key" errors point at the mapping that lacks it.
 */
export class SourceLocator {
  constructor(
    private readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  locate(path: DataPath, at: "key" | "value" = "value"): SourcePosition {
    let node: unknown = this.doc.contents;
    let pair: Pair | undefined;
    let resolvedAll = true;
    for (const segment of path) {
      const next = this.child(node, segment);
      if (!next) {
        resolvedAll = false;
        break;
      }
      ({ node, pair } = next);
    }
    const target = this.targetNode(node, pair, resolvedAll ? at : "key");
    return this.lineCounter.linePos(target?.range?.[0] ?? 0);
  }

  private child(node: unknown, segment: string | number): { node: unknown; pair?: Pair } | undefined {
    const container = isAlias(node) ? node.resolve(this.doc) : node;
    if (isMap(container)) {
      const pair = container.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      return pair && { node: pair.value, pair };
    }
    if (isSeq(container) && typeof segment === "number") {
      const item = container.items[segment];
      return item === undefined ? undefined : { node: item };
    }
    return undefined;
  }

  private targetNode(node: unknown, pair: Pair | undefined, at: "key" | "value"): Node | undefined {
    const key = pair?.key as Node | undefined;
    // An empty value (`prompt:` with nothing after it) has no text of its own to point at.
    const emptyValue = !node || (isScalar(node) && node.source === "");
    if (key && (at === "key" || emptyValue)) return key;
    return (node as Node | undefined) ?? key;
  }
}
