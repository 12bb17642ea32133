/** Variables whose values are credentials: the model providers' keys, and anything named like a key or token. */
const SECRET_NAME = /(API_KEY|_TOKEN|_SECRET|PASSWORD)$/i;
/** Shorter values are too likely to occur by chance (e.g. "unused", "1"): they are not secrets worth a redaction. */
const MIN_SECRET_LENGTH = 8;
/** An Authorization header's value, whatever the key is. */
const AUTHORIZATION = /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/g;

export const REDACTED = "[redacted]";

/** The credential values set in `env`: those of `keyVariables` (the model providers' keys), and of variables named like a secret. */
export function secretValues(env: NodeJS.ProcessEnv, keyVariables: readonly string[]): string[] {
  const known = new Set(keyVariables);
  const values = Object.entries(env)
    .filter(([name, value]) => (known.has(name) || SECRET_NAME.test(name)) && value !== undefined && value.trim().length >= MIN_SECRET_LENGTH)
    .map(([, value]) => value!.trim());
  return [...new Set(values)];
}

/**
 * `text` (JSON or plain) with every secret value and Authorization header value replaced by
 * `[redacted]`. A secret is also matched in its JSON-escaped form, so JSON stays valid; the longest
 * secrets go first, so one that contains another is redacted whole.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1)])) redacted = redacted.split(form).join(REDACTED);
  }
  return redacted.replace(AUTHORIZATION, `$1 ${REDACTED}`);
}
