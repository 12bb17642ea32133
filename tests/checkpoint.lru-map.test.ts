import { describe, expect, it } from "vitest";
import { LruMap } from "../src/checkpoint/lru-map.js";

describe("LruMap", () => {
  it("keeps `capacity` entries, forgetting the least recently used", () => {
    const map = new LruMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    expect(map.get("a")).toBe(1);
    map.set("c", 3);
    expect([map.has("a"), map.has("b"), map.has("c")]).toEqual([true, false, true]);
    map.deleteWhere((key) => key === "a");
    map.set("d", 4);
    expect([map.has("a"), map.has("c"), map.has("d")]).toEqual([false, true, true]);
  });

  it("with weights: keeps entries up to `capacity` in weight, refuses one heavier than `maxEntryWeight`, counts a replaced value once", () => {
    const map = new LruMap<string, string>(10, { weigh: (value) => value.length, maxEntryWeight: 5 });
    map.set("a", "aaaa");
    map.set("b", "bbbb");
    map.set("a", "aaa");
    map.set("c", "ccc");
    expect([map.get("a"), map.get("b"), map.get("c")]).toEqual(["aaa", "bbbb", "ccc"]);
    map.set("big", "xxxxxx");
    expect(map.has("big")).toBe(false);
    map.set("d", "ddddd");
    // a (the least recently used) and b go: 3 + 5 <= 10.
    expect([map.has("a"), map.has("b"), map.has("c"), map.has("d")]).toEqual([false, false, true, true]);
  });
});
