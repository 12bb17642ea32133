import type { RetryPolicy } from "./retry.js";
import { createAnthropicModel } from "./anthropic.js";
import { createGoogleModel } from "./google.js";
import { createOpenAIModel } from "./openai.js";
import { loadScriptedModel } from "./scripted.js";
import { parseModelSpec, resolveProviderEndpoint, type UserProviders } from "./spec.js";
import type { ChatModel } from "./types.js";

export interface CreateModelOptions {
  /** Directory that a relative `scripted:<file>` path is resolved against. */
  cwd: string;
  /** Where API keys and `<NAME>_BASE_URL` overrides are read: the user's environment. */
  env: NodeJS.ProcessEnv;
  /** The user's own providers (their config file). */
  providers?: UserProviders;
  /** Network providers: retry policy overrides (tests shorten the delays). */
  retry?: Partial<RetryPolicy>;
  /** Network providers: abandon (and retry) an attempt that receives no data for this long. */
  idleTimeoutMs?: number;
}

/** Providers with an API of their own; every other network provider speaks OpenAI's. */
const NATIVE_MODELS: Record<string, typeof createOpenAIModel> = { anthropic: createAnthropicModel, google: createGoogleModel };

/**
 * A model from `provider:model`. Fails fast with a ConfigError on a bad spec, a missing API key
 * or an invalid script file; makes no network request.
 */
export function createModel(spec: string, opts: CreateModelOptions): ChatModel {
  const parsed = parseModelSpec(spec, opts.providers);
  if (parsed.provider === "scripted") return loadScriptedModel(parsed.model, opts.cwd);
  const endpoint = resolveProviderEndpoint(parsed, opts.env, opts.providers);
  const create = NATIVE_MODELS[parsed.provider] ?? createOpenAIModel;
  return create(parsed, endpoint, { retry: opts.retry, idleTimeoutMs: opts.idleTimeoutMs });
}

export type { ChatModel, ModelCallOptions, ModelCallResult, RetryNotice, ToolSpec } from "./types.js";
export { parseModelSpec, resolveProviderEndpoint, PROVIDER_PRESETS, PROVIDERS } from "./spec.js";
export type { ModelSpec, ProviderEndpoint, ProviderPreset, UserProvider, UserProviders } from "./spec.js";
export { formatScript, parseScript, responseFromMessage } from "./scripted.js";
export type { ScriptedResponse } from "./scripted.js";
export { DEFAULT_RETRY_POLICY } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export { DEFAULT_IDLE_TIMEOUT_MS } from "./streaming-chat.js";
export { MODEL_TIMEOUT_EXPECTED, modelTimeoutFromEnv, parseModelTimeoutSeconds } from "./timeout.js";
export { countInputTokens, countOutputTokens, countTokens } from "./tokens.js";
export type { TokenUsage } from "../state/graph-state.js";
