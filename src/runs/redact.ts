/** Names of variables that hold credentials: any name containing one of these words. */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL/i;
/** A URL with a password in it (`postgres://user:password@host/db`): a connection string, whatever its name. */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]+@/i;

/**
 * Whether an environment variable holds a credential: one of `keyVariables` (the model providers'
 * keys), a name containing KEY, SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE or CREDENTIAL, or a
 * value that is a URL with a password. Such variables are kept from the agent and redacted from
 * what loopgraph writes.
 */
export function isSecretVariable(name: string, value: string | undefined, keyVariables: readonly string[]): boolean {
  return keyVariables.includes(name) || SECRET_NAME.test(name) || (value !== undefined && URL_WITH_PASSWORD.test(value));
}
/** Shorter values are too likely to occur by chance (e.g. "unused", "1"): they are not secrets worth a redaction. */
const MIN_SECRET_LENGTH = 8;
/** An Authorization header's value, whatever the key is. */
const AUTHORIZATION = /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/g;

export const REDACTED = "[redacted]";

/** The credential values set in `env`: those of `keyVariables` (the model providers' keys), and of variables named like a secret. */
export function secretValues(env: NodeJS.ProcessEnv, keyVariables: readonly string[]): string[] {
  const values = Object.entries(env)
    .filter(([name, value]) => isSecretVariable(name, value, keyVariables) && value !== undefined && value.trim().length >= MIN_SECRET_LENGTH)
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
