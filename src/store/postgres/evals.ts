import type pg from "pg";
import {
  evalOfRow,
  evalRowValues,
  trialOfRow,
  type EvalRecord,
  type EvalRow,
  type EvalTable,
  type StoredTrial,
  type TrialKey,
  type TrialResult,
  type TrialRow,
} from "../../runs/evals.js";
import { inTransaction } from "./schema.js";

/** The evals of a PostgreSQL store (see runs/evals.ts). */
export class PostgresEvals implements EvalTable {
  constructor(private readonly pool: pg.Pool) {}

  async create(record: EvalRecord, trials: readonly (TrialKey & { threadId: string })[]): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query(
        `INSERT INTO loopgraph_evals (eval_id, suite_file, suite_name, suite_hash, variants, tasks, repeat, concurrency, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        evalRowValues(record),
      );
      // One statement for every trial: their columns as parallel arrays.
      await client.query(
        `INSERT INTO loopgraph_eval_trials (eval_id, seq, task, variant, repetition, thread_id)
         SELECT $1, t.seq, t.task, t.variant, t.repetition, t.thread_id
         FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::text[]) AS t(seq, task, variant, repetition, thread_id)`,
        [
          record.id,
          trials.map((_, seq) => seq),
          trials.map((trial) => trial.task),
          trials.map((trial) => trial.variant),
          trials.map((trial) => trial.repetition),
          trials.map((trial) => trial.threadId),
        ],
      );
    });
  }

  async get(evalId: string): Promise<EvalRecord | undefined> {
    const { rows } = await this.pool.query<EvalRow>(`SELECT * FROM loopgraph_evals WHERE eval_id = $1`, [evalId]);
    return rows[0] && evalOfRow(rows[0]);
  }

  async list(): Promise<EvalRecord[]> {
    const { rows } = await this.pool.query<EvalRow>(`SELECT * FROM loopgraph_evals ORDER BY created_at DESC, eval_id`);
    return rows.map(evalOfRow);
  }

  async setStatus(evalId: string, status: EvalRecord["status"]): Promise<void> {
    await this.pool.query(`UPDATE loopgraph_evals SET status = $1, updated_at = $2 WHERE eval_id = $3`, [
      status,
      new Date().toISOString(),
      evalId,
    ]);
  }

  async finishTrial(evalId: string, result: TrialResult): Promise<void> {
    await this.pool.query(
      `UPDATE loopgraph_eval_trials SET result = $1 WHERE eval_id = $2 AND task = $3 AND variant = $4 AND repetition = $5`,
      [JSON.stringify(result), evalId, result.task, result.variant, result.repetition],
    );
  }

  async trials(evalId: string): Promise<StoredTrial[]> {
    const { rows } = await this.pool.query<TrialRow>(`SELECT * FROM loopgraph_eval_trials WHERE eval_id = $1 ORDER BY seq`, [evalId]);
    return rows.map(trialOfRow);
  }

  async evalOfThread(threadId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ eval_id: string }>(`SELECT eval_id FROM loopgraph_eval_trials WHERE thread_id = $1`, [
      threadId,
    ]);
    return rows[0]?.eval_id;
  }

  async delete(evalId: string): Promise<void> {
    await this.pool.query(
      `WITH trials AS (DELETE FROM loopgraph_eval_trials WHERE eval_id = $1) DELETE FROM loopgraph_evals WHERE eval_id = $1`,
      [evalId],
    );
  }
}
