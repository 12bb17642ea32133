import { ConfigError } from "../errors.js";

/** An OpenAI-compatible service reachable with `<preset>:<model>`. */
export interface ProviderPreset {
  baseURL: string;
  /** Environment variable holding the API key; undefined when the service needs none. */
  apiKeyEnv?: string;
  /** Variables read when `apiKeyEnv` is not set (e.g. GEMINI_API_KEY for google). */
  otherKeyEnvs?: readonly string[];
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

/** Providers with an API of their own, each through its LangChain package (`<NAME>_BASE_URL` overrides the base URL as well). */
export const NATIVE_PROVIDERS: Record<string, ProviderPreset> = {
  anthropic: { baseURL: "https://api.anthropic.com", apiKeyEnv: "ANTHROPIC_API_KEY" },
  google: { baseURL: "https://generativelanguage.googleapis.com", apiKeyEnv: "GOOGLE_API_KEY", otherKeyEnvs: ["GEMINI_API_KEY"] },
};

/** Other names of a provider, as users of other tools write them. */
const PROVIDER_ALIASES: Record<string, string> = { gemini: "google" };

export const PROVIDERS = ["openai", "scripted", ...Object.keys(NATIVE_PROVIDERS), ...Object.keys(PROVIDER_PRESETS)] as const;

export interface ModelSpec {
  provider: string;
  /** Model name; for `scripted`, the script file path as written. */
  model: string;
}

/** An OpenAI-compatible provider the user defined (`providers:` in their config file). */
export interface UserProvider extends ProviderPreset {
  /** The model of `<name>` alone (or `<name>:`). */
  defaultModel?: string;
}

/** The providers the user defined in their config file, by name. */
export type UserProviders = Readonly<Record<string, UserProvider>>;

/** Parses `provider:model` (or a user provider's name alone, for its default model); throws a one-line ConfigError naming the valid providers. */
export function parseModelSpec(spec: string, users: UserProviders = {}): ModelSpec {
  const colon = spec.indexOf(":");
  const named = colon > 0 ? spec.slice(0, colon) : colon < 0 && users[spec.trim()] ? spec.trim() : "";
  const provider = PROVIDER_ALIASES[named] ?? named;
  const model = (colon > 0 ? spec.slice(colon + 1).trim() : "") || (users[provider]?.defaultModel ?? "");
  if (!provider || !model) {
    throw new ConfigError(
      `invalid model "${spec}": use provider:model, e.g. openai:gpt-4o-mini, or scripted:<file.yaml> for answers read from a script`,
    );
  }
  if (!(PROVIDERS as readonly string[]).includes(provider) && !users[provider]) {
    throw new ConfigError(`unknown model provider "${named}" in "${spec}": use one of ${[...PROVIDERS, ...Object.keys(users)].join(", ")}`);
  }
  return { provider, model };
}

/** Where and how to reach an OpenAI-compatible provider. */
export interface ProviderEndpoint {
  baseURL: string;
  apiKey: string;
  /** The variable the key came from, named in auth error messages; undefined when none is needed. */
  apiKeyEnv?: string;
}

const OPENAI_ENDPOINT: ProviderPreset = { baseURL: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" };

/** The variables the model providers' API keys are read from. */
export const MODEL_KEY_VARIABLES: readonly string[] = [
  OPENAI_ENDPOINT,
  ...Object.values(NATIVE_PROVIDERS),
  ...Object.values(PROVIDER_PRESETS),
].flatMap((preset) => [...(preset.apiKeyEnv ? [preset.apiKeyEnv] : []), ...(preset.otherKeyEnvs ?? [])]);

/** The OpenAI client refuses an empty key even for services that ignore it (ollama). */
const UNUSED_API_KEY = "unused";

/** How to try loopgraph with no key: a command that works from any folder (the package's scripts are not in the user's). */
export const OFFLINE_MODEL_HINT = "loopgraph demo";

/**
 * Base URL and key of a network provider, from `env` only: `<NAME>_BASE_URL` overrides the base URL.
 * A missing key is a one-line ConfigError naming the variable to set.
 */
export function resolveProviderEndpoint(spec: ModelSpec, env: NodeJS.ProcessEnv, users: UserProviders = {}): ProviderEndpoint {
  const preset =
    spec.provider === "openai"
      ? OPENAI_ENDPOINT
      : (NATIVE_PROVIDERS[spec.provider] ?? PROVIDER_PRESETS[spec.provider] ?? users[spec.provider]);
  if (!preset) throw new ConfigError(`"${spec.provider}" is not a network model provider`);
  const baseURL = env[`${spec.provider.toUpperCase()}_BASE_URL`]?.trim() || preset.baseURL;
  if (!preset.apiKeyEnv) return { baseURL, apiKey: UNUSED_API_KEY };
  const keyEnv = [preset.apiKeyEnv, ...(preset.otherKeyEnvs ?? [])].find((name) => env[name]?.trim()) ?? preset.apiKeyEnv;
  const apiKey = env[keyEnv]?.trim();
  if (!apiKey) {
    throw new ConfigError(
      `${preset.apiKeyEnv} is not set: export ${preset.apiKeyEnv}=<your key> to use ${spec.provider}:${spec.model}, ` +
        `or try offline with ${OFFLINE_MODEL_HINT}`,
    );
  }
  return { baseURL, apiKey, apiKeyEnv: keyEnv };
}
