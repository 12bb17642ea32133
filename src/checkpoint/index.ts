export { SqliteCheckpointSaver } from "./sqlite-saver.js";
