/**
 * Both savers decode stored values through PlainJsonReader: JSON with no LangChain object by one
 * JSON.parse, giving what the serde's own `loadsTyped` gives; everything else, and every value of
 * a serde that is not LangGraph's own, through the serde; and a serde found to decode plain JSON
 * otherwise turns the fast path off for good.
 */
import { AIMessage, HumanMessage, isBaseMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { syncSerializerOf } from "../src/checkpoint/fast-serde.js";
import { PlainJsonReader } from "../src/checkpoint/plain-json.js";

const bytes = (text: string): Uint8Array => Buffer.from(text, "utf8");
/** A plain JSON value over the size checked both ways (512 bytes). */
const large = JSON.stringify({ outputs: { a: "x".repeat(600) }, visits: { a: 1 } });

describe("the plain-JSON reader", () => {
  it("decodes plain JSON as JsonPlusSerializer does, by JSON.parse past the first checks", async () => {
    const serde = new JsonPlusSerializer();
    const reader = new PlainJsonReader(serde, syncSerializerOf(serde));
    const values = [{ a: 1, b: [true, null, "é 🙂"] }, [-0, 1e300], "text", 3, null, { nested: { deep: [{}] } }];
    for (const value of values) {
      const text = JSON.stringify(value);
      expect(await reader.loads("json", bytes(text))).toStrictEqual(await serde.loadsTyped("json", bytes(text)));
    }
    const decoded = await reader.decode("json", bytes(large));
    expect(decoded.plainJson).toBe(true);
    expect(decoded.value).toStrictEqual(await serde.loadsTyped("json", bytes(large)));
  });

  it("leaves LangChain objects, __proto__ keys and other types to the serde", async () => {
    const serde = new JsonPlusSerializer();
    const reader = new PlainJsonReader(serde, syncSerializerOf(serde));
    const [, messages] = await serde.dumpsTyped([new HumanMessage("hi"), new AIMessage("there")]);
    const decoded = await reader.decode("json", messages);
    expect(decoded.plainJson).toBeUndefined();
    expect((decoded.value as unknown[]).every(isBaseMessage)).toBe(true);
    const proto = bytes(`{"__proto__": {"polluted": true}, "pad": "${"x".repeat(600)}"}`);
    expect(await reader.decode("json", proto)).toStrictEqual({ value: await serde.loadsTyped("json", proto) });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const [type, raw] = await serde.dumpsTyped(new Uint8Array([1, 2, 3]));
    expect(await reader.loads(type, raw)).toStrictEqual(new Uint8Array([1, 2, 3]));
  });

  it("never takes the fast path for a serde that is not LangGraph's own", async () => {
    const serde = new (class extends JsonPlusSerializer {})();
    const reader = new PlainJsonReader(serde, syncSerializerOf(serde));
    expect((await reader.decode("json", bytes(large))).plainJson).toBeUndefined();
  });

  it("turns the fast path off for good when the serde is found to decode plain JSON otherwise", async () => {
    const own = new JsonPlusSerializer();
    // A wrapper that offers LangGraph's synchronous twin but decodes otherwise: what the checks are for.
    const serde = {
      dumpsTyped: (value: unknown) => own.dumpsTyped(value),
      loadsTyped: async (type: string, data: Uint8Array | string) => ({ wrapped: await own.loadsTyped(type, data) }),
    };
    const reader = new PlainJsonReader(serde, syncSerializerOf(own));
    expect(await reader.loads("json", bytes('{"a":1}'))).toStrictEqual({ wrapped: { a: 1 } });
    const decoded = await reader.decode("json", bytes(large));
    expect(decoded.plainJson).toBeUndefined();
    expect(decoded.value).toStrictEqual({ wrapped: JSON.parse(large) });
  });
});
