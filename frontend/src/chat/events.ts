/** Turning SSE messages into typed chat events (chat/events.py is the vocabulary). */

import type { ChatEvent, Citation } from "../api/types";
import type { SseMessage } from "../sse/reader";

const TYPES = new Set(["message_start", "text_delta", "tool_call", "tool_result", "usage", "message_end", "error"]);

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
  return event;
}

function normaliseCitations(value: unknown): Citation[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((c): c is Record<string, unknown> => typeof c === "object" && c !== null)
    .map((c) => ({ title: String(c.title ?? ""), url: String(c.url ?? ""), library: String(c.library ?? "") }))
    .filter((c) => c.url !== "" || c.title !== "");
}
