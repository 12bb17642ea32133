/**
 * What every benchmark shares: the `bench:` line format, median timings of spawned commands
 * (the CLI against a bare `node -e ""` start, measured in the same run), and `--full`.
 *
 * Each row prints one line, `bench: <name> ours=… anchor=… ratio=… target=…`: `ours` is loopgraph's
 * figure, `anchor` what it is compared with (measured side by side in the same process run),
 * `ratio` = ours / anchor (or the median of ratios paired round by round, where a row says so), `target` the ratio (or bound) the row must meet, and `ok=yes|no`.
 */
import { execFile, spawnSync, type SpawnSyncOptions } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CLI = join(ROOT, "dist/cli/loopgraph.js");

/**
 * The folder where `npm run bench` (bench/run.ts) keeps the loop threads its benchmarks build
 * (bench/fixtures.ts): each is built once per bench run (a 329-round thread takes minutes), and
 * each benchmark that asks for it gets a copy of its store in its own folder (the workspace stays the shared one).
 */
export const FIXTURES_ENV = "LOOPGRAPH_BENCH_FIXTURES";

/** `npm run bench -- --full`: the large sizes (5,000 checkpoints, 1000 rounds). */
export const FULL = process.argv.includes("--full") || process.env.LOOPGRAPH_BENCH_FULL === "1";

export interface Row {
  name: string;
  ours: number;
  anchor: number;
  /** ours / anchor when measured otherwise (e.g. the median of paired rounds' ratios); by default ours / anchor. */
  ratio?: number;
  /** Units of ours and anchor, printed after each: "ms", "MB", "B". */
  unit: string;
  /** The most ours / anchor may be. */
  maxRatio?: number;
  /** Absolute bounds on ours, in its unit (e.g. inspect ≤ 2000 ms). */
  maxOurs?: number;
  /** The lowest and highest of the paired rounds' ratios, where the ratio is their median: printed as `spread=lo–hi`. */
  spread?: readonly [number, number];
  /** Free text added to the line (sizes, notes). */
  note?: string;
}

const figure = (value: number, unit: string): string =>
  `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)}${unit}`;

/** Prints one row's `bench:` line; returns whether it met its target. */
export function report(row: Row): boolean {
  const ratio = row.ratio ?? row.ours / row.anchor;
  const targets = [
    row.maxRatio !== undefined ? `≤${row.maxRatio}×` : undefined,
    row.maxOurs !== undefined ? `≤${figure(row.maxOurs, row.unit)}` : undefined,
  ].filter(Boolean);
  const ok = (row.maxRatio === undefined || ratio <= row.maxRatio) && (row.maxOurs === undefined || row.ours <= row.maxOurs);
  console.log(
    `bench: ${row.name} ours=${figure(row.ours, row.unit)} anchor=${figure(row.anchor, row.unit)} ratio=${ratio.toFixed(ratio < 0.1 ? 4 : 2)}${row.spread ? ` spread=${row.spread[0].toFixed(2)}–${row.spread[1].toFixed(2)}` : ""} target=${targets.join(",") || "-"} ok=${ok ? "yes" : "no"}${row.note ? ` (${row.note})` : ""}`,
  );
  return ok;
}

/** The median of `values` (the upper one of the middle two for an even count). */
export const median = (values: readonly number[]): number => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The median of `runs` timings of `fn`, in milliseconds. */
export function medianOf(runs: number, fn: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** Runs `node <args>` to its end; throws with its stderr when it fails. */
export function node(args: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 30, ...options });
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} failed (${result.status}): ${String(result.stderr).slice(-2000)}`);
  return String(result.stdout);
}

/** Runs `node <args>` to its end without holding up this process (a server it runs goes on answering); rejects with its stderr when it fails. */
export function nodeAsync(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 30 }, (error, stdout, stderr) =>
      error ? reject(new Error(`node ${args.join(" ")} failed (${error.code}): ${stderr.slice(-2000)}`)) : resolve(stdout),
    ),
  );
}

/** Median wall time of `node <args>` over `runs` runs, in milliseconds. */
export function medianNodeMs(args: string[], runs = 5): number {
  return medianOf(runs, () => void node(args));
}

/**
 * `node <args>` against a bare `node -e ""`, in `runs` pairs run back to back: the machine's speed
 * drifts between runs (other tenants), and a pair shares its moment. The medians of each side, and
 * the median of the pairs' ratios (the row's ratio).
 */
export function pairedNodeMs(args: string[], runs = 7): Promise<PairedFigures> {
  return interleavedFigures(
    runs,
    () => medianNodeMs(args, 1),
    () => nodeStartMs(1),
  );
}

/** Paired figures: the medians of each side, the median of the pairs' ratios (a row's ratio) and their spread. */
export interface PairedFigures {
  ours: number;
  anchor: number;
  ratio: number;
  spread: readonly [number, number];
}

/** The medians of paired timings, the median of their ratios and the lowest and highest ratio. */
export function pairedFigures(pairs: readonly { ours: number; anchor: number }[]): PairedFigures {
  const ratios = pairs.map((pair) => pair.ours / pair.anchor);
  return {
    ours: median(pairs.map((pair) => pair.ours)),
    anchor: median(pairs.map((pair) => pair.anchor)),
    ratio: median(ratios),
    spread: [Math.min(...ratios), Math.max(...ratios)],
  };
}

/**
 * Measures `ours` and `anchor` (each call gives one figure: ms, MB…) in `rounds` pairs, the side
 * that goes first alternating (a busy machine's slow moments fall on both sides alike): the
 * figures of pairedFigures.
 */
export async function interleavedFigures(
  rounds: number,
  ours: () => number | Promise<number>,
  anchor: () => number | Promise<number>,
): Promise<PairedFigures> {
  const pairs: { ours: number; anchor: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      const oursFigure = await ours();
      pairs.push({ ours: oursFigure, anchor: await anchor() });
    } else {
      const anchorFigure = await anchor();
      pairs.push({ ours: await ours(), anchor: anchorFigure });
    }
  }
  return pairedFigures(pairs);
}

/** interleavedFigures of the wall times of `ours` and `anchor`, in ms. */
export function interleavedMs(
  rounds: number,
  ours: () => unknown | Promise<unknown>,
  anchor: () => unknown | Promise<unknown>,
): Promise<PairedFigures> {
  const timed = async (fn: () => unknown | Promise<unknown>): Promise<number> => {
    const started = performance.now();
    await fn();
    return performance.now() - started;
  };
  return interleavedFigures(
    rounds,
    () => timed(ours),
    () => timed(anchor),
  );
}

/** Median wall time of a bare `node -e ""`: the anchor of every CLI row. */
export function nodeStartMs(runs = 7): number {
  return medianNodeMs(["-e", ""], runs);
}

/** Peak RSS of `node <args>` in MB (from /usr/bin/time), with its wall time in ms. */
export function measureNode(args: string[], options: SpawnSyncOptions = {}): { ms: number; rssMb: number } {
  const started = performance.now();
  const result = spawnSync("/usr/bin/time", ["-f", "%M", process.execPath, ...args], { maxBuffer: 1 << 30, ...options, encoding: "utf8" });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} failed (${result.status}): ${result.stderr.slice(-2000)}`);
  const kb = Number(result.stderr.trim().split("\n").at(-1));
  return { ms, rssMb: kb / 1024 };
}
