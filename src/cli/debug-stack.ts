import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The place at the end of a stack frame: `(file:line:column)`, or `at file:line:column`. */
const PLACE = /(\(|at )([^\s()]+):(\d+):(\d+)(\)?)$/;

/**
 * A stack trace (printed with LOOPGRAPH_DEBUG) whose places in built files are those in the
 * TypeScript sources: a file with a source map beside it (`<file>.map`: the CLI bundle's, tsc's)
 * is looked up in it. Places with no map, or none the map knows, stay as they are. Sources are
 * shown relative to `cwd` when they lie under it. Reading the bundle's map takes about half a
 * second: this is for a failure being debugged, never for a normal run.
 */
export function sourceMappedStack(stack: string, cwd = process.cwd()): string {
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (file: string): SourceMap | undefined => {
    if (!maps.has(file)) maps.set(file, readSourceMap(file));
    return maps.get(file);
  };
  return stack
    .split("\n")
    .map((line) => {
      const place = PLACE.exec(line);
      if (!place) return line;
      const [whole, open, location, lineNumber, column, close] = place as unknown as [string, string, string, string, string, string];
      const file = location.startsWith("file://") ? fileURLToPath(location) : location;
      const entry = mapOf(file)?.findEntry(Number(lineNumber) - 1, Number(column) - 1);
      if (!entry || !("originalSource" in entry) || typeof entry.originalSource !== "string") return line;
      const source = resolve(dirname(file), entry.originalSource);
      const shown = source.startsWith(`${cwd}/`) ? relative(cwd, source) : source;
      return `${line.slice(0, line.length - whole.length)}${open}${shown}:${entry.originalLine + 1}:${entry.originalColumn + 1}${close}`;
    })
    .join("\n");
}

function readSourceMap(file: string): SourceMap | undefined {
  try {
    return new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")));
  } catch {
    return undefined;
  }
}
