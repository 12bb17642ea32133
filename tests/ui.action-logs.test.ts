/** The logs of the inspector's background commands are tidied: a day after their last write, never another's or a link's target. */
import { existsSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { ACTION_LOG_KEPT_MS, removeStaleActionLogs } from "../src/ui/actions.js";
import { tempWorkspace } from "./helpers/workspace.js";

it("removes a background command's log folder a day after its last write, and nothing else", () => {
  const tmp = tempWorkspace().root;
  const now = Date.now();
  const logFolder = (name: string, writtenAgoMs: number) => {
    const folder = join(tmp, name);
    mkdirSync(folder);
    const log = join(folder, "output.log");
    writeFileSync(log, "output\n");
    const at = (now - writtenAgoMs) / 1000;
    utimesSync(log, at, at);
    return folder;
  };
  const stale = logFolder("loopgraph-ui-run-old", ACTION_LOG_KEPT_MS + 60_000);
  const recent = logFolder("loopgraph-ui-run-new", 60_000);
  const other = logFolder("someone-else-old", ACTION_LOG_KEPT_MS + 60_000);
  // A link bearing the prefix, to a folder that is not a log's: the link is not followed.
  const target = logFolder("kept-target", ACTION_LOG_KEPT_MS + 60_000);
  symlinkSync(target, join(tmp, "loopgraph-ui-run-link"));

  removeStaleActionLogs(tmp, now);

  expect(existsSync(stale)).toBe(false);
  expect(existsSync(recent)).toBe(true);
  expect(existsSync(other)).toBe(true);
  expect(existsSync(join(target, "output.log"))).toBe(true);
  expect(existsSync(join(tmp, "loopgraph-ui-run-link"))).toBe(true);
  // A folder that is missing is nothing to do.
  expect(() => removeStaleActionLogs(join(tmp, "missing"), now)).not.toThrow();
});
