/**
 * The state of one conversation as the UI shows it, and the pure reducer that builds it from
 * user actions and streamed chat events. Nothing here does I/O or reads the clock.
 */

import type { ChatEvent, Citation } from "../api/types";

export type ToolStatus = "running" | "done" | "error" | "cancelled";

export interface ToolCard {
  /** The model's tool-call ID. */
  callId: string;
  name: string;
  input: Record<string, unknown>;
  /** History ID of the full result, e.g. q3-t1. */
  itemId: string;
  /** History ID of its summary, e.g. q3-t1-sum. */
  summaryId: string;
  turn: number;
  status: ToolStatus;
  /** The backend's result status: ok, error, timeout, not_run, cancelled… */
  resultStatus: string | null;
  durationMs: number | null;
  credits: number | null;
  summary: string | null;
  /** The full result when already known (reloaded conversations); else fetched on demand. */
  fullText: string | null;
  citations: Citation[];
}

export type TurnStatus = "pending" | "streaming" | "done" | "stopped" | "error";

export interface TurnError {
  /** refused: an HTTP error before the stream; stream: an `error` event; network: the connection
   * failed; incomplete: the stream ended without `message_end`. */
  kind: "refused" | "stream" | "network" | "incomplete";
  code: string;
  message: string;
  status?: number;
  refunded?: boolean;
  balance?: number;
  needed?: number;
  howToGetMore?: string;
}

export interface Turn {
  /** Client-side key, stable from the moment the message is sent. */
  localId: string;
  query: string;
  queryId: string | null;
  text: string;
  tools: ToolCard[];
  status: TurnStatus;
  model: string | null;
  messageId: string | null;
  summaryId: string | null;
  summary: string | null;
  /** What this answer cost. */
  credits: number | null;
  creditsRemaining: number | null;
  stopReason: string | null;
  error: TurnError | null;
  usage: { input: number; output: number };
}

export interface ConversationState {
  id: string | null;
  title: string | null;
  turns: Turn[];
  loaded: boolean;
  loading: boolean;
  loadError: string | null;
}

export type Action =
  | { type: "load_start" }
  | { type: "loaded"; id: string; title: string; turns: Turn[] }
  | { type: "load_failed"; message: string }
  | { type: "send"; localId: string; message: string }
  | { type: "event"; localId: string; event: ChatEvent }
  | { type: "refused"; localId: string; error: TurnError }
  | { type: "network_error"; localId: string; message: string }
  | { type: "stream_ended"; localId: string }
  | { type: "stopped"; localId: string }
  | { type: "dismiss"; localId: string }
  | { type: "renamed"; title: string };

export const STOPPED_NOTE = "[Stopped: the answer was interrupted before it was complete.]";

export function emptyConversation(id: string | null = null): ConversationState {
  return { id, title: null, turns: [], loaded: id === null, loading: false, loadError: null };
}

export function newTurn(localId: string, query: string): Turn {
  return {
    localId,
    query,
    queryId: null,
    text: "",
    tools: [],
    status: "pending",
    model: null,
    messageId: null,
    summaryId: null,
    summary: null,
    credits: null,
    creditsRemaining: null,
    stopReason: null,
    error: null,
    usage: { input: 0, output: 0 },
  };
}

/** Whether a turn is still waiting for, or receiving, its answer. */
export function isActive(turn: Turn): boolean {
  return turn.status === "pending" || turn.status === "streaming";
}

export function isBusy(state: ConversationState): boolean {
  return state.turns.some(isActive);
}

export function reduce(state: ConversationState, action: Action): ConversationState {
  switch (action.type) {
    case "load_start":
      return { ...state, loading: true, loadError: null };
    case "loaded":
      return {
        ...state,
        id: action.id,
        title: action.title,
        turns: mergeStored(state.turns, action.turns),
        loaded: true,
        loading: false,
        loadError: null,
      };
    case "load_failed":
      return { ...state, loading: false, loadError: action.message };
    case "send":
      return { ...state, turns: [...state.turns, newTurn(action.localId, action.message)] };
    case "renamed":
      return { ...state, title: action.title };
    case "dismiss":
      return { ...state, turns: state.turns.filter((t) => t.localId !== action.localId) };
    case "event": {
      const next = updateTurn(state, action.localId, (turn) => applyEvent(turn, action.event));
      if (action.event.type === "message_start" && next.id === null) return { ...next, id: action.event.conversation_id };
      return next;
    }
    case "refused":
      return updateTurn(state, action.localId, (turn) =>
        isActive(turn) ? { ...turn, status: "error", error: action.error } : turn,
      );
    case "network_error":
      return updateTurn(state, action.localId, (turn) =>
        isActive(turn)
          ? {
              ...cancelRunningTools(turn),
              status: "error",
              error: { kind: "network", code: "network_error", message: action.message },
            }
          : turn,
      );
    case "stream_ended":
      return updateTurn(state, action.localId, endOfStream);
    case "stopped":
      return updateTurn(state, action.localId, (turn) =>
        isActive(turn)
          ? {
              ...cancelRunningTools(turn),
              status: "stopped",
              text: turn.text.endsWith(STOPPED_NOTE) ? turn.text : joinNote(turn.text, STOPPED_NOTE),
              stopReason: "cancelled",
            }
          : turn,
      );
  }
}

/**
 * The stored history is the authority for every query it has; a local turn it does not have yet
 * (still running, or refused before anything was stored) stays, after the stored ones. A stored
 * turn keeps the local key of the turn it replaces, so its view keeps its state.
 */
function mergeStored(local: Turn[], stored: Turn[]): Turn[] {
  const localByQuery = new Map(local.filter((t) => t.queryId !== null).map((t) => [t.queryId, t]));
  const storedIds = new Set(stored.map((t) => t.queryId));
  const merged = stored.map((turn) => {
    const previous = localByQuery.get(turn.queryId);
    if (previous && isActive(previous)) return previous;
    return previous ? { ...turn, localId: previous.localId } : turn;
  });
  return [...merged, ...local.filter((t) => t.queryId === null || !storedIds.has(t.queryId))];
}

function updateTurn(state: ConversationState, localId: string, update: (turn: Turn) => Turn): ConversationState {
  let changed = false;
  const turns = state.turns.map((turn) => {
    if (turn.localId !== localId) return turn;
    const next = update(turn);
    changed ||= next !== turn;
    return next;
  });
  return changed ? { ...state, turns } : state;
}

/** Apply one streamed event to its turn. Events after the turn ended (e.g. after Stop) are ignored. */
export function applyEvent(turn: Turn, event: ChatEvent): Turn {
  if (!isActive(turn)) return turn;
  const streaming: Turn = turn.status === "pending" ? { ...turn, status: "streaming" } : turn;
  switch (event.type) {
    case "message_start":
      return { ...streaming, queryId: event.query_id, model: event.model };
    case "text_delta":
      return { ...streaming, text: streaming.text + event.text };
    case "tool_call": {
      const card: ToolCard = {
        callId: event.id,
        name: event.name,
        input: event.input ?? {},
        itemId: event.item_id,
        summaryId: `${event.item_id}-sum`,
        turn: event.turn,
        status: "running",
        resultStatus: null,
        durationMs: null,
        credits: null,
        summary: null,
        fullText: null,
        citations: [],
      };
      const exists = streaming.tools.some((t) => t.callId === event.id);
      return exists ? streaming : { ...streaming, tools: [...streaming.tools, card] };
    }
    case "tool_result": {
      const done = {
        name: event.name,
        itemId: event.item_id,
        summaryId: event.summary_id,
        status: (event.is_error ? "error" : "done") as ToolStatus,
        resultStatus: event.status,
        durationMs: event.duration_ms,
        credits: event.credits,
        summary: event.summary,
        citations: event.citations ?? [],
      };
      const index = streaming.tools.findIndex((t) => t.callId === event.id || t.itemId === event.item_id);
      if (index < 0) {
        // A result without its call (should not happen): show it anyway.
        const card: ToolCard = { callId: event.id, input: {}, turn: 0, fullText: null, ...done };
        return { ...streaming, tools: [...streaming.tools, card] };
      }
      const tools = streaming.tools.slice();
      tools[index] = { ...tools[index], ...done };
      return { ...streaming, tools };
    }
    case "usage":
      return {
        ...streaming,
        usage: {
          input: streaming.usage.input + event.input_tokens,
          output: streaming.usage.output + event.output_tokens,
        },
      };
    case "message_end": {
      const tools = streaming.tools.map((tool) => {
        const summary = event.summaries[tool.summaryId];
        const status: ToolStatus = tool.status === "running" ? "cancelled" : tool.status;
        return summary !== undefined || status !== tool.status ? { ...tool, status, summary: summary ?? tool.summary } : tool;
      });
      const stopped = event.stop_reason === "cancelled";
      const failed = event.stop_reason === "error" || streaming.error !== null;
      return {
        ...streaming,
        tools,
        queryId: event.query_id,
        // The stored response is the authority (it carries e.g. the note of an early stop).
        text: event.response || streaming.text,
        messageId: event.message_id,
        summaryId: event.summary_id,
        summary: event.summary || event.summaries[event.summary_id] || null,
        credits: event.credits_used,
        creditsRemaining: event.credits_remaining,
        stopReason: event.stop_reason,
        status: failed ? "error" : stopped ? "stopped" : "done",
      };
    }
    case "error":
      return {
        ...streaming,
        error: { kind: "stream", code: event.code, message: event.message, refunded: event.refunded },
      };
  }
}

/** The body ended: without `message_end` the answer is incomplete (or failed, if an error came). */
function endOfStream(turn: Turn): Turn {
  if (!isActive(turn)) return turn;
  const error: TurnError = turn.error ?? {
    kind: "incomplete",
    code: "incomplete",
    message: "The connection closed before the answer was complete.",
  };
  return { ...cancelRunningTools(turn), status: "error", error };
}

function cancelRunningTools(turn: Turn): Turn {
  if (!turn.tools.some((t) => t.status === "running")) return turn;
  return { ...turn, tools: turn.tools.map((t) => (t.status === "running" ? { ...t, status: "cancelled" } : t)) };
}

function joinNote(text: string, note: string): string {
  return text.trim() === "" ? note : `${text.replace(/\s+$/, "")}\n\n${note}`;
}
