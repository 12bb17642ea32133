import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { putThread } from "../bench/fixtures.js";
import type { EncodedItem } from "../src/checkpoint/item-framing.js";
import { threadHistory } from "../src/engine/inspect.js";
import { withStore } from "../src/store/store.js";
import { sharedTempDir } from "./helpers/workspace.js";

/** The list items `inspect` compares by their stored bytes (every comparison counted). */
const compared = vi.hoisted(() => ({ items: 0 }));
vi.mock("../src/checkpoint/item-framing.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../src/checkpoint/item-framing.js")>();
  return {
    ...actual,
    sameEncoding: (a: EncodedItem, b: EncodedItem) => {
      compared.items += 1;
      return actual.sameEncoding(a, b);
    },
  };
});

describe("inspect's history walk of a long list", () => {
  const directory = sharedTempDir("loopgraph-list-walk-");

  it("compares only each version's new items with its parent's, not the whole list again: linear in the versions", async () => {
    const db = join(directory.path, "walk.db");
    await withStore({ db, env: {} }, "create", async (store) => {
      await store.threads.create({ threadId: "w", graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" });
      await putThread([store.saver], "w", 121, { messageEvery: 1, messageBytes: 40 });
    });
    compared.items = 0;
    const history = await threadHistory("w", { db, env: {} });
    expect(history.checkpoints).toHaveLength(121);
    // Each step added a message, which its line describes.
    expect(history.checkpoints.at(-1)!.changes.filter((change) => change.path.startsWith("messages"))).toEqual([
      expect.objectContaining({ path: "messages.119", kind: "added" }),
    ]);
    // 120 versions of a list growing to 120 items: comparing each whole would take some 7,000 comparisons.
    expect(compared.items).toBeLessThan(2 * 120);
  });
});
