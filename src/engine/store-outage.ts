/**
 * A worker riding out an outage of its PostgreSQL store (the server stopped, restarting, the
 * network gone): what failed on a lost connection is tried again with backoff until the server
 * answers, with one log line when the store is lost and one when it is back, never one per try.
 */
import { isConnectionLost, lostReason } from "../store/postgres/outage.js";

/** The first wait before trying a lost store again; each further one doubles, up to the last. */
const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 5_000;

export class StoreOutage {
  private down = false;

  constructor(
    private readonly log: (line: string) => void,
    private readonly stop: AbortSignal,
  ) {}

  /**
   * Runs `work` until it gets through: a lost connection is waited out, with backoff, and tried
   * again; any other error passes, and so does a lost connection once the worker stops.
   */
  async retry<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await work();
        this.reached();
        return result;
      } catch (error) {
        if (!isConnectionLost(error) || this.stop.aborted) throw error;
        await this.wait(error, attempt);
      }
    }
  }

  /** Notes a lost connection (logged once per outage) and waits the backoff of the `attempt`th try, or less if the worker stops. */
  async wait(error: unknown, attempt: number): Promise<void> {
    if (!this.down)
      this.log(`lost the store (${lostReason(error)}): trying again, every ${LAST_RETRY_MS / 1000} s at most, until it is back`);
    this.down = true;
    const ms = Math.min(FIRST_RETRY_MS * 2 ** Math.min(attempt, 10), LAST_RETRY_MS);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.stop.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.stop.addEventListener("abort", done, { once: true });
    });
  }

  /** Notes that the store answered (logged when it was lost). */
  reached(): void {
    if (this.down) this.log("the store is back");
    this.down = false;
  }
}
