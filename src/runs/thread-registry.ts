import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { ApprovalMode, CoderMode } from "../state/thread.js";
import type { RunStatus } from "../state/thread.js";

/** A run's own record, beside its checkpoints: what it ran, with which settings, and how it ended. */
export interface ThreadRecord {
  threadId: string;
  graphFile: string;
  graphName: string;
  /** Fingerprint of the graph's files when the run started (see graphFingerprint). */
  graphHash?: string;
  task: string;
  /** Run-level model spec (never a key); undefined when every node names its own. */
  model?: string;
  /** Approval mode of the run (`--approval`). */
  approval: ApprovalMode;
  /** Coder mode of the run (`--mode`); undefined: the nodes' own. */
  mode?: CoderMode;
  workspace: string;
  /** `queued`: waiting for a worker (`run --queue`), owned by no process. */
  status: RunStatus | "running" | "queued";
  /** Process running it while status is "running" (after that, the last one that ran it). */
  pid?: number;
  /** Host of that process (unset in records of releases before owners were recorded). */
  host?: string;
  /** Start time of that process (see `processStart`): tells it from a later process given the same pid. */
  ownerStart?: number;
  /** When that process last said it still runs the thread (see HEARTBEAT_MS). */
  heartbeatAt?: string;
  /** The process groups of the shell commands that process is running for the thread (see `commandStarted`). */
  commandGroups?: CommandGroup[];
  /** Set by `asSeen`: the thread was marked running by this process, which is gone. */
  goneOwner?: number;
  error?: string;
  /** Why a paused run waits: the breakpoint or the pending question. */
  pause?: { reason: string; node?: string; when?: string; value?: unknown; pending?: { id: string; node: string; value: unknown }[] };
  createdAt: string;
  updatedAt: string;
}

export interface ThreadRow {
  thread_id: string;
  graph_file: string;
  graph_name: string;
  graph_hash: string | null;
  task: string;
  model: string | null;
  approval: ApprovalMode;
  /** Absent in rows read before store version 6. */
  mode?: CoderMode | null;
  workspace: string;
  status: ThreadRecord["status"];
  pid: number | null;
  owner_host: string | null;
  owner_start: number | string | null;
  heartbeat_at: string | null;
  command_groups: string | null;
  error: string | null;
  pause: string | null;
  created_at: string;
  updated_at: string;
}

/** How often a process running a thread writes its heartbeat. */
export const HEARTBEAT_MS = 10_000;
/** A thread's owner on another host is taken for dead once its heartbeat is this old. */
export const HEARTBEAT_EXPIRY_MS = 30_000;

/** A process that runs threads: its pid, host and start time. */
export interface ThreadOwner {
  pid: number;
  host: string;
  /** See `processStart`; undefined where the system does not tell it. */
  start?: number;
}

/** This process, as the owner of the threads it runs. */
export const THIS_PROCESS: ThreadOwner = { pid: process.pid, host: hostname(), start: processStart(process.pid) };

/** A command's process group: its id, and when its leader started (see `processStart`), to tell it from a later group given the same id. */
export interface CommandGroup {
  pgid: number;
  start?: number;
}

/**
 * What a claim found: the thread's record as it was before this process took it (and the process
 * groups the dead owner's commands left, killed), or the record of the live process that holds it.
 */
export type Claim = { claimed: true; before: ThreadRecord; killed: number[] } | { claimed: false; holder: ThreadRecord };

/** Fields of a new thread's record (see `ThreadTable.create`). */
export type NewThread = Pick<
  ThreadRecord,
  "threadId" | "graphFile" | "graphHash" | "graphName" | "task" | "model" | "approval" | "mode" | "workspace"
>;

/**
 * The threads of a run store (SQLite: ThreadRegistry; PostgreSQL: PostgresThreadRegistry), and
 * the one-owner rule: a thread is run by one process at a time, which writes its heartbeat while
 * it runs it.
 */
/** Every table holding rows of a thread (by its `thread_id`), the thread's own record last. */
export const THREAD_DATA_TABLES = [
  "loopgraph_checkpoints",
  "loopgraph_checkpoint_blobs",
  "loopgraph_checkpoint_items",
  "loopgraph_checkpoint_writes",
  "loopgraph_inbox",
  "loopgraph_recordings",
  "loopgraph_snapshots",
  "loopgraph_repo_workspaces",
  "loopgraph_threads",
] as const;

export interface ThreadTable {
  /**
   * Records a new thread, running in this process, in one transaction with the check that its id
   * is free. Returns the record that holds the id when it is taken (nothing is written).
   */
  create(record: NewThread, options?: { queued?: boolean }): Promise<ThreadRecord | undefined>;
  /**
   * Takes the thread for this process, in one transaction with the check of who holds it: the
   * claim succeeds when no live process runs the thread (see `ownerAlive`), or this one does. The
   * thread is then marked running here, with `settings` when given, and this process writes its
   * heartbeat until the thread ends (`markEnded`) or is given back (`release`). Undefined: no such thread.
   */
  claim(threadId: string, settings?: { model?: string; approval?: ApprovalMode }): Promise<Claim | undefined>;
  /** Marks the thread as running in this process (a resume), with the settings it now runs with; see `claim`. */
  markRunning(threadId: string, settings: ClaimSettings): Promise<Claim | undefined>;
  /** Records the process group of a command this process runs for the thread, until `commandEnded`. */
  commandStarted(threadId: string, pgid: number): Promise<void>;
  /** The command of that process group has ended (its group is not to be killed any more). */
  commandEnded(threadId: string, pgid: number): Promise<void>;
  /** Gives back a thread this process claimed and did not run: its status, error and pause as they were `before`. */
  release(threadId: string, before: ThreadRecord): Promise<void>;
  /**
   * Records how a run ended; a status other than running ends this process's hold on the thread
   * (its pid stays, as who ran it last). `queued`: back in the queue, for any worker.
   */
  markEnded(threadId: string, status: RunStatus | "queued", error?: string, pause?: ThreadRecord["pause"]): Promise<void>;
  /**
   * Puts a thread whose record names this process (see `ownedHere`) back in the queue, in one
   * statement with that check: a thread another process took meanwhile is left alone. Whether it was put back.
   */
  requeueOwned(threadId: string): Promise<boolean>;
  get(threadId: string): Promise<ThreadRecord | undefined>;
  /** Every thread, newest first. */
  list(): Promise<ThreadRecord[]>;
  /**
   * Deletes the thread and everything the store holds of it (THREAD_DATA_TABLES: checkpoints,
   * inbox, recordings, snapshot log, …), in one transaction with the check that no live process
   * runs it: `deleted: false` with the record when one does (nothing is deleted), undefined when
   * there is no such thread.
   */
  delete(threadId: string): Promise<{ deleted: true; record: ThreadRecord } | { deleted: false; holder: ThreadRecord } | undefined>;
  /** Stops this table's heartbeats (the store closes): the threads' owners then age on other hosts' clocks. */
  close(): void;
}

/**
 * What a claim does to a thread's record `before` it: undefined when a live process holds it;
 * else whether it is a takeover from a dead owner, and the process groups its commands left,
 * killed (only on this host can they be reached).
 */
export function claimFrom(before: ThreadRecord): { takeover: boolean; killed: number[] } | undefined {
  if (isRunningElsewhere(before)) return undefined;
  const takeover = before.status === "running" && !ownedHere(before);
  const killed = takeover && sameHost(before) ? (before.commandGroups ?? []).filter(killLeftover).map((group) => group.pgid) : [];
  return { takeover, killed };
}

/** The command groups recorded after one started (`pgid`, with its start time) or ended (`start` false). */
export function changedGroups(groups: readonly CommandGroup[], pgid: number, started: boolean): CommandGroup[] {
  const others = groups.filter((group) => group.pgid !== pgid);
  return started ? [...others, { pgid, start: processStart(pgid) }] : others;
}

/**
 * The heartbeats of the threads this process runs through one table: `write` every HEARTBEAT_MS
 * (false: the thread is not ours any more, the beat stops). The timers keep no process alive.
 */
export class Heartbeats {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly write: (threadId: string, now: string) => Promise<boolean>) {}

  start(threadId: string): void {
    if (this.timers.has(threadId)) return;
    const timer = setInterval(() => {
      this.write(threadId, new Date().toISOString()).then(
        (ours) => {
          // Not ours any more (ended through another connection, or taken over): stop.
          if (!ours) this.stop(threadId);
        },
        // A busy or closed store: the next beat tries again (the store's close stops the timer).
        () => undefined,
      );
    }, HEARTBEAT_MS);
    timer.unref();
    this.timers.set(threadId, timer);
  }

  stop(threadId: string): void {
    clearInterval(this.timers.get(threadId));
    this.timers.delete(threadId);
  }

  stopAll(): void {
    for (const threadId of [...this.timers.keys()]) this.stop(threadId);
  }
}

/** The named parameters of a new thread's row (both stores' insert statements take them): running in this process, or queued for a worker. */
export function newThreadParams(record: NewThread, queued = false) {
  const now = new Date().toISOString();
  return {
    thread_id: record.threadId,
    graph_file: record.graphFile,
    graph_hash: record.graphHash ?? null,
    graph_name: record.graphName,
    task: record.task,
    model: record.model ?? null,
    approval: record.approval,
    mode: record.mode ?? null,
    workspace: record.workspace,
    status: queued ? "queued" : "running",
    ...(queued ? { pid: null, host: null, start: null } : ownerParams()),
    heartbeat: queued ? null : now,
    now,
  };
}

/** The named parameters of a claim's update. */
export function claimParams(threadId: string, settings: ClaimSettings) {
  return {
    thread_id: threadId,
    ...ownerParams(),
    model: settings.model ?? null,
    approval: settings.approval ?? null,
    mode: settings.mode ?? null,
    now: new Date().toISOString(),
  };
}

/** The run settings a claim records with the thread: each one given replaces the recorded one. */
export interface ClaimSettings {
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
}

/** The named parameters of a release: the record's status, error and pause as they were `before` the claim. */
export function releaseParams(threadId: string, before: ThreadRecord) {
  return {
    thread_id: threadId,
    status: before.status === "running" ? "interrupted" : before.status,
    error: before.error ?? null,
    pause: before.pause ? JSON.stringify(before.pause) : null,
    pid: THIS_PROCESS.pid,
    host: THIS_PROCESS.host,
    now: new Date().toISOString(),
  };
}

/** The named parameters of how a run ended. */
export function endParams(threadId: string, status: RunStatus | "queued", error?: string, pause?: ThreadRecord["pause"]) {
  return { thread_id: threadId, status, error: error ?? null, pause: pause ? JSON.stringify(pause) : null, now: new Date().toISOString() };
}

/** The named parameters of `requeueOwned`: the thread and this process, as `ownedHere` compares them. */
export function requeueParams(threadId: string) {
  return { thread_id: threadId, ...ownerParams(), now: new Date().toISOString() };
}

function ownerParams() {
  return { pid: THIS_PROCESS.pid, host: THIS_PROCESS.host, start: THIS_PROCESS.start ?? null };
}

/** A thread's record from its row (the columns are the same in both stores). */
export function fromRow(row: ThreadRow): ThreadRecord {
  return {
    threadId: row.thread_id,
    graphFile: row.graph_file,
    graphHash: row.graph_hash ?? undefined,
    graphName: row.graph_name,
    task: row.task,
    model: row.model ?? undefined,
    approval: row.approval,
    ...(row.mode ? { mode: row.mode } : {}),
    workspace: row.workspace,
    status: row.status,
    pid: row.pid ?? undefined,
    host: row.owner_host ?? undefined,
    // PostgreSQL gives a BIGINT as text.
    ownerStart: row.owner_start === null ? undefined : Number(row.owner_start),
    heartbeatAt: row.heartbeat_at ?? undefined,
    commandGroups: row.command_groups ? (JSON.parse(row.command_groups) as CommandGroup[]) : undefined,
    error: row.error ?? undefined,
    pause: row.pause ? (JSON.parse(row.pause) as ThreadRecord["pause"]) : undefined,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Whether the thread's owner was on this host (a record without host, of an earlier release, was). */
function sameHost(record: ThreadRecord): boolean {
  return record.host === undefined || record.host === THIS_PROCESS.host;
}

/**
 * Kills what is left of a dead owner's command: its process group, unless the group's id is now
 * another's (its leader runs with another start time: the group ended and the id was given
 * again; while a group has members, the system gives its id to no new process). Without /proc
 * (no start time recorded) nothing is killed. True when the group was signalled.
 */
function killLeftover(group: CommandGroup): boolean {
  if (group.start === undefined) return false;
  const leader = processStart(group.pgid);
  if (leader !== undefined && leader !== group.start) return false;
  try {
    process.kill(-group.pgid, "SIGKILL");
    return true;
  } catch {
    // ESRCH: nothing is left of it.
    return false;
  }
}

/** Whether the thread's record names this process as its owner. */
export function ownedHere(record: ThreadRecord): boolean {
  return (
    record.pid === THIS_PROCESS.pid &&
    (record.host === undefined || record.host === THIS_PROCESS.host) &&
    (record.ownerStart === undefined || THIS_PROCESS.start === undefined || record.ownerStart === THIS_PROCESS.start)
  );
}

/**
 * Whether the process recorded with the thread is alive: the one rule of who holds a thread,
 * used by the claim and by every reader (inspect, status, send, the Looper). On this host: its
 * pid runs, and with the start time recorded (else the pid was given to a later process). On
 * another host, where the pid cannot be asked: its heartbeat is younger than HEARTBEAT_EXPIRY_MS.
 * A record without host (an earlier release's) is of this host.
 */
export function ownerAlive(record: ThreadRecord, now = Date.now()): boolean {
  if (record.pid === undefined) return false;
  if (!sameHost(record)) {
    const beat = Date.parse(record.heartbeatAt ?? record.updatedAt);
    return Number.isFinite(beat) && now - beat < HEARTBEAT_EXPIRY_MS;
  }
  if (!isAlive(record.pid)) return false;
  if (record.ownerStart === undefined) return true;
  const start = processStart(record.pid);
  return start === undefined || start === record.ownerStart;
}

/** True when a thread marked running is really running in another live process (not one killed mid-run). */
export function isRunningElsewhere(record: ThreadRecord): boolean {
  return record.status === "running" && !ownedHere(record) && ownerAlive(record);
}

/** The process a thread marked running was running in, when that process is gone (killed, crashed). */
export function goneOwner(record: ThreadRecord): number | undefined {
  if (record.status !== "running" || record.pid === undefined || ownedHere(record)) return undefined;
  return ownerAlive(record) ? undefined : record.pid;
}

/**
 * The record as a reader in another process should see it (`inspect`, `status`, `send`): a thread
 * marked running whose process is gone is interrupted, and says so.
 */
export function asSeen(record: ThreadRecord): ThreadRecord {
  const gone = goneOwner(record);
  if (gone === undefined) return record;
  const where = record.host !== undefined && record.host !== THIS_PROCESS.host ? ` on ${record.host}` : "";
  const why = where ? `, which ran it, has not been heard of since ${record.heartbeatAt ?? record.updatedAt}` : ", which ran it, is gone";
  return { ...record, status: "interrupted", error: `process ${gone}${where}${why}`, goneOwner: gone };
}

/** Where the thread runs, for messages: `process N` and, when known, `on HOST`. */
export function ownerText(record: ThreadRecord): string {
  return `process ${record.pid}${record.host ? ` on ${record.host}` : ""}`;
}

/**
 * When the process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat): with the
 * pid, it names one process, not a later one given the same pid. Undefined without /proc, or
 * when no such process runs.
 */
export function processStart(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = Number(fields[19]);
    return Number.isSafeInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
