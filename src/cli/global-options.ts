import type { Settings } from "../config/environment-settings.js";
import type { StoreOptions } from "../store/tables.js";

/** What every command is given besides its own flags (main.ts `withGlobals`). */
export interface GlobalOptions {
  /** `--db`. */
  db?: string;
  /** The settings resolved for this command (src/config). */
  settings: Settings;
}

/** The store a command works on: `--db`, else the one its settings name. */
export function storeOf(options: GlobalOptions): StoreOptions {
  return { db: options.db, env: options.settings.env };
}
