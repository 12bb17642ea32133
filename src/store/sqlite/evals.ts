import type Database from "better-sqlite3";
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

/** The evals of a SQLite store (see runs/evals.ts). */
export class SqliteEvals implements EvalTable {
  constructor(private readonly db: Database.Database) {}

  async create(record: EvalRecord, trials: readonly (TrialKey & { threadId: string })[]): Promise<void> {
    const insertEval = this.db.prepare(
      `INSERT INTO loopgraph_evals (eval_id, suite_file, suite_name, suite_hash, variants, tasks, repeat, concurrency, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertTrial = this.db.prepare(
      `INSERT INTO loopgraph_eval_trials (eval_id, seq, task, variant, repetition, thread_id, result) VALUES (?, ?, ?, ?, ?, ?, NULL)`,
    );
    this.db.transaction(() => {
      insertEval.run(...evalRowValues(record));
      trials.forEach((trial, seq) => insertTrial.run(record.id, seq, trial.task, trial.variant, trial.repetition, trial.threadId));
    })();
  }

  async get(evalId: string): Promise<EvalRecord | undefined> {
    const row = this.db.prepare(`SELECT * FROM loopgraph_evals WHERE eval_id = ?`).get(evalId) as EvalRow | undefined;
    return row && evalOfRow(row);
  }

  async list(): Promise<EvalRecord[]> {
    return (this.db.prepare(`SELECT * FROM loopgraph_evals ORDER BY created_at DESC, eval_id`).all() as EvalRow[]).map(evalOfRow);
  }

  async setStatus(evalId: string, status: EvalRecord["status"]): Promise<void> {
    this.db
      .prepare(`UPDATE loopgraph_evals SET status = ?, updated_at = ? WHERE eval_id = ?`)
      .run(status, new Date().toISOString(), evalId);
  }

  async finishTrial(evalId: string, result: TrialResult): Promise<void> {
    this.db
      .prepare(`UPDATE loopgraph_eval_trials SET result = ? WHERE eval_id = ? AND task = ? AND variant = ? AND repetition = ?`)
      .run(JSON.stringify(result), evalId, result.task, result.variant, result.repetition);
  }

  async trials(evalId: string): Promise<StoredTrial[]> {
    return (this.db.prepare(`SELECT * FROM loopgraph_eval_trials WHERE eval_id = ? ORDER BY seq`).all(evalId) as TrialRow[]).map(
      trialOfRow,
    );
  }

  async evalOfThread(threadId: string): Promise<string | undefined> {
    const row = this.db.prepare(`SELECT eval_id FROM loopgraph_eval_trials WHERE thread_id = ?`).get(threadId) as
      | { eval_id: string }
      | undefined;
    return row?.eval_id;
  }

  async delete(evalId: string): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM loopgraph_eval_trials WHERE eval_id = ?`).run(evalId);
      this.db.prepare(`DELETE FROM loopgraph_evals WHERE eval_id = ?`).run(evalId);
    })();
  }
}
