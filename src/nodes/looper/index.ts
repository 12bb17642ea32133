export {
  commandToEvent,
  dispatchLooperCommand,
  looperCommandSchema,
  NATURAL_FORMS,
  parseLooperCommand,
  parseNaturalCommand,
} from "./commands.js";
export {
  DEFAULT_MAX_ROUNDS,
  ROUND_LIMIT,
  STOPPED_BY_USER,
  applyLooperEvent,
  describePosition,
  initialLooperSnapshot,
  isRunning,
  looperMachine,
  resolveLooperSnapshot,
  subStateOf,
  toLooperSnapshot,
  type LooperInput,
  type LooperMachineSnapshot,
  type LooperOutcome,
} from "./machine.js";
export { formatStatus, statusJson, type LooperStatusJson, type StatusOptions } from "./status.js";
export type * from "../../state/looper.js";
