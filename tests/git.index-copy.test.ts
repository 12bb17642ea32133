/** A copy of an index keeps its modification time, which git's racy-entry check reads. */
import { statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyIndex } from "../src/git/tree-store.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("copyIndex", () => {
  it("gives the copy the source's modification time, not the time of copying", async () => {
    const ws = tempWorkspace();
    const source = join(ws.root, "index");
    writeFileSync(source, "DIRC");
    const written = new Date("2024-01-02T03:04:05.678Z");
    utimesSync(source, written, written);
    await copyIndex(source, join(ws.root, "copy"));
    expect(statSync(join(ws.root, "copy")).mtime.getTime()).toBe(written.getTime());
  });
});
