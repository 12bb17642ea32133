import assert from "node:assert/strict";
import { test } from "node:test";
import { fizzbuzz } from "./fizzbuzz.js";

test("numbers, Fizz and Buzz", () => {
  assert.equal(fizzbuzz(1), "1");
  assert.equal(fizzbuzz(9), "Fizz");
  assert.equal(fizzbuzz(10), "Buzz");
});

test("FizzBuzz for every multiple of 15", () => {
  assert.equal(fizzbuzz(15), "FizzBuzz");
  assert.equal(fizzbuzz(30), "FizzBuzz");
});
