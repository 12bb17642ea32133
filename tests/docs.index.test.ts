/**
 * The documentation's shape: docs/README.md indexes every page of docs/, every relative link of
 * README.md and docs/*.md reaches a file, README.md stays short, and nothing names the private
 * working files. Reads files only; imports nothing from src/.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");
const DOCS = join(ROOT, "docs");

/** The longest README.md may be, in lines. */
const README_MAX_LINES = 300;

/** docs/*.md, by name. */
const docPages = (): string[] =>
  readdirSync(DOCS)
    .filter((name) => name.endsWith(".md"))
    .sort();

/** README.md and every docs/*.md, as absolute paths. */
const markdownFiles = (): string[] => [join(ROOT, "README.md"), ...docPages().map((name) => join(DOCS, name))];

/**
 * The targets of a Markdown text's links (`[text](target)`), outside fenced code blocks and inline
 * code, without a title; external ones (a scheme such as https: or mailto:) and bare anchors left out.
 */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`+[^`\n]*`+/g, "");
  const targets = [...prose.matchAll(/\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"));
}

/** A link target without its anchor, resolved from the folder of the file that holds it. */
const resolveLink = (file: string, target: string): string => resolve(dirname(file), decodeURI(target.split("#")[0]!));

describe("relativeLinks", () => {
  it("finds relative links, not external ones, anchors alone, or links in code", () => {
    const text = [
      'See [a](a.md), [b](../b.md#part "title"), [c](https://example.com/c.md), [d](#here).',
      "`[e](e.md)` in code, and",
      "```md",
      "[f](f.md)",
      "```",
      "[g](docs/g.md) and [h](mailto:someone@example.com)",
    ].join("\n");
    expect(relativeLinks(text)).toEqual(["a.md", "../b.md#part", "docs/g.md"]);
  });
});

describe("the documentation", () => {
  it("docs/README.md links every page of docs/", () => {
    const index = join(DOCS, "README.md");
    const linked = new Set(relativeLinks(readFileSync(index, "utf8")).map((target) => relative(DOCS, resolveLink(index, target))));
    const pages = docPages().filter((name) => name !== "README.md");
    expect(pages.length).toBeGreaterThan(10);
    expect(pages.filter((name) => !linked.has(name))).toEqual([]);
  });

  it("every relative link of README.md and docs/*.md reaches an existing file", () => {
    const broken = markdownFiles().flatMap((file) =>
      relativeLinks(readFileSync(file, "utf8"))
        .filter((target) => !existsSync(resolveLink(file, target)))
        .map((target) => `${relative(ROOT, file)}: ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\n$/, "").split("\n").length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it("README.md and docs/ never mention SPEC.md or the seeds", () => {
    const mentions = markdownFiles().flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, index) => (/SPEC\.md|\bseeds\b/i.test(line) ? [`${relative(ROOT, file)}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(mentions).toEqual([]);
  });
});
