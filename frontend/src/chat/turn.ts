/**
 * One question and its answer as the UI shows it: the turn, its tool cards, plans and escalations.
 * Plain data and small pure helpers; `turnEvents.ts` applies streamed events to a turn.
 */

import type { Citation } from "../api/types";

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
  /** The summary could not be written (the model keeps the full text, shortened). */
  summaryFailed: boolean;
  /** What the running tool last said it is doing (`tool_progress`). */
  progress: string | null;
  /** The full result when already known (reloaded conversations); else fetched on demand. */
  fullText: string | null;
  citations: Citation[];
}

/** Boost mode: the planner's view for one loop. `afterTools`: how many tool cards came before it. */
export interface PlanStep {
  loop: number;
  analysis: string;
  guidance: string;
  model: string;
  afterTools: number;
}

/** Collaboration: a helper model was asked. `afterTools`: how many tool cards came before it. */
export interface Escalation {
  reason: string;
  fromModel: string;
  toModel: string;
  attempt: number;
  afterTools: number;
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
  plans: PlanStep[];
  escalations: Escalation[];
  status: TurnStatus;
  model: string | null;
  messageId: string | null;
  summaryId: string | null;
  summary: string | null;
  /** What this answer cost. */
  credits: number | null;
  creditsRemaining: number | null;
  /** The question's credit ceiling, when the server said. */
  creditLimit: number | null;
  /** Some lookup was skipped because the question reached its ceiling. */
  creditLimitReached: boolean;
  stopReason: string | null;
  error: TurnError | null;
  usage: { input: number; output: number };
}

/** `tool_result.status` of a call that was not run: the question reached its credit limit. */
export const OVER_LIMIT = "over_limit";

export const STOPPED_NOTE = "[Stopped: the answer was interrupted before it was complete.]";

export function newTurn(localId: string, query: string): Turn {
  return {
    localId,
    query,
    queryId: null,
    text: "",
    tools: [],
    plans: [],
    escalations: [],
    status: "pending",
    model: null,
    messageId: null,
    summaryId: null,
    summary: null,
    credits: null,
    creditsRemaining: null,
    creditLimit: null,
    creditLimitReached: false,
    stopReason: null,
    error: null,
    usage: { input: 0, output: 0 },
  };
}

/** Whether a turn is still waiting for, or receiving, its answer. */
export function isActive(turn: Turn): boolean {
  return turn.status === "pending" || turn.status === "streaming";
}
