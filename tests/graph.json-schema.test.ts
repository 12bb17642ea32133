import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { graphJsonSchema, renderGraphJsonSchema } from "../src/graph/json-schema.js";
import { nodeKindNames } from "../src/graph/schema.js";

describe("schema/graph.schema.json", () => {
  it("is up to date with the zod schema (regenerate with npm run schema)", () => {
    const committed = readFileSync(new URL("../schema/graph.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(renderGraphJsonSchema());
  });

  it("describes every node kind, strictly", () => {
    const schema = graphJsonSchema() as {
      additionalProperties: boolean;
      properties: { nodes: { additionalProperties: { oneOf: { properties: { kind: { const: string } } }[] } } };
    };
    expect(schema.additionalProperties).toBe(false);
    const kinds = schema.properties.nodes.additionalProperties.oneOf.map((option) => option.properties.kind.const);
    expect(kinds).toEqual(nodeKindNames());
  });
});
