/** Applying one streamed chat event to its turn (pure). `chat/events.py` is the vocabulary. */

import type { ChatEvent, SummaryEvent } from "../api/types";
import { isActive, OVER_LIMIT, type Escalation, type PlanStep, type ToolCard, type ToolStatus, type Turn } from "./turn";

/**
 * Apply one streamed event to its turn. Events after the turn ended (e.g. after Stop) are ignored,
 * except `summary`: summaries still being written arrive after `message_end`.
 */
export function applyEvent(turn: Turn, event: ChatEvent): Turn {
  if (event.type === "summary") return applySummary(turn, event);
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
        summaryFailed: false,
        progress: null,
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
        // A result short enough to keep as it is comes with its summary: the summary is the result.
        ...(event.summary !== null ? { fullText: event.summary } : {}),
        progress: null,
        citations: event.citations ?? [],
      };
      const limited = streaming.creditLimitReached || event.status === OVER_LIMIT;
      const index = streaming.tools.findIndex((t) => t.callId === event.id || t.itemId === event.item_id);
      if (index < 0) {
        // A result without its call (should not happen): show it anyway.
        const card: ToolCard = { callId: event.id, input: {}, turn: 0, fullText: null, summaryFailed: false, ...done };
        return { ...streaming, tools: [...streaming.tools, card], creditLimitReached: limited };
      }
      const tools = streaming.tools.slice();
      tools[index] = { ...tools[index], ...done };
      return { ...streaming, tools, creditLimitReached: limited };
    }
    case "tool_progress": {
      const index = streaming.tools.findIndex((t) => t.callId === event.id || t.itemId === event.item_id);
      if (index < 0 || streaming.tools[index].status !== "running") return streaming;
      const tools = streaming.tools.slice();
      tools[index] = { ...tools[index], progress: String(event.message ?? "") };
      return { ...streaming, tools };
    }
    case "plan": {
      const plan: PlanStep = {
        loop: event.loop,
        analysis: event.analysis ?? "",
        guidance: event.guidance ?? "",
        model: event.model ?? "",
        afterTools: streaming.tools.length,
      };
      return { ...streaming, plans: [...streaming.plans, plan] };
    }
    case "escalation": {
      const escalation: Escalation = {
        reason: event.reason ?? "",
        fromModel: event.from_model ?? "",
        toModel: event.to_model ?? "",
        attempt: event.attempt,
        afterTools: streaming.tools.length,
      };
      return { ...streaming, escalations: [...streaming.escalations, escalation] };
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
        creditLimit: typeof event.credit_limit === "number" && event.credit_limit > 0 ? event.credit_limit : streaming.creditLimit,
        creditLimitReached: streaming.creditLimitReached || event.credit_limit_reached === true,
        stopReason: event.stop_reason,
        status: failed ? "error" : stopped ? "stopped" : "done",
      };
    }
    case "error":
      return {
        ...streaming,
        error: { kind: "stream", code: event.code, message: event.message, refunded: event.refunded },
      };
    default:
      // An event type a newer server sends and this UI does not know: nothing to show.
      return turn;
  }
}

/** A summary finished (during the answer or after it ended): the tool card's, or the answer's. */
function applySummary(turn: Turn, event: SummaryEvent): Turn {
  const failed = event.status === "failed";
  const text = typeof event.summary === "string" && event.summary !== "" ? event.summary : null;
  const index = turn.tools.findIndex((t) => t.summaryId === event.summary_id);
  if (index >= 0) {
    const tools = turn.tools.slice();
    tools[index] = { ...tools[index], summary: text ?? tools[index].summary, summaryFailed: failed };
    return { ...turn, tools };
  }
  if (turn.summaryId === event.summary_id || (turn.messageId !== null && turn.messageId === event.item_id)) {
    return { ...turn, summary: text ?? turn.summary };
  }
  return turn;
}

/** Running tool calls become cancelled (the answer ended without their results). */
export function cancelRunningTools(turn: Turn): Turn {
  if (!turn.tools.some((t) => t.status === "running")) return turn;
  return { ...turn, tools: turn.tools.map((t) => (t.status === "running" ? { ...t, status: "cancelled" } : t)) };
}
