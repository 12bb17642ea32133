/**
 * The queue of runs on PostgreSQL, on pg-boss (a well-kept job queue in the same database, see
 * docs/dependencies.md): one job per thread at a time asks a worker to tend the thread (start it, take it over
 * from a dead owner, or look again later). The thread's record, not the job, says who runs it:
 * the one-owner claim of the thread table is the lock; jobs only bring threads to workers.
 */
import type PgBoss from "pg-boss";
import { underMigrationLock } from "../store/postgres/schema.js";
import { connectTimeoutMs, openPostgresPool, postgresError } from "../store/postgres/connection.js";

/** The queue's name. */
const QUEUE = "loopgraph-runs";
/** The schema pg-boss keeps its tables in, beside loopgraph's. */
const SCHEMA = "loopgraph_queue";

/** What a job carries: the thread to tend. */
export interface TendJob {
  id: string;
  threadId: string;
}

/** Seconds a worker may hold a job before pg-boss gives it to another (a worker holds one for a claim, not for the run). */
const JOB_EXPIRY_S = 60;

/**
 * Creates the queue, one process at a time. pg-boss's own creation is not safe from several at
 * once: two creating the same queue deadlock (one inserts the queue's row and then alters the
 * job table, which waits for the other's pending insert of that row), and the loser's error is
 * the whole command's. Under the migrations' lock, held by a transaction on a connection of its
 * own, the second finds it made.
 */
async function createQueueOnce(boss: PgBoss, url: string, env: NodeJS.ProcessEnv): Promise<void> {
  const pool = await openPostgresPool(url, env, 1);
  try {
    await underMigrationLock(pool, async () => {
      if (await boss.getQueue(QUEUE)) return;
      await boss.createQueue(QUEUE, { name: QUEUE, policy: "short", retryLimit: 1_000_000, retryDelay: 1, expireInSeconds: JOB_EXPIRY_S });
    });
  } finally {
    await pool.end();
  }
}

export class RunQueue {
  private constructor(
    private readonly boss: PgBoss,
    readonly url: string,
  ) {}

  /**
   * Connects to the queue of the PostgreSQL store `url` (creating pg-boss's schema and the queue
   * when missing). `supervise`: this process also runs pg-boss's maintenance (expiring jobs of
   * workers that died holding them), as workers do.
   */
  static async open(url: string, env: NodeJS.ProcessEnv, options: { supervise?: boolean } = {}): Promise<RunQueue> {
    const { default: Boss } = await import("pg-boss");
    const boss = new Boss({
      connectionString: url,
      schema: SCHEMA,
      application_name: "loopgraph-queue",
      max: 4,
      supervise: options.supervise ?? false,
      schedule: false,
      maintenanceIntervalSeconds: 30,
      connectionTimeoutMillis: connectTimeoutMs(env),
    } as PgBoss.ConstructorOptions);
    // pg-boss reports connection trouble as events; the next query says it in one line.
    boss.on("error", () => undefined);
    try {
      await boss.start();
      if (!(await boss.getQueue(QUEUE))) await createQueueOnce(boss, url, env);
    } catch (error) {
      // The start's own error is the one to report; a failing stop of a half-started queue adds nothing.
      await boss.stop({ graceful: false, wait: false }).catch(() => undefined);
      throw postgresError(url, error);
    }
    return new RunQueue(boss, url);
  }

  /**
   * Asks a worker to tend the thread, at once or after `afterSeconds`. At most one such request
   * waits per thread (the queue's `short` policy on the thread's key): a second is not added.
   */
  async request(threadId: string, afterSeconds = 0): Promise<void> {
    await this.boss.send(QUEUE, { threadId }, { singletonKey: threadId, ...(afterSeconds > 0 ? { startAfter: afterSeconds } : {}) });
  }

  /** Up to `count` requests due now, each held by this process until `done`. */
  async take(count: number): Promise<TendJob[]> {
    const jobs = (await this.boss.fetch<{ threadId: string }>(QUEUE, { batchSize: count })) ?? [];
    return jobs.map((job) => ({ id: job.id, threadId: job.data.threadId }));
  }

  /** The request is dealt with. */
  async done(job: TendJob): Promise<void> {
    await this.boss.complete(QUEUE, job.id);
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true, timeout: 5_000 });
  }
}
