import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { syncSerializerOf, type SyncSerializer, type WithSyncSerializer } from "../checkpoint/fast-serde.js";
import picomatch from "picomatch";
import { URL_WITH_PASSWORD, urlPasswords } from "./url-password.js";

/** Names of variables that hold credentials: any name containing one of these words. */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL/i;

/** A comma-separated list of variable names (`*` wildcards), as `LOOPGRAPH_SHELL_ENV_INCLUDE`/`_EXCLUDE` give them. */
export function variableNames(list: string | undefined): string[] {
  return (list ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
}

/** Whether a name matches one of `globs`. */
export function nameMatcher(globs: readonly string[]): (name: string) => boolean {
  return globs.length > 0 ? picomatch([...globs]) : () => false;
}

/**
 * The variables the agent's commands get from loopgraph's environment without being named by the
 * user (as Codex's `inherit = "core"`): what a shell and its programs need to run, none a secret.
 */
const CORE_VARIABLE = /^(PATH|HOME|USER|LOGNAME|SHELL|TERM|TZ|TMPDIR|LANG|LANGUAGE|LC_[A-Z]+)$/;

export function isCoreVariable(name: string): boolean {
  return CORE_VARIABLE.test(name);
}

/**
 * A value that may be a credential whatever its variable is called (`MYSQL_PWD`, `DB_PASS`,
 * `SENTRY_DSN`): a URL with a user part, or one word of 12 characters or more with letters and
 * digits in it that is not a path. Words, numbers, paths, plain URLs and text with spaces are not.
 */
function looksLikeSecret(value: string): boolean {
  const text = value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]+@/i.test(text)) return true;
  if (text.length < 12 || /\s/.test(text) || /^[/~.]/.test(text) || text.includes("://")) return false;
  return /[a-z]/i.test(text) && /[0-9]/.test(text);
}

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

/**
 * The credential values set in `env`: those of `keyVariables` (the model providers' keys), of
 * variables named like a secret or holding a URL with a password, and of those the user removes
 * from the agent's environment (`LOOPGRAPH_SHELL_ENV_EXCLUDE`). Every one is redacted from what
 * loopgraph writes.
 */
export function secretValues(env: NodeJS.ProcessEnv, keyVariables: readonly string[]): string[] {
  const excluded = nameMatcher(variableNames(env.LOOPGRAPH_SHELL_ENV_EXCLUDE));
  // A variable the agent does not get may hold a credential by any name: its value is one when it looks like one.
  const unnamed = (name: string, value: string) => !isCoreVariable(name) && !name.startsWith("LOOPGRAPH_") && looksLikeSecret(value);
  const values = Object.entries(env)
    .filter(
      ([name, value]) => value !== undefined && (isSecretVariable(name, value, keyVariables) || excluded(name) || unnamed(name, value)),
    )
    // A connection string's password is a secret of its own: a command may print it alone.
    .flatMap(([, value]) => [value!.trim(), ...urlPasswords(value!)])
    .filter((value) => value.length >= MIN_SECRET_LENGTH);
  return [...new Set(values)];
}

/**
 * The forms a secret takes in text, longest first: as is, JSON-escaped (so JSON stays valid),
 * reversed, in hex, and in base64 at each of the three byte alignments it can have inside a
 * longer encoded text (`base64 .env`): the characters that encode only the secret's bytes.
 */
function secretForms(secrets: readonly string[]): string[] {
  let forms = formsOf.get(secrets);
  if (forms === undefined) {
    forms = computeForms(secrets);
    formsOf.set(secrets, forms);
  }
  return forms;
}

/** The forms of each list of secrets, computed once: a run redacts with the same list all along. */
const formsOf = new WeakMap<readonly string[], string[]>();

function computeForms(secrets: readonly string[]): string[] {
  const forms = secrets.flatMap((secret) => {
    const bytes = Buffer.from(secret);
    const hex = bytes.toString("hex");
    return [secret, JSON.stringify(secret).slice(1, -1), [...secret].reverse().join(""), hex, hex.toUpperCase(), ...base64Forms(bytes)];
  });
  return [...new Set(forms)].filter((form) => form.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

function base64Forms(bytes: Buffer): string[] {
  return [0, 1, 2].map((offset) => {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString("base64")
      .replace(/=+$/, "");
    // Leading characters mix in the bytes before the secret, trailing ones the bytes after it.
    const first = Math.ceil((offset * 4) / 3);
    const last = Math.floor(((offset + bytes.length) * 4) / 3);
    return encoded.slice(first, last);
  });
}

/** `text` with every secret value replaced by `[redacted]`, also in its JSON-escaped form; one that contains another is redacted whole. */
export function redactValues(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const form of secretForms(secrets)) if (redacted.includes(form)) redacted = redacted.split(form).join(REDACTED);
  return redacted;
}

/**
 * `text` (JSON or plain) with every secret value and Authorization header value replaced by
 * `[redacted]`: for records of what went to and came from a model provider.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return redactValues(text, secrets).replace(AUTHORIZATION, `$1 ${REDACTED}`);
}

/** A JSON value with every secret value in its strings (and keys) redacted; the value itself when there is none. */
export function redactJson<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0 || value === undefined) return value;
  const text = JSON.stringify(value);
  if (text === undefined) return value;
  const redacted = redactValues(text, secrets);
  return redacted === text ? value : (JSON.parse(redacted) as T);
}

/**
 * Redacts secret values from a byte stream written in chunks: a secret split across two chunks
 * is still found, because the last bytes of each chunk (one less than the longest secret) wait
 * for the next one. `end()` gives what is left.
 */
export class StreamRedactor {
  private readonly forms: Buffer[];
  private readonly replacement = Buffer.from(REDACTED);
  private carry: Buffer = Buffer.alloc(0);

  constructor(secrets: readonly string[]) {
    this.forms = secretForms(secrets).map((form) => Buffer.from(form));
  }

  /** The bytes of `chunk` that can be passed on now, redacted. */
  write(chunk: Buffer): Buffer {
    if (this.forms.length === 0) return chunk;
    const text = this.redact(this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk);
    const cut = text.length - this.pendingPrefix(text);
    this.carry = text.subarray(cut);
    return text.subarray(0, cut);
  }

  /**
   * How many bytes at the end of `text` could be the start of a secret that the next chunk
   * completes: the longest end of it that begins some form. Only those wait (output shown live is
   * not held back for nothing).
   */
  private pendingPrefix(text: Buffer): number {
    let longest = 0;
    for (const form of this.forms) {
      for (let length = Math.min(form.length - 1, text.length); length > longest; length--) {
        if (text.subarray(text.length - length).equals(form.subarray(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }

  /** The bytes held back, redacted. */
  end(): Buffer {
    const rest = this.redact(this.carry);
    this.carry = Buffer.alloc(0);
    return rest;
  }

  private redact(bytes: Buffer): Buffer {
    let current = bytes;
    for (const form of this.forms) {
      let at = current.indexOf(form);
      if (at < 0) continue;
      const parts: Buffer[] = [];
      let from = 0;
      while (at >= 0) {
        parts.push(current.subarray(from, at), this.replacement);
        from = at + form.length;
        at = current.indexOf(form, from);
      }
      parts.push(current.subarray(from));
      current = Buffer.concat(parts);
    }
    return current;
  }
}

/**
 * A checkpoint serializer that redacts the secrets' values from what it writes (JSON, as text),
 * so no checkpoint or pending write holds one, whatever a node put in the state.
 */
export function redactingSerializer(inner: SerializerProtocol, secrets: readonly string[]): SerializerProtocol {
  if (secrets.length === 0) return inner;
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const redact = ([type, bytes]: [string, Uint8Array]): [string, Uint8Array] => {
    if (type !== "json") return [type, bytes];
    const text = decoder.decode(bytes);
    const redacted = redactValues(text, secrets);
    return [type, redacted === text ? bytes : encoder.encode(redacted)];
  };
  const serializer: SerializerProtocol & WithSyncSerializer = {
    async dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
      return redact(await inner.dumpsTyped(data));
    },
    loadsTyped: (type, data) => inner.loadsTyped(type, data),
    // The inner serializer's synchronous twin, writing redacted: the saver then also reads plain JSON as it would (see its decodeChannel).
    syncSerializer(): SyncSerializer | undefined {
      const sync = syncSerializerOf(inner);
      return (
        sync && {
          dumpsTypedSync: (value) => {
            const dumped = sync.dumpsTypedSync(value);
            return dumped && redact(dumped);
          },
          loadsJsonItems: (texts) => sync.loadsJsonItems(texts),
          loadsJsonArray: (text, itemText) => sync.loadsJsonArray(text, itemText),
        }
      );
    },
  };
  return serializer;
}
