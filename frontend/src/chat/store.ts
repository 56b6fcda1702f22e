/**
 * The chat store: one ConversationState per conversation, kept while the page lives, and the
 * streams that feed them. Streams keep running when the user looks at another conversation.
 *
 * A new conversation lives under a local key ("new:1") until its `message_start` names it; from
 * then on it is stored under its ID and the local key is an alias.
 */

import { api, ApiError, notFound } from "../api/client";
import type { MessageEndEvent, Strategy } from "../api/types";
import { readSse } from "../sse/reader";
import { parseChatEvent, ProtocolError } from "./events";
import { turnsFromConversation } from "./history";
import { emptyConversation, isBusy, reduce, type Action, type ConversationState, type TurnError } from "./state";

export interface StoreHooks {
  /** A new conversation got its ID (navigate to it, refresh the list). */
  conversationStarted(localKey: string, conversationId: string): void;
  /** An answer ended (credits changed; the list order changed). */
  answerEnded(conversationId: string | null, end: MessageEndEvent | null): void;
}

const SYNC_AFTER_STOP_MS = 900;
export const NO_SUCH_CONVERSATION = "This conversation does not exist, or it was deleted.";

export class ChatStore {
  private states = new Map<string, ConversationState>();
  private aliases = new Map<string, string>();
  private controllers = new Map<string, AbortController>();
  private listeners = new Set<() => void>();
  private scheduled = false;
  private seq = 0;

  constructor(private hooks: StoreHooks) {}

  /** The key a (possibly local) key now refers to. */
  resolve(key: string): string {
    return this.aliases.get(key) ?? key;
  }

  get(key: string): ConversationState {
    const resolved = this.resolve(key);
    return this.states.get(resolved) ?? emptyConversation(resolved.startsWith("new:") ? null : resolved);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Forget a conversation (deleted), stopping its stream. */
  forget(id: string): void {
    const state = this.states.get(id);
    for (const turn of state?.turns ?? []) this.controllers.get(turn.localId)?.abort();
    this.states.delete(id);
    this.notify();
  }

  /** Stop every running answer (signing out). */
  abortAll(): void {
    for (const controller of this.controllers.values()) controller.abort();
  }

  setTitle(id: string, title: string): void {
    if (this.states.has(id)) this.dispatch(id, { type: "renamed", title });
  }

  /** The conversation's strategy changed (stored by the server). */
  setStrategy(id: string, strategy: Strategy | null): void {
    if (this.states.has(id)) this.dispatch(id, { type: "strategy", strategy });
  }

  /** Load a conversation's stored history (once, unless `force`). */
  async load(id: string, force = false): Promise<void> {
    const current = this.states.get(id);
    if (current && (current.loading || (current.loaded && !force))) return;
    this.dispatch(id, { type: "load_start" });
    try {
      const detail = await api.conversation(id);
      this.dispatch(id, {
        type: "loaded",
        id,
        title: detail.title,
        strategy: detail.strategy ?? null,
        turns: turnsFromConversation(detail),
      });
    } catch (error) {
      const message = notFound(error)
          ? NO_SUCH_CONVERSATION
          : error instanceof ApiError
            ? error.message
            : "The conversation could not be loaded.";
      this.dispatch(id, { type: "load_failed", message });
    }
  }

  /**
   * Send a message and stream its answer into the conversation at `key`. Resolves when the stream
   * closes, which may be after the answer ended (`message_end`): summaries still being written
   * follow it. The conversation is free for the next message as soon as `message_end` arrives.
   */
  async send(key: string, message: string, strategy: Strategy | null = null): Promise<void> {
    if (isBusy(this.get(key))) return;
    const localId = `turn-${Date.now().toString(36)}-${++this.seq}`;
    this.dispatch(key, { type: "send", localId, message });
    const controller = new AbortController();
    this.controllers.set(localId, controller);
    let end: MessageEndEvent | null = null;
    try {
      const response = await api.chatStream(message, this.get(key).id, controller.signal, strategy);
      for await (const sse of readSse(response.body!)) {
        const event = parseChatEvent(sse);
        if (event === null) continue;
        if (event.type === "message_start" && key.startsWith("new:") && !this.aliases.has(key)) {
          this.adopt(key, event.conversation_id);
          this.hooks.conversationStarted(key, event.conversation_id);
        }
        this.dispatch(key, { type: "event", localId, event });
        // The answer is complete: the composer is free again and the balance is known, although
        // the stream stays open for summaries still being written.
        if (event.type === "message_end" && end === null) {
          end = event;
          this.hooks.answerEnded(this.get(key).id, end);
        }
      }
      this.dispatch(key, { type: "stream_ended", localId });
    } catch (error) {
      if (controller.signal.aborted) {
        this.dispatch(key, { type: "stopped", localId });
      } else if (error instanceof ApiError && error.status > 0) {
        this.dispatch(key, { type: "refused", localId, error: refusal(error) });
      } else if (error instanceof ProtocolError) {
        this.dispatch(key, { type: "network_error", localId, message: error.message });
      } else {
        this.dispatch(key, {
          type: "network_error",
          localId,
          message: "The connection to the server was lost before the answer was complete.",
        });
      }
    } finally {
      this.controllers.delete(localId);
      if (end === null) this.hooks.answerEnded(this.get(key).id, null);
    }
  }

  /** Stop an answer: abort the request (the server cancels the run), then sync with what it stored. */
  stop(key: string, localId: string): void {
    const controller = this.controllers.get(localId);
    if (!controller) return;
    controller.abort();
    this.dispatch(key, { type: "stopped", localId });
    const id = this.get(key).id;
    setTimeout(() => {
      if (id) void this.load(id, true);
      this.hooks.answerEnded(id, null);
    }, SYNC_AFTER_STOP_MS);
  }

  /** Send a failed message again (the failed attempt is removed from view). */
  retry(key: string, localId: string, strategy: Strategy | null = null): void {
    const turn = this.get(key).turns.find((t) => t.localId === localId);
    if (!turn) return;
    this.dispatch(key, { type: "dismiss", localId });
    void this.send(key, turn.query, strategy);
  }

  dismiss(key: string, localId: string): void {
    this.dispatch(key, { type: "dismiss", localId });
  }

  private adopt(localKey: string, id: string): void {
    const state = this.states.get(localKey) ?? emptyConversation();
    this.states.delete(localKey);
    this.states.set(id, { ...state, id, loaded: true });
    this.aliases.set(localKey, id);
  }

  private dispatch(key: string, action: Action): void {
    const resolved = this.resolve(key);
    const before = this.states.get(resolved) ?? emptyConversation(resolved.startsWith("new:") ? null : resolved);
    const after = reduce(before, action);
    if (after === before && this.states.has(resolved)) return;
    this.states.set(resolved, after);
    this.notify();
  }

  /** Listeners run at most once per animation frame (streams deliver many small events). */
  private notify(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      for (const listener of this.listeners) listener();
    };
    if (typeof requestAnimationFrame === "function" && document.visibilityState === "visible") {
      requestAnimationFrame(run);
    } else {
      setTimeout(run, 16);
    }
  }
}

function refusal(error: ApiError): TurnError {
  return {
    kind: "refused",
    status: error.status,
    code: error.code,
    message: error.message,
    balance: error.detail<number>("balance"),
    needed: error.detail<number>("needed"),
    howToGetMore: error.detail<string>("how_to_get_more"),
  };
}
