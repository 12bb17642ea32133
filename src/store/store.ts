import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { redactingSerializer, secretValues } from "../runs/redact.js";
import type { StoreSaving } from "./backend.js";
import { locateStore, storeError, using, type StoreAccess, type StoreOptions, type StoreTables } from "./tables.js";

export { isStoreLocked, lockedBeyondTimeout, storeStop, stopsRun, StoreLockedError } from "./sqlite/errors.js";
export {
  requireEval,
  requireThread,
  resolveStore,
  storeError,
  withTables,
  type StoreAccess,
  type StoreOptions,
  type StoreTables,
} from "./tables.js";

/** The run store: checkpoints, threads and what runs record, in the database of one of the backends (see registry.ts). */
export interface Store extends StoreTables, StoreSaving {
  /**
   * The values of the secrets in the environment the store was opened with (model keys are named
   * like secrets, …_API_KEY, so the name rules find them): redacted from everything written.
   */
  secrets: readonly string[];
}

export async function openStore(options: StoreOptions, access: StoreAccess): Promise<Store> {
  const { backend, location, env } = locateStore(options);
  const tables = await backend.openTables(location, access, env);
  try {
    const secrets = secretValues(env, []);
    const serde = redactingSerializer(new JsonPlusSerializer(), secrets);
    return { ...tables, secrets, ...(await backend.openSaving(tables, serde, access)) };
  } catch (error) {
    await tables.close();
    throw storeError(tables.path, error);
  }
}

/** Opens the store for one piece of work and closes it afterwards, whatever happens. */
export function withStore<T>(options: StoreOptions, access: StoreAccess, use: (store: Store) => Promise<T>): Promise<T> {
  return using(openStore(options, access), use);
}

/** The channel values of the thread's latest root checkpoint (empty before its first one). */
export async function latestValues(store: Store, threadId: string): Promise<Record<string, unknown>> {
  const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  return (tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>;
}
