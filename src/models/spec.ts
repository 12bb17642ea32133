import { ConfigError } from "../errors.js";

/** An OpenAI-compatible service reachable with `<preset>:<model>`. */
export interface ProviderPreset {
  baseURL: string;
  /** Environment variable holding the API key; undefined when the service needs none. */
  apiKeyEnv?: string;
}

/** `<NAME>_BASE_URL` (e.g. DEEPSEEK_BASE_URL) overrides a preset's base URL. */
export const PROVIDER_PRESETS: Record<string, ProviderPreset> = {
  deepseek: { baseURL: "https://api.deepseek.com/v1", apiKeyEnv: "DEEPSEEK_API_KEY" },
  qwen: { baseURL: "https://dashscope.aliyuncs.com/compatible-mode/v1", apiKeyEnv: "DASHSCOPE_API_KEY" },
  moonshot: { baseURL: "https://api.moonshot.cn/v1", apiKeyEnv: "MOONSHOT_API_KEY" },
  groq: { baseURL: "https://api.groq.com/openai/v1", apiKeyEnv: "GROQ_API_KEY" },
  zhipu: { baseURL: "https://open.bigmodel.cn/api/paas/v4", apiKeyEnv: "ZHIPU_API_KEY" },
  ollama: { baseURL: "http://127.0.0.1:11434/v1" },
};

export const PROVIDERS = ["openai", "scripted", ...Object.keys(PROVIDER_PRESETS)] as const;

export interface ModelSpec {
  provider: string;
  /** Model name; for `scripted`, the script file path as written. */
  model: string;
}

/** Parses `provider:model`; throws a one-line ConfigError naming the valid providers. */
export function parseModelSpec(spec: string): ModelSpec {
  const colon = spec.indexOf(":");
  const provider = colon > 0 ? spec.slice(0, colon) : "";
  const model = colon > 0 ? spec.slice(colon + 1).trim() : "";
  if (!provider || !model) {
    throw new ConfigError(
      `invalid model "${spec}": use provider:model, e.g. openai:gpt-4o-mini or scripted:examples/demo.script.yaml`,
    );
  }
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`unknown model provider "${provider}" in "${spec}": use one of ${PROVIDERS.join(", ")}`);
  }
  return { provider, model };
}
