// The library API: the CLI is a thin layer over these functions.
export { loadGraph, resolveGraphPath, drawMermaid, listGraphs } from "./graph/index.js";
export type { GraphDefinition, NodeDefinition, EdgeDefinition, Condition } from "./graph/types.js";
export { runGraph, resumeRun } from "./engine/runner.js";
export type { RunOptions, ResumeOptions, RunOutcome, PauseInfo } from "./engine/runner.js";
export type { RunEvent, RunStatus, EventSink } from "./engine/events.js";
export { listThreads, threadHistory, checkpointState } from "./engine/inspect.js";
export { forkRun, type ForkOptions } from "./replay/fork.js";
export { verifyRun, type VerifyOptions, type VerifyResult, type Divergence } from "./replay/verify.js";
export { looperStatus, sendCommand } from "./engine/commands.js";
export { eventBus, messageTopic, type EventBus, type ThreadMessage } from "./engine/event-bus.js";
export type { ThreadSummary, ThreadHistory, CheckpointSummary, CheckpointState, StateChange } from "./engine/inspect.js";
export { SqliteCheckpointSaver } from "./checkpoint/index.js";
export { createModel } from "./models/index.js";
export type { ChatModel, ModelCallOptions, ModelCallResult } from "./models/types.js";
export type { FunctionNodeContext, FunctionNodeResult } from "./nodes/function.js";
export { GraphState } from "./state/graph-state.js";
export { ExitCode, LoopgraphError, ConfigError, GraphValidationError, ModelError } from "./errors.js";
