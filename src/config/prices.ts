/**
 * `prices:` of a config file: what each model costs, for the estimated cost of `loopgraph eval`'s
 * report (docs/config.md):
 *
 *     prices:
 *       openai:gpt-4o: { input: 2.5, output: 10 }   # currency units per million tokens
 *
 * A model spec is written as `--model` takes it and kept in its canonical form (`gemini:` and
 * `google:` are one provider). A scripted model is never priced: it calls no provider.
 */
import type { Problem } from "../diagnostics/yaml-file.js";
import { unknownKeyProblem } from "../diagnostics/yaml-file.js";
import { parseModelSpec, type UserProviders } from "../models/spec.js";

/** A model's price, in currency units per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
}

/** Prices by canonical model spec (`openai:gpt-4o`). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

const KEYS = ["input", "output"] as const;

/** `provider:model` as parseModelSpec reads it (aliases resolved); undefined for a spec it refuses. */
function canonicalSpec(spec: string, providers: UserProviders): string | undefined {
  try {
    const { provider, model } = parseModelSpec(spec, providers);
    return `${provider}:${model}`;
  } catch {
    return undefined;
  }
}

/** Checks `prices:` of a config file; returns the prices it sets, or the problems. */
export function checkPrices(value: unknown, providers: UserProviders): { prices: Record<string, ModelPrice>; problems: Problem[] } {
  const problems: Problem[] = [];
  const prices: Record<string, ModelPrice> = {};
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return {
      prices,
      problems: [
        {
          path: ["prices"],
          at: "value",
          message: "prices must be a mapping of model specs to { input, output }, e.g. openai:gpt-4o: { input: 2.5, output: 10 }",
        },
      ],
    };
  for (const [spec, price] of Object.entries(value as Record<string, unknown>)) {
    const at = ["prices", spec];
    const canonical = canonicalSpec(spec, providers);
    if (spec.startsWith("scripted:"))
      problems.push({ path: at, at: "key", message: "a scripted model calls no provider: it has no price" });
    else if (canonical === undefined)
      problems.push({ path: at, at: "key", message: `"${spec}" is not a model: a price is given per model spec, e.g. openai:gpt-4o` });
    if (price === null || typeof price !== "object" || Array.isArray(price)) {
      problems.push({ path: at, at: "value", message: "a price is a mapping: { input, output } in currency units per million tokens" });
      continue;
    }
    const fields = price as Record<string, unknown>;
    for (const [key, amount] of Object.entries(fields)) {
      if (!(KEYS as readonly string[]).includes(key))
        problems.push(unknownKeyProblem(at, key, KEYS, `unknown key "${key}": a price has input, output`));
      else if (typeof amount !== "number" || !Number.isFinite(amount) || amount < 0)
        problems.push({
          path: [...at, key],
          at: "value",
          message: `${key} must be a number of at least 0 (currency units per million tokens)`,
        });
    }
    for (const key of KEYS) if (fields[key] === undefined) problems.push({ path: at, at: "value", message: `missing "${key}"` });
    if (canonical !== undefined && !spec.startsWith("scripted:"))
      prices[canonical] = { input: Number(fields.input), output: Number(fields.output) };
  }
  return { prices, problems };
}

/** The price of `model` (a spec as `--model` takes it), or undefined when the table has none. */
export function modelPrice(prices: PriceTable, model: string, providers: UserProviders = {}): ModelPrice | undefined {
  return prices[canonicalSpec(model, providers) ?? model];
}
