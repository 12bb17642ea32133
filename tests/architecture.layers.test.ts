import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { checkLayers, LAYERS } from "./helpers/layers.js";

const SRC = join(ROOT, "src");

/** A copy of src/ to break on purpose. */
function copyOfSource(): string {
  const copy = join(tempWorkspace({ prefix: "loopgraph-layers-" }).root, "src");
  cpSync(SRC, copy, { recursive: true });
  return copy;
}

function prepend(file: string, line: string): void {
  writeFileSync(file, `${line}\n${readFileSync(file, "utf8")}`);
}

describe("the source's layers", () => {
  it("import one way, with no cycles, and every folder has a layer", () => {
    const report = checkLayers(SRC);
    expect(report.files).toBeGreaterThan(100);
    expect(report.unplaced).toEqual([]);
    expect(report.upward).toEqual([]);
    expect(report.cycles).toEqual([]);
  });

  it("reports an upward import, type imports included", () => {
    const src = copyOfSource();
    prepend(join(src, "state/graph-state.ts"), 'import type { RunOutcome } from "../engine/run-types.js";');
    const report = checkLayers(src);
    expect(report.upward).toEqual([
      expect.objectContaining({
        from: "state/graph-state.ts",
        to: "engine/run-types.ts",
        fromLayer: 1,
        toLayer: LAYERS.findIndex((layer) => layer.includes("engine")),
      }),
    ]);
  });

  it("reports a cycle between two files of one folder, and between two folders of one layer", () => {
    const src = copyOfSource();
    prepend(join(src, "runs/snapshot-log.ts"), 'export type { Inbox as Again } from "./inbox.js";');
    prepend(join(src, "runs/inbox.ts"), 'import type { SnapshotLog } from "./snapshot-log.js";');
    prepend(join(src, "tools/registry.ts"), 'import "../policy/index.js";');
    const report = checkLayers(src);
    expect(report.upward).toEqual([]);
    expect(report.cycles).toContainEqual(["runs/inbox.ts", "runs/snapshot-log.ts"]);
    expect(report.cycles).toContainEqual(expect.arrayContaining(["policy", "tools"]));
  });

  it("places a new top-level folder nowhere until a layer names it", () => {
    const src = copyOfSource();
    mkdirSync(join(src, "extras"));
    writeFileSync(join(src, "extras/thing.ts"), "export const thing = 1;\n");
    expect(checkLayers(src).unplaced).toEqual(["extras"]);
  });
});
