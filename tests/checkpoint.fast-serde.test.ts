/**
 * The saver's synchronous serializer writes the bytes LangGraph's JsonPlusSerializer writes for
 * plain JSON (by JSON.stringify alone), and leaves everything its replacer rewrites to its own
 * `dumpsTyped`, which the item codec then calls: a list mixing both is written as the serde writes it.
 */
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { isPlainJson, syncSerializerOf } from "../src/checkpoint/fast-serde.js";
import { ItemCodec } from "../src/checkpoint/item-codec.js";

const circular: Record<string, unknown> = { name: "loop" };
circular.self = circular;
const deep = (levels: number): unknown => (levels === 0 ? "bottom" : { inner: deep(levels - 1) });
const holes = [1, , 3]; // eslint-disable-line no-sparse-arrays
const nullPrototype = Object.assign(Object.create(null) as object, { a: 1, b: [true, null] });

const PLAIN: [string, unknown][] = [
  ["a nested object", { outputs: { a: 3, b: "two" }, visits: { a: 1 }, list: [1, "x", null, false, { y: [] }] }],
  ["an empty object and array", { empty: {}, none: [] }],
  ["a null-prototype object", nullPrototype],
  ["negative zero and large numbers", [-0, 1e300, -1.5e-300, Number.MAX_SAFE_INTEGER]],
  ["strings to escape, a lone surrogate", { text: 'quote " backslash \\ newline \n tab \t \u0000 \u2028 é 🙂 \ud800' }],
  ["31 levels", deep(30)],
];
const NOT_PLAIN: [string, unknown][] = [
  ["undefined inside an object", { a: 1, b: undefined }],
  ["undefined inside an array", [1, undefined]],
  ["a hole", holes],
  ["NaN and Infinity", { nan: Number.NaN, inf: Number.POSITIVE_INFINITY }],
  ["a Date", { at: new Date(0) }],
  ["a Map and a Set", { map: new Map([["k", 1]]), set: new Set([1]) }],
  ["an Error", { error: new Error("boom") }],
  ["bytes", { bytes: new Uint8Array([1, 2]) }],
  [
    "a LangChain message",
    [new HumanMessage("hi"), new AIMessage({ content: "", tool_calls: [{ name: "shell", args: { command: "ls" }, id: "c1" }] })],
  ],
  ["an object with toJSON", { toJSON: () => "replaced" }],
  ["a Send", { lg_name: "Send", node: "b", args: { x: 1 } }],
  ["a cycle", circular],
  ["40 levels", deep(40)],
  [
    "a class instance",
    new (class Point {
      x = 1;
    })(),
  ],
];

describe("the synchronous serializer", () => {
  const serde = new JsonPlusSerializer();
  const sync = syncSerializerOf(serde)!;

  const text = ([type, bytes]: [string, Uint8Array]): string => `${type}:${Buffer.from(bytes).toString("utf8")}`;

  it.each(PLAIN)("takes %s as plain JSON and writes JsonPlusSerializer's bytes", async (_, value) => {
    expect(isPlainJson(value, 0)).toBe(true);
    expect(text(sync.dumpsTypedSync(value)!)).toBe(text(await serde.dumpsTyped(value)));
  });

  it.each(NOT_PLAIN)("leaves %s to JsonPlusSerializer's own dumpsTyped", (_, value) => {
    expect(isPlainJson(value, 0)).toBe(false);
    expect(sync.dumpsTypedSync(value)).toBeUndefined();
  });

  it("writes bytes as they are, typed bytes", () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(sync.dumpsTypedSync(bytes)).toEqual(["bytes", bytes]);
  });

  it("lets the item codec write a list of plain and other items as JsonPlusSerializer writes each", async () => {
    const codec = new ItemCodec(serde, sync);
    const values = [...PLAIN, ...NOT_PLAIN].map(([, value]) => value);
    const { encode } = await codec.diff(values, undefined);
    for (const value of values) {
      const encoded = encode(value);
      expect(text([encoded.type, encoded.bytes])).toBe(text(await serde.dumpsTyped(value)));
    }
  });

  it("reads list items as JsonPlusSerializer reads each: messages loaded from their own text, or revived below first where that changes them", async () => {
    const message = (fields: Record<string, unknown>) => new AIMessage({ id: "m1", content: "hello", ...fields });
    const items = [
      message({}),
      // A second "lc" (a string here, a record below) or a "__proto__" key: revived as the serde does, below first.
      message({ content: '"lc"' }),
      message({ additional_kwargs: { seen: new Set(["a"]), gone: undefined } }),
      new HumanMessage({ content: [{ type: "text", text: "hi" }], additional_kwargs: { nested: new AIMessage("inner") } }),
      { plain: [1, { lc: 3 }] },
      "text",
    ];
    const texts = await Promise.all(items.map(async (item) => (await serde.dumpsTyped(item))[1]));
    // A key "__proto__" only JSON text holds: the serde's reviver makes it the object's prototype.
    const withProto = JSON.parse(Buffer.from(texts[0]!).toString("utf8")) as { kwargs: Record<string, unknown> };
    withProto.kwargs.additional_kwargs = JSON.parse('{"__proto__": {"x": 1}}');
    const bytes = [...texts, Buffer.from(JSON.stringify(withProto), "utf8")];
    const expected = await Promise.all(bytes.map((item) => serde.loadsTyped("json", item)));
    const arrayText = `[${bytes.map((item) => Buffer.from(item).toString("utf8")).join(",")}]`;
    for (const read of [
      await Promise.all(sync.loadsJsonItems(bytes)),
      await Promise.all(sync.loadsJsonArray(arrayText, (i) => Buffer.from(bytes[i]!).toString("utf8"))),
      await Promise.all(sync.loadsJsonArray(arrayText)),
    ]) {
      expect(read).toStrictEqual(expected);
      read.forEach((item, i) => expect(Object.getPrototypeOf(item)).toBe(Object.getPrototypeOf(expected[i])));
      const kwargs = (item: unknown) => Object.getPrototypeOf((item as { additional_kwargs: object }).additional_kwargs) as unknown;
      expect(kwargs(read.at(-1))).toBe(kwargs(expected.at(-1)));
    }
  });
});
