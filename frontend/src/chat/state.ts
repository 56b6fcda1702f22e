/**
 * The state of one conversation as the UI shows it, and the pure reducer that builds it from
 * user actions and streamed chat events. Nothing here does I/O or reads the clock.
 */

import type { ChatEvent, Strategy } from "../api/types";
import { isActive, newTurn, STOPPED_NOTE, type Turn, type TurnError } from "./turn";
import { applyEvent, cancelRunningTools } from "./turnEvents";

export * from "./turn";
export { applyEvent } from "./turnEvents";

export interface ConversationState {
  id: string | null;
  title: string | null;
  /** How its questions are answered, as stored (null: the user's default; undefined: not loaded yet). */
  strategy?: Strategy | null;
  turns: Turn[];
  loaded: boolean;
  loading: boolean;
  loadError: string | null;
}

export type Action =
  | { type: "load_start" }
  | { type: "loaded"; id: string; title: string; turns: Turn[]; strategy?: Strategy | null }
  | { type: "load_failed"; message: string }
  | { type: "send"; localId: string; message: string }
  | { type: "event"; localId: string; event: ChatEvent }
  | { type: "refused"; localId: string; error: TurnError }
  | { type: "network_error"; localId: string; message: string }
  | { type: "stream_ended"; localId: string }
  | { type: "stopped"; localId: string }
  | { type: "dismiss"; localId: string }
  | { type: "renamed"; title: string }
  | { type: "strategy"; strategy: Strategy | null };

export function emptyConversation(id: string | null = null): ConversationState {
  return { id, title: null, turns: [], loaded: id === null, loading: false, loadError: null };
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
        strategy: action.strategy ?? null,
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
    case "strategy":
      return { ...state, strategy: action.strategy };
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

function joinNote(text: string, note: string): string {
  return text.trim() === "" ? note : `${text.replace(/\s+$/, "")}\n\n${note}`;
}
