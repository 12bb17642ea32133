import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { basename, dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BUNDLE_FILE } from "./launcher.js";

/** The place at the end of a stack frame: `(file:line:column)`, or `at file:line:column`. */
const PLACE = /(\(|at )([^\s()]+):(\d+):(\d+)(\)?)$/;

/**
 * A stack trace (printed with LOOPGRAPH_DEBUG) whose places in built files are those in the
 * TypeScript sources: a file with a source map beside it (`<file>.map`: the CLI bundle's, tsc's)
 * is looked up in it. Places with no map, or none the map knows, stay as they are. Sources are
 * shown relative to `cwd` when they lie under it. Reading the bundle's map takes about half a
 * second: this is for a failure being debugged, never for a normal run.
 */
export function sourceMappedStack(stack: string, cwd = process.cwd(), bundle = runningBundle()): string {
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
      const named = location.startsWith("file://") ? fileURLToPath(location) : location;
      const file = installed(named, bundle);
      const at = (place: string) => `${line.slice(0, line.length - whole.length)}${open}${place}${close}`;
      const entry = mapOf(file)?.findEntry(Number(lineNumber) - 1, Number(column) - 1);
      if (!entry || !("originalSource" in entry) || typeof entry.originalSource !== "string")
        return file === named ? line : at(`${file}:${lineNumber}:${column}`);
      const source = resolve(dirname(file), entry.originalSource);
      const shown = source.startsWith(`${cwd}/`) ? relative(cwd, source) : source;
      return at(`${shown}:${entry.originalLine + 1}:${entry.originalColumn + 1}`);
    })
    .join("\n");
}

/** The CLI bundle this code runs in (its `import.meta.url` is the bundle's: see scripts/bundle.mjs); undefined outside it. */
function runningBundle(): string | undefined {
  const here = fileURLToPath(import.meta.url);
  return basename(here) === BUNDLE_FILE ? here : undefined;
}

/**
 * `file`, or the running bundle when `file` is the bundle of another copy: V8 names a script
 * compiled from a code cache as it was named when the cache was made, so the frames of an
 * installed copy name the build machine's bundle (whose map, there, names its sources).
 */
function installed(file: string, bundle: string | undefined): string {
  return bundle !== undefined && file !== bundle && basename(file) === BUNDLE_FILE ? bundle : file;
}

function readSourceMap(file: string): SourceMap | undefined {
  try {
    return new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")));
  } catch {
    return undefined;
  }
}
