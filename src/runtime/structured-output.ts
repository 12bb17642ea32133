import { z } from "zod";
import type { OutputSchema } from "../format/types.js";

export type ParseResult = { ok: true; value: unknown } | { ok: false; error: string };

export function toZod(schema: OutputSchema): z.ZodType {
  return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
}

/** Reads a JSON answer (bare, or inside a ```json fence) and validates it against the schema. */
export function parseStructuredOutput(content: string, schema: z.ZodType): ParseResult {
  const json = extractJson(content);
  if (json === undefined) return { ok: false, error: "the answer is not JSON" };
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch (error) {
    return { ok: false, error: `the answer is not valid JSON (${(error as Error).message})` };
  }
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, error: z.prettifyError(result.error).replace(/\n/g, "; ") };
}

function extractJson(content: string): string | undefined {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/.exec(content);
  if (fenced?.[1]) return fenced[1].trim();
  const start = content.search(/[[{]/);
  if (start < 0) return undefined;
  const end = Math.max(content.lastIndexOf("}"), content.lastIndexOf("]"));
  return end > start ? content.slice(start, end + 1) : undefined;
}

/** The instruction appended to an agent's prompt when it must answer with structured output. */
export function structuredOutputInstruction(schema: OutputSchema): string {
  return `Answer with a single JSON value, and nothing else, matching this JSON Schema:\n${JSON.stringify(schema, null, 2)}`;
}
