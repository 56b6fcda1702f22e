/** Turning SSE messages into typed chat events (chat/events.py is the vocabulary). */

import type { ChatEvent, Citation } from "../api/types";
import type { SseMessage } from "../sse/reader";

const TYPES = new Set([
  "message_start",
  "text_delta",
  "tool_call",
  "tool_result",
  "tool_progress",
  "plan",
  "escalation",
  "usage",
  "message_end",
  "summary",
  "error",
]);

export class ProtocolError extends Error {
  override name = "ProtocolError";
}

/**
 * The chat event an SSE message carries, or null for an event type this UI does not know
 * (newer servers may add some). Throws ProtocolError when the data is not a JSON object.
 */
export function parseChatEvent(message: SseMessage): ChatEvent | null {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    throw new ProtocolError(`the server sent an unreadable ${message.event} event`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new ProtocolError(`the server sent an unreadable ${message.event} event`);
  }
  const record = data as Record<string, unknown>;
  const type = typeof record.type === "string" ? record.type : message.event;
  if (!TYPES.has(type)) return null;
  const event = { ...record, type } as ChatEvent;
  if (event.type === "tool_result") event.citations = normaliseCitations(record.citations);
  if (event.type === "tool_call" && (typeof event.input !== "object" || event.input === null)) event.input = {};
  if (event.type === "message_end" && (typeof event.summaries !== "object" || event.summaries === null)) {
    event.summaries = {};
  }
  if (event.type === "text_delta" && typeof event.text !== "string") event.text = String(event.text ?? "");
  if (event.type === "message_end" && typeof event.summary !== "string") event.summary = null;
  if (event.type === "plan") {
    event.analysis = text(event.analysis);
    event.guidance = text(event.guidance);
    event.model = text(event.model);
  }
  if (event.type === "escalation") {
    event.reason = text(event.reason);
    event.from_model = text(event.from_model);
    event.to_model = text(event.to_model);
  }
  if (event.type === "tool_progress") event.message = text(event.message);
  if (event.type === "summary") event.summary = text(event.summary);
  return event;
}

function normaliseCitations(value: unknown): Citation[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((c): c is Record<string, unknown> => typeof c === "object" && c !== null)
    .map((c) => ({ title: String(c.title ?? ""), url: String(c.url ?? ""), library: String(c.library ?? "") }))
    .filter((c) => c.url !== "" || c.title !== "");
}

function text(value: unknown): string {
  return typeof value === "string" ? value : value === null || value === undefined ? "" : String(value);
}
