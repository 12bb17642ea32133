import assert from "node:assert/strict";
import { test } from "node:test";
import { chunk } from "./chunk.js";

test("splits into chunks of the size", () => {
  assert.deepEqual(chunk([1, 2, 3, 4], 2), [[1, 2], [3, 4]]);
  assert.deepEqual(chunk([], 3), []);
});

test("keeps what is left in a last, shorter chunk", () => {
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
});
