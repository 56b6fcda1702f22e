/** Wire types of the Almanac API (backend/almanac/api/schemas.py and chat/events.py). */

export interface User {
  id: string;
  email: string;
  plan: string;
}

export interface LocalLogin {
  available: boolean;
  email: string | null;
}

export interface Citation {
  title: string;
  url: string;
  library: string;
}

export interface MessageStartEvent {
  type: "message_start";
  conversation_id: string;
  query_id: string;
  model: string;
  provider: string;
}

export interface TextDeltaEvent {
  type: "text_delta";
  text: string;
}

export interface ToolCallEvent {
  type: "tool_call";
  id: string;
  name: string;
  input: Record<string, unknown>;
  item_id: string;
  turn: number;
}

export interface ToolResultEvent {
  type: "tool_result";
  id: string;
  name: string;
  item_id: string;
  summary_id: string;
  is_error: boolean;
  status: string;
  summary: string | null;
  duration_ms: number;
  credits: number;
  citations: Citation[];
}

export interface UsageEvent {
  type: "usage";
  turn: number;
  input_tokens: number;
  output_tokens: number;
}

export interface MessageEndEvent {
  type: "message_end";
  conversation_id: string;
  query_id: string;
  message_id: string;
  summary_id: string;
  summary: string;
  response: string;
  tools_used: string[];
  credits_used: number;
  credits_remaining: number;
  turns: number;
  stop_reason: string;
  summaries: Record<string, string>;
}

export interface ErrorEvent {
  type: "error";
  code: string;
  message: string;
  refunded: boolean;
}

export type ChatEvent =
  | MessageStartEvent
  | TextDeltaEvent
  | ToolCallEvent
  | ToolResultEvent
  | UsageEvent
  | MessageEndEvent
  | ErrorEvent;

export type ItemKind = "query" | "tool_result" | "response" | "tool_summary" | "response_summary";

export interface Item {
  id: string;
  kind: ItemKind | string;
  ref: string | null;
  content: string;
  status: string;
  tool_name: string | null;
  tool_input: Record<string, unknown> | null;
  is_error: boolean;
  credits: number;
  duration_ms: number | null;
  created_at: string | null;
}

export interface Conversation {
  id: string;
  title: string;
  query_count: number;
  created_at: string;
  updated_at: string;
}

export interface ConversationList {
  data: Conversation[];
  count: number;
}

export interface ConversationDetail extends Conversation {
  full: Item[];
  summarised: Item[];
}

export interface Credits {
  plan: string;
  balance: number;
  buckets: { daily: number; pack: number };
  daily_allowance: number;
  left_today: number;
  period: string;
  monthly_cap: number | null;
  used_this_month: number;
  left_this_month: number | null;
  prices: Record<string, number>;
}
