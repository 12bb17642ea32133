import { EventEmitter } from "node:events";

/** A complete message of a thread's log (not a streamed fragment), as published on `message:<thread>`. */
export interface ThreadMessage {
  threadId: string;
  node: string;
  content: string;
  /** Looper progress (`[AUTO] …`). */
  auto: boolean;
  at: string;
}

export type MessageTopic = `message:${string}`;

/**
 * The in-process event bus: each thread's message log is published on `message:<thread>` as it is
 * written, for whoever follows the thread (the CLI, the Mediator).
 */
export class EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  /** Calls `handler` for every message published on `topic` until the returned function is called. */
  subscribe(topic: MessageTopic, handler: (message: ThreadMessage) => void): () => void {
    this.emitter.on(topic, handler);
    return () => this.emitter.off(topic, handler);
  }

  publish(message: ThreadMessage): void {
    this.emitter.emit(`message:${message.threadId}` satisfies MessageTopic, message);
  }
}

/** The process's bus. */
export const eventBus = new EventBus();

export const messageTopic = (threadId: string): MessageTopic => `message:${threadId}`;
