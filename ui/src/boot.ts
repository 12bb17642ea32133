/**
 * The page's first script, a few hundred bytes: on a thread's page it asks for the thread's first
 * page of steps at once, while the page's own script (app.js) is still loading; app.js then takes
 * that answer (api.ts `get`).
 */
import { requestEarly, threadApi, threadOfHash } from "./api.js";

const threadId = threadOfHash(location.hash);
if (threadId !== undefined) requestEarly(threadApi(threadId));
