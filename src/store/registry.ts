/**
 * The store backends: the one place that lists them. Opening a store, `doctor` and the settings'
 * check look a location's backend up here. To add a backend: a folder `src/store/<name>/` whose
 * `backend.ts` exports a StoreBackend (backend.ts), and one line in STORE_BACKENDS below.
 */
import type { AnyStoreBackend } from "./backend.js";
import { postgresBackend } from "./postgres/backend.js";
import { sqliteBackend } from "./sqlite/backend.js";

/** Each accepts locations no other does: SQLite a file's path, PostgreSQL a postgres:// URL. */
const STORE_BACKENDS: readonly AnyStoreBackend[] = [sqliteBackend, postgresBackend];

export class StoreBackendRegistry {
  constructor(private readonly backends: readonly AnyStoreBackend[]) {}

  all(): readonly AnyStoreBackend[] {
    return this.backends;
  }

  /** The backend of the store `location` (trimmed) names, or undefined when none accepts it. */
  forLocation(location: string): AnyStoreBackend | undefined {
    return this.backends.find((backend) => backend.accepts(location));
  }
}

export const storeBackends = new StoreBackendRegistry(STORE_BACKENDS);
