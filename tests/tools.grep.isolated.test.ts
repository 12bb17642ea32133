import { existsSync, linkSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import { createGrepTool, findRipgrep } from "../src/tools/grep.js";
import { makeWorkspace, sharedToolWorkspace, type TestWorkspace } from "./helpers/tool-workspace.js";
import { lacks } from "./helpers/requirements.js";

/** Every process the tools start, to see how each ended. */
const { spawned } = vi.hoisted(() => ({ spawned: [] as ChildProcess[] }));
vi.mock("node:child_process", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:child_process")>();
  const spawn = (...args: Parameters<typeof actual.spawn>) => {
    const child = actual.spawn(...args);
    spawned.push(child);
    return child;
  };
  return { ...actual, spawn, default: { ...actual, spawn } };
});

/**
 * A file over 10 MiB: 1,000 matching lines (more than the 500 a search stops at) ahead of lines
 * that do not match. ripgrep searches it all the same, but its output for it stays small.
 */
const HUGE = "needle\n".repeat(1_000) + "filler\n".repeat(1_600_000);

const ripgrep = lacks("ripgrep", "the grep tool's ripgrep tests (the in-process engine is still tested)")
  ? undefined
  : findRipgrep(process.env);
const SKIP_REASON = "needs ripgrep";

const inProcess = [createGrepTool({ ripgrep: null })];
const withRipgrep = ripgrep ? [createGrepTool({ ripgrep })] : [];
/** ripgrep on all cores from the start (a large tree's path), results put in walk order afterwards. */
const allCores = ripgrep ? [createGrepTool({ ripgrep, sortedHeadStartMs: 0 })] : [];

/** A git repository with ignored files, nested folders, a dotfile, binary files, CRLF and non-ASCII text. */
function fixtureTree(): TestWorkspace {
  const lateNul = Buffer.concat([Buffer.from("needle at the start\n"), Buffer.alloc(70_000, 0x61), Buffer.from([0]), Buffer.from("\n")]);
  return sharedToolWorkspace(
    {
      ".gitignore": "*.log\nbuild/\n",
      ".hidden/config": "needle in a dotfile\n",
      "a.txt": "first needle\nno match here\nneedle needle twice on one line\n",
      "a/b.txt": "needle comes before a.txt in walk order\n",
      "src/main.ts": 'export const needle = "NEEDLE";\n// Needle 42\n',
      "src/docs/readme.md": "a needle in markdown\n",
      "src/.gitignore": "generated.ts\n",
      "src/generated.ts": "needle ignored by the nested .gitignore\n",
      "debug.log": "needle ignored by *.log\n",
      "build/out.js": "needle in an ignored directory\n",
      "node_modules/dep/index.js": "needle in a dependency\n",
      "image.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x0a]),
      "late-nul.bin": lateNul,
      "windows.txt": "needle with CRLF\r\nsecond line\r\n",
      "unicode.txt": "héllo wörld needle\nHÉLLO\n",
      "long.min.js": `${"x".repeat(600)}needle${"y".repeat(600)}\n`,
      "dashes.txt": "a-b needle-with-dash\n",
      "no-newline.txt": "needle at the end without newline",
      "many/lines.txt": Array.from({ length: 600 }, (_, i) => `match line ${i + 1}`).join("\n") + "\n",
    },
    { git: true },
  );
}

/** Queries both engines must answer identically. */
const QUERIES: Record<string, Record<string, unknown>> = {
  plain: { pattern: "needle" },
  "case-insensitive": { pattern: "NEEDLE", case_insensitive: true },
  "inline (?i)": { pattern: "(?i)needle \\d+" },
  regex: { pattern: "ne+dle\\s+(in|at)\\b" },
  "named group": { pattern: "(?P<word>need)le in" },
  anchors: { pattern: "^needle" },
  "end anchor on CRLF lines": { pattern: "CRLF$" },
  "escaped punctuation": { pattern: "needle\\-with" },
  unicode: { pattern: "h.llo w.rld" },
  "unicode case-insensitive": { pattern: "héllo", case_insensitive: true },
  "glob by name": { pattern: "needle", glob: "*.ts" },
  "glob by path": { pattern: "needle", glob: "src/**/*.md" },
  "glob negative effect": { pattern: "needle", glob: "*.nothing" },
  "path to a directory": { pattern: "needle", path: "src" },
  "path to a file": { pattern: "needle", path: "a.txt" },
  "path to an ignored directory": { pattern: "needle", path: "build" },
  "path into node_modules": { pattern: "needle", path: "node_modules/dep" },
  "capped at 500 lines": { pattern: "match line" },
  "no match": { pattern: "haystack" },
  "empty pattern": { pattern: "", path: "a.txt" },
};

describe("grep: ripgrep and the in-process engine give identical results", () => {
  const ws = fixtureTree();

  for (const [label, args] of Object.entries(QUERIES)) {
    it.skipIf(!ripgrep)(ripgrep ? label : `${label} (skipped: ${SKIP_REASON})`, async () => {
      const [viaRipgrep, viaProcess] = [await ws.call("grep", args, withRipgrep), await ws.call("grep", args, inProcess)];
      expect(viaProcess).toEqual(viaRipgrep);
      expect(await ws.call("grep", args, allCores)).toEqual(viaRipgrep);
    });
  }

  it.skipIf(!ripgrep)(
    ripgrep ? "an invalid pattern is invalid_arguments in both" : `invalid pattern (skipped: ${SKIP_REASON})`,
    async () => {
      for (const tools of [withRipgrep, inProcess]) {
        expect(await ws.call("grep", { pattern: "a(" }, tools)).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
      }
    },
  );

  it.skipIf(!ripgrep)(
    ripgrep ? "documented dialect difference: POSIX classes work in ripgrep only" : `dialects (skipped: ${SKIP_REASON})`,
    async () => {
      const viaRipgrep = await ws.call("grep", { pattern: "[[:digit:]]{2}", path: "src" }, withRipgrep);
      expect(viaRipgrep.content).toBe("1 matching line in 1 file\nsrc/main.ts:2:// Needle 42");
      const viaProcess = await ws.call("grep", { pattern: "[[:digit:]]{2}", path: "src" }, inProcess);
      expect(viaProcess.content).not.toContain("Needle 42");
    },
  );
});

describe("grep (in-process engine)", () => {
  const ws = fixtureTree();

  it("lists path:line:text in walk order, dotfiles included, ignored, skipped and binary files left out", async () => {
    const result = await ws.call("grep", { pattern: "needle" }, inProcess);
    expect(result.content.split("\n")).toEqual([
      "11 matching lines in 10 files",
      ".hidden/config:1:needle in a dotfile",
      "a/b.txt:1:needle comes before a.txt in walk order",
      "a.txt:1:first needle",
      "a.txt:3:needle needle twice on one line",
      "dashes.txt:1:a-b needle-with-dash",
      `long.min.js:1:${"x".repeat(500)}... [706 more characters]`,
      "no-newline.txt:1:needle at the end without newline",
      "src/docs/readme.md:1:a needle in markdown",
      'src/main.ts:1:export const needle = "NEEDLE";',
      "unicode.txt:1:héllo wörld needle",
      "windows.txt:1:needle with CRLF",
    ]);
  });

  it("treats CRLF as a line ending, so `$` matches before it", async () => {
    expect((await ws.call("grep", { pattern: "CRLF$" }, inProcess)).content).toBe(
      "1 matching line in 1 file\nwindows.txt:1:needle with CRLF",
    );
  });

  it("searches an ignored directory it is pointed at", async () => {
    expect((await ws.call("grep", { pattern: "needle", path: "build" }, inProcess)).content).toBe(
      "1 matching line in 1 file\nbuild/out.js:1:needle in an ignored directory",
    );
  });

  it("says when it is capped, and when nothing matches", async () => {
    const capped = await ws.call("grep", { pattern: "match line" }, inProcess);
    const lines = capped.content.split("\n");
    expect(lines[0]).toBe("Showing the first 500 matching lines (in 1 files); there are more: narrow the pattern, path or glob");
    expect(lines).toHaveLength(501);
    expect(lines[500]).toBe("many/lines.txt:500:match line 500");
    expect((await ws.call("grep", { pattern: "haystack", glob: "*.md" }, inProcess)).content).toBe(
      'No matches for "haystack" in . (files matching *.md)',
    );
  });

  it("reports invalid patterns and missing paths", async () => {
    expect(await ws.call("grep", { pattern: "a(" }, inProcess)).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
    expect(await ws.call("grep", { pattern: "x", path: "nope" }, inProcess)).toMatchObject({ ok: false, errorKind: "file_not_found" });
  });

  it("leaves out files over 10 MiB and says so", async () => {
    const big = makeWorkspace({ "huge.txt": HUGE, "small.txt": "needle\n" });
    expect((await big.call("grep", { pattern: "needle" }, inProcess)).content).toBe(
      "1 matching line in 1 file\nsmall.txt:1:needle\n(not searched, over 10 MiB: huge.txt)",
    );
  });
});

describe("findRipgrep", () => {
  it("honours LOOPGRAPH_RG (a path, or off) and otherwise searches the PATH", () => {
    expect(findRipgrep({ LOOPGRAPH_RG: "off", PATH: process.env.PATH })).toBeUndefined();
    expect(findRipgrep({ LOOPGRAPH_RG: "/opt/rg", PATH: "" })).toBe("/opt/rg");
    expect(findRipgrep({ PATH: "/nonexistent-dir" })).toBeUndefined();
    if (ripgrep) expect(findRipgrep({ PATH: `/nonexistent-dir:${ripgrep.replace(/\/rg$/, "")}` })).toBe(ripgrep);
  });
});

/** Both engines' results for `args` in `ws`, checked equal; the ripgrep one is returned. */
async function bothEngines(ws: TestWorkspace, args: Record<string, unknown>): Promise<string> {
  const viaProcess = await ws.call("grep", args, inProcess);
  if (!ripgrep) return viaProcess.content;
  const viaRipgrep = await ws.call("grep", args, withRipgrep);
  expect(viaRipgrep).toEqual(viaProcess);
  expect(await ws.call("grep", args, allCores)).toEqual(viaProcess);
  return viaRipgrep.content;
}

/** Runs `fn` with environment variables set (undefined: removed), then puts them back. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

describe("grep: ripgrep walks the workspace itself, with the walk's rules", () => {
  it.skipIf(!ripgrep)(
    "stops ripgrep at the result limit: the first 500 in walk order, and no rg process is left",
    async () => {
      // 100 files of 200 matching lines: ripgrep's output (megabytes) cannot fit in the pipe, so a
      // search cannot end by itself before the tool has read its first 500 matches.
      const files = Object.fromEntries(
        Array.from({ length: 100 }, (_, f) => [
          `d${f % 4}/f${String(f).padStart(2, "0")}.txt`,
          Array.from({ length: 200 }, (_, i) => `hit ${f}.${i}`).join("\n") + "\n",
        ]),
      );
      const ws = makeWorkspace(files);
      spawned.length = 0;
      const result = await ws.call("grep", { pattern: "hit" }, withRipgrep);
      const lines = result.content.split("\n");
      expect(lines[0]).toBe("Showing the first 500 matching lines (in 3 files); there are more: narrow the pattern, path or glob");
      expect(lines.slice(1, 3)).toEqual(["d0/f00.txt:1:hit 0.0", "d0/f00.txt:2:hit 0.1"]);
      expect(lines[500]).toBe("d0/f08.txt:100:hit 8.99");
      expect(result).toEqual(await ws.call("grep", { pattern: "hit" }, inProcess));
      const searches = spawned.filter((child) => child.spawnargs.includes("--regexp"));
      expect(searches.length).toBeGreaterThanOrEqual(1);
      for (const child of spawned) {
        if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once("exit", resolve));
        expect(existsSync(`/proc/${child.pid}`), `process ${child.pid}`).toBe(false);
      }
      for (const search of searches) expect(search.signalCode).toBe("SIGKILL");
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "notes hard-linked and over-10-MiB files whether or not they match, not those the walk skips, with find and without it",
    async () => {
      const ws = makeWorkspace(
        {
          ".gitignore": "ignored/\n",
          "a.txt": "needle\n",
          "big/huge.txt": HUGE,
          "big/quiet.txt": "x\n".repeat(6_000_000),
          "ignored/huge.txt": HUGE,
          "sub/node_modules/huge.txt": HUGE,
          "zz.txt": "needle after the large files\n",
        },
        { git: true },
      );
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, "-hl.txt"));
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, "ignored", "hl.txt"));
      const expected = [
        "2 matching lines in 2 files",
        "a.txt:1:needle",
        "zz.txt:1:needle after the large files",
        "(not searched, over 10 MiB: big/huge.txt, big/quiet.txt)",
        "(not searched, hard-linked: another link may be a file outside the workspace: -hl.txt)",
      ].join("\n");
      expect(await bothEngines(ws, { pattern: "needle" })).toBe(expected);
      expect((await bothEngines(ws, { pattern: "top" })).split("\n")[0]).toBe('No matches for "top" in .');
      await withEnv({ PATH: "/nonexistent" }, async () => {
        expect((await ws.call("grep", { pattern: "needle" }, allCores)).content).toBe(expected);
      });
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "on all cores too, stops at the limit and redoes the search in walk order",
    async () => {
      const files = Object.fromEntries(
        Array.from({ length: 100 }, (_, f) => [
          `d${f % 4}/f${String(f).padStart(2, "0")}.txt`,
          Array.from({ length: 200 }, (_, i) => `hit ${f}.${i}`).join("\n") + "\n",
        ]),
      );
      const ws = makeWorkspace(files);
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, "d0", "f00.hl"));
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, "d3", "f99.hl"));
      spawned.length = 0;
      const result = await ws.call("grep", { pattern: "hit" }, allCores);
      const searches = spawned.filter((child) => child.spawnargs.includes("--regexp"));
      const viaProcess = (await ws.call("grep", { pattern: "hit" }, inProcess)).content.split("\n");
      const lines = result.content.split("\n");
      expect(lines.slice(0, -1)).toEqual(viaProcess.slice(0, -1));
      // Documented difference: ripgrep notes the files up to where it stopped, the in-process engine all of them.
      expect(lines.at(-1)).toBe("(not searched, hard-linked: another link may be a file outside the workspace: d0/f00.hl)");
      expect(viaProcess.at(-1)).toBe("(not searched, hard-linked: another link may be a file outside the workspace: d0/f00.hl, d3/f99.hl)");
      expect(await ws.call("grep", { pattern: "hit" }, withRipgrep)).toEqual(result);
      expect(searches.map((child) => child.spawnargs.includes("--sort=path"))).toEqual([false, true]);
      for (const child of spawned) {
        if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once("exit", resolve));
      }
      for (const search of searches) expect(search.signalCode).toBe("SIGKILL");
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "a capped walk-ordered search needs no listing process: the notes up to its stop are listed from here, with the walk's rules",
    async () => {
      const files: Record<string, string> = {
        ".gitignore": "build/\n*.log\n",
        "build/hl.txt": "hit\n",
        "node_modules/hl.txt": "hit\n",
        "sub/node_modules/hl.txt": "hit\n",
      };
      for (let f = 0; f < 6; f++) files[`d/f${f}.txt`] = "hit\n".repeat(200);
      const ws = makeWorkspace(files, { git: true });
      for (const link of ["a/-hl.txt", "build/hl.txt", "d/f1.hl", "d/f1.log", "d/f4.hl", "sub/node_modules/hl.txt"]) {
        ws.write(link, "");
        rmSync(join(ws.root, link));
        linkSync(join(ws.outside, "secret.txt"), join(ws.root, link));
      }
      spawned.length = 0;
      const lines = (await ws.call("grep", { pattern: "hit" }, withRipgrep)).content.split("\n");
      expect(lines[0]).toBe("Showing the first 500 matching lines (in 3 files); there are more: narrow the pattern, path or glob");
      expect(lines[500]).toBe("d/f2.txt:100:hit");
      // Up to the stop (d/f2.txt): not the ignored, the pruned, nor those after it.
      expect(lines.at(-1)).toBe("(not searched, hard-linked: another link may be a file outside the workspace: a/-hl.txt, d/f1.hl)");
      // No listing process beside the walk-ordered search (`find` lists for an all-cores one, which a busy machine may start).
      expect(spawned.filter((child) => child.spawnargs.includes("--files"))).toEqual([]);
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "notes the left-out files up to the stop even when the search stops far into the walk",
    async () => {
      // 6,000 files with long names (300 KB of listing); the matches start at the 5,000th, well
      // past what a walk-ordered listing reads ahead before it knows where the search stopped.
      const name = (f: number) => (f < 5_000 ? `a-rather-long-file-name-to-fill-the-listing-${f}` : `b${f}`);
      const files = Object.fromEntries(
        Array.from({ length: 6_000 }, (_, f) => [`${name(f)}.txt`, f >= 5_000 ? "hit\n".repeat(200) : "miss\n"]),
      );
      const ws = makeWorkspace(files);
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, `${name(5_001)}.hl`));
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, `${name(5_400)}.hl`));
      for (const tools of [withRipgrep, allCores]) {
        const lines = (await ws.call("grep", { pattern: "hit" }, tools)).content.split("\n");
        expect(lines[0]).toBe("Showing the first 500 matching lines (in 3 files); there are more: narrow the pattern, path or glob");
        expect(lines[500]).toBe(`${name(5_002)}.txt:100:hit`);
        expect(lines.at(-1)).toBe(`(not searched, hard-linked: another link may be a file outside the workspace: ${name(5_001)}.hl)`);
      }
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "the file that reaches the limit is not waited for when it is text, and left out when it is binary after its matches",
    async () => {
      // 2,000 long matching lines (400 KB: more than the pipe holds, so ripgrep is still printing
      // them when the limit is reached), then nothing matches anywhere: stopped, not run to its end.
      const long = `hit ${"x".repeat(200)}\n`;
      const quiet = Object.fromEntries(Array.from({ length: 50 }, (_, f) => [`z/quiet${f}.txt`, "nothing here\n"]));
      const ws = makeWorkspace({ "a.txt": long.repeat(2_000), ...quiet });
      spawned.length = 0;
      const lines = (await ws.call("grep", { pattern: "hit" }, withRipgrep)).content.split("\n");
      expect(lines[0]).toBe("Showing the first 500 matching lines (in 1 files); there are more: narrow the pattern, path or glob");
      const [search] = spawned.filter((child) => child.spawnargs.includes("--regexp"));
      if (search!.exitCode === null && search!.signalCode === null) await new Promise((resolve) => search!.once("exit", resolve));
      expect(search!.signalCode).toBe("SIGKILL");
      // The same lines, then a NUL past ripgrep's first read: its matches are printed, then the file is found binary.
      const binary = makeWorkspace({
        "a.bin": Buffer.concat([Buffer.from(long.repeat(2_000)), Buffer.alloc(70_000, 0x61), Buffer.from([0, 0x0a])]),
        "b.txt": "hit after the binary file\n",
      });
      expect(await bothEngines(binary, { pattern: "hit" })).toBe("1 matching line in 1 file\nb.txt:1:hit after the binary file");
    },
    20_000,
  );

  it.skipIf(!ripgrep)(
    "a file named in bytes that are not UTF-8 is searched, and noted when hard-linked, like any other",
    async () => {
      const ws = makeWorkspace({ "a.txt": "needle\n", "many/lines.txt": "needle\n".repeat(600) });
      const latin1 = (name: string) => Buffer.concat([Buffer.from(`${ws.root}/`), Buffer.from(name, "latin1")]);
      writeFileSync(latin1("caf\xe9.txt"), "needle in a Latin-1 name\n");
      linkSync(join(ws.outside, "secret.txt"), latin1("hl-\xe9.txt"));
      linkSync(join(ws.outside, "secret.txt"), latin1("many/b\xe9-hl.txt"));
      const notes = (files: string) => `(not searched, hard-linked: another link may be a file outside the workspace: ${files})`;
      for (const tools of [withRipgrep, allCores]) {
        // The hard links are seen by lstat where ripgrep reports files, where they are listed from here, and where `find` lists them.
        expect(
          (await ws.call("grep", { pattern: "needle", path: "." }, tools)).content
            .split("\n")
            .filter((line) => !line.startsWith("many/lines.txt")),
        ).toEqual([
          "Showing the first 500 matching lines (in 3 files); there are more: narrow the pattern, path or glob",
          "a.txt:1:needle",
          "caf\ufffd.txt:1:needle in a Latin-1 name",
          notes("hl-\ufffd.txt, many/b\ufffd-hl.txt"),
        ]);
        expect((await ws.call("grep", { pattern: "Latin" }, tools)).content).toBe(
          ["1 matching line in 1 file", "caf\ufffd.txt:1:needle in a Latin-1 name", notes("hl-\ufffd.txt, many/b\ufffd-hl.txt")].join("\n"),
        );
      }
    },
    20_000,
  );

  it("never follows a symlink: neither one out of the workspace nor one within it is searched", async () => {
    const ws = makeWorkspace({ "inside.txt": "no secret here\n" });
    ws.symlink("link-out", ws.outside);
    ws.symlink("secret-link.txt", join(ws.outside, "secret.txt"));
    ws.symlink("inside-link.txt", "inside.txt");
    ws.symlink("dir-link", ".");
    expect(await bothEngines(ws, { pattern: "secret" })).toBe("1 matching line in 1 file\ninside.txt:1:no secret here");
    expect(await bothEngines(ws, { pattern: "top" })).toBe('No matches for "top" in .');
  });

  it("searches and reports hostile file names as they are (leading dashes, a newline, spaces, names like ripgrep's output); a pattern may start with dashes", async () => {
    const ws = makeWorkspace({
      "-e": "needle in -e\n",
      "--files": "needle in --files\n",
      "-rf/--pre=sh.txt": "needle below -rf\n",
      "new\nline.txt": "needle after a newline\n",
      " spaced .txt": "needle with spaces\n",
      'a,"binary_offset":1,.txt': "needle in a name that looks like a binary file's\n",
      "12:34:needle.txt": "needle in a name that looks like a matching line\n",
    });
    // A file found binary after its first matches, then a folder named like ripgrep's warning about it.
    const warning = 'late.bin: WARNING: stopped searching binary file after match (found "\\0" byte around offset 9)\n.';
    ws.write("late.bin", Buffer.concat([Buffer.from("needle\n"), Buffer.alloc(70_000, 0x61), Buffer.from([0])]));
    ws.write(`${warning}/x.txt`, "needle\r\n\r\n1:needle\n");
    expect(await bothEngines(ws, { pattern: "needle" })).toBe(
      [
        "9 matching lines in 8 files",
        " spaced .txt:1:needle with spaces",
        "--files:1:needle in --files",
        "-e:1:needle in -e",
        "-rf/--pre=sh.txt:1:needle below -rf",
        "12:34:needle.txt:1:needle in a name that looks like a matching line",
        'a,"binary_offset":1,.txt:1:needle in a name that looks like a binary file\'s',
        `${warning}/x.txt:1:needle`,
        `${warning}/x.txt:3:1:needle`,
        "new\nline.txt:1:needle after a newline",
      ].join("\n"),
    );
    expect(await bothEngines(ws, { pattern: "needle", path: "-rf" })).toBe(
      "1 matching line in 1 file\n-rf/--pre=sh.txt:1:needle below -rf",
    );
    expect(await bothEngines(ws, { pattern: "needle", path: "-e" })).toBe("1 matching line in 1 file\n-e:1:needle in -e");
    // ripgrep's warning about a file found binary starts with its path, which never starts with a digit as printed.
    ws.write("1/2:late.bin", Buffer.concat([Buffer.from("needle\n"), Buffer.alloc(70_000, 0x61), Buffer.from([0])]));
    ws.write("1/ok.txt", "needle\n");
    expect(await bothEngines(ws, { pattern: "needle", path: "1" })).toBe("1 matching line in 1 file\n1/ok.txt:1:needle");
    expect(await bothEngines(ws, { pattern: "needle", path: "1/2:late.bin" })).toBe('No matches for "needle" in 1/2:late.bin');
    expect(await bothEngines(ws, { pattern: "--files" })).toBe("1 matching line in 1 file\n--files:1:needle in --files");
  });

  it("leaves out .git, node_modules and .loopgraph below the root, and files over 10 MiB, and says so", async () => {
    const ws = makeWorkspace(
      {
        "a.txt": "needle\n",
        ".git/needle.txt": "needle in .git\n",
        "sub/node_modules/x.js": "needle in a dependency\n",
        ".loopgraph/store.txt": "needle in the state\n",
        "huge.txt": HUGE,
      },
      { git: true },
    );
    expect(await bothEngines(ws, { pattern: "needle" })).toBe(
      "1 matching line in 1 file\na.txt:1:needle\n(not searched, over 10 MiB: huge.txt)",
    );
  });

  it("follows the ignore files as documented: .ignore and .rgignore always, .gitignore and info/exclude in a repository, parents' too, negations", async () => {
    const ws = makeWorkspace({
      ".gitignore": "*.log\n",
      ".ignore": "*.tmp\n!keep.tmp\n",
      "sub/.rgignore": "*.dat\n",
      "a.log": "needle\n",
      "b.tmp": "needle\n",
      "keep.tmp": "needle\n",
      "sub/c.dat": "needle\n",
      "sub/d.txt": "needle\n",
      "e.parent": "needle\n",
    });
    writeFileSync(join(ws.root, "..", ".ignore"), "*.parent\n");
    expect(await bothEngines(ws, { pattern: "needle" })).toBe(
      "3 matching lines in 3 files\na.log:1:needle\nkeep.tmp:1:needle\nsub/d.txt:1:needle",
    );
    const repo = makeWorkspace({ ".gitignore": "*.log\n", "a.log": "needle\n", "b.tmp": "needle\n", "c.txt": "needle\n" }, { git: true });
    writeFileSync(join(repo.root, ".git", "info", "exclude"), "*.tmp\n");
    expect(await bothEngines(repo, { pattern: "needle" })).toBe("1 matching line in 1 file\nc.txt:1:needle");
  });

  it.skipIf(!ripgrep)("reads no ripgrep config file and no global git excludes from the environment", async () => {
    const ws = makeWorkspace({ "a.txt": "needle\n", "b.md": "needle\n" }, { git: true });
    const config = join(ws.outside, "ripgreprc");
    writeFileSync(config, "--glob=!*.txt\n--max-count=0\n");
    mkdirSync(join(ws.outside, "xdg", "git"), { recursive: true });
    writeFileSync(join(ws.outside, "xdg", "git", "ignore"), "*.md\n");
    const expected = "2 matching lines in 2 files\na.txt:1:needle\nb.md:1:needle";
    await withEnv({ RIPGREP_CONFIG_PATH: config, XDG_CONFIG_HOME: join(ws.outside, "xdg") }, async () => {
      expect((await ws.call("grep", { pattern: "needle" }, withRipgrep)).content).toBe(expected);
    });
  });

  it("applies a glob with the ignore files still in force: a name glob matches names, one with a slash whole paths", async () => {
    const ws = makeWorkspace(
      { ".gitignore": "gen.ts\n", "src/a.ts": "needle\n", "src/gen.ts": "needle\n", "src/b.js": "needle\n", ".x.ts": "needle\n" },
      { git: true },
    );
    expect(await bothEngines(ws, { pattern: "needle", glob: "*.ts" })).toBe(
      "2 matching lines in 2 files\n.x.ts:1:needle\nsrc/a.ts:1:needle",
    );
    expect(await bothEngines(ws, { pattern: "needle", glob: "src/*.{js,ts}" })).toBe(
      "2 matching lines in 2 files\nsrc/a.ts:1:needle\nsrc/b.js:1:needle",
    );
  });
});
