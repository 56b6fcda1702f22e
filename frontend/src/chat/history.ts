/** Rebuilding a conversation's turns from its stored history (GET /api/conversations/{id}). Pure. */

import type { ConversationDetail, Item } from "../api/types";
import { parseCitations } from "../markdown/citations";
import { newTurn, OVER_LIMIT, type ToolCard, type Turn } from "./state";

const QUERY_NUMBER = /^q(\d+)(?:-|$)/;

function queryNumber(id: string): number | null {
  const match = QUERY_NUMBER.exec(id);
  return match ? Number(match[1]) : null;
}

/** Turns in query order; each with its tool cards (full text and summary) and stored answer. */
export function turnsFromConversation(detail: ConversationDetail): Turn[] {
  const summaries = new Map<string, string>();
  for (const item of detail.summarised) if (item.ref) summaries.set(item.ref, item.content);
  const byQuery = new Map<number, Turn>();
  const order: number[] = [];
  const turnFor = (n: number): Turn => {
    let turn = byQuery.get(n);
    if (!turn) {
      turn = { ...newTurn(`stored-${detail.id}-q${n}`, ""), queryId: `q${n}`, status: "done" };
      byQuery.set(n, turn);
      order.push(n);
    }
    return turn;
  };
  for (const item of detail.full) {
    const n = queryNumber(item.id);
    if (n === null) continue;
    const turn = turnFor(n);
    if (item.kind === "query") turn.query = item.content;
    else if (item.kind === "tool_result") {
      turn.tools.push(toolCard(item, summaries.get(item.id) ?? null));
      if (item.status === OVER_LIMIT) turn.creditLimitReached = true;
    }
    else if (item.kind === "response") applyResponse(turn, item, summaries.get(item.id) ?? null);
  }
  order.sort((a, b) => a - b);
  return order.map((n) => {
    const turn = byQuery.get(n)!;
    if (turn.messageId === null) {
      turn.status = "error";
      turn.error = {
        kind: "incomplete",
        code: "no_answer",
        message: "No answer was stored for this message (it may still be running elsewhere).",
      };
    }
    return turn;
  });
}

function toolCard(item: Item, summary: string | null): ToolCard {
  return {
    callId: item.id,
    name: item.tool_name ?? "tool",
    input: item.tool_input ?? {},
    itemId: item.id,
    summaryId: `${item.id}-sum`,
    turn: 0,
    status: item.status === "cancelled" ? "cancelled" : item.is_error ? "error" : "done",
    resultStatus: item.status,
    durationMs: item.duration_ms,
    credits: item.credits,
    summary,
    summaryFailed: false,
    progress: null,
    fullText: item.content,
    citations: item.is_error ? [] : parseCitations(item.content),
  };
}

function applyResponse(turn: Turn, item: Item, summary: string | null): void {
  turn.text = item.content;
  turn.messageId = item.id;
  turn.summaryId = `${item.id}-sum`;
  turn.summary = summary;
  turn.credits = item.credits;
  turn.model = item.model ?? null;
  turn.status = item.status === "interrupted" ? "stopped" : "done";
  // A finished answer is free only when the model declined to give one (its base price was refunded).
  turn.stopReason = item.status === "interrupted" ? "interrupted" : item.credits === 0 ? "declined" : "end_turn";
}
