/** Wire types of the Almanac API (backend/almanac/api/schemas.py and chat/events.py). */

export interface User {
  id: string;
  email: string;
  plan: string;
  /** "admin": the Admin page is offered. */
  role?: "user" | "admin";
  /** How this user's questions are answered by default (null: the server's default). */
  default_strategy?: Strategy | null;
}

export type Strategy = "direct" | "boost" | "collaborate";

/** What this server offers (GET /api/config). */
export interface ServerConfig {
  chat_model: { name: string; provider: string; offline: boolean };
  strategies: { default: Strategy; available: Strategy[] };
  payments_enabled: boolean;
  /** GitHub tools run with each user's own token: the GitHub token entry is offered. */
  github_tools: boolean;
  /** Questions a new chat suggests: ones this server's chat model answers well. */
  suggestions: string[];
}

/** A tool a chat can use (GET /api/tools). */
export interface ToolInfo {
  name: string;
  description: string;
  source: string;
  billing: string;
  credits: number;
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
  /** ok, error, timeout, not_run, cancelled, over_limit (not run: the question reached its credit limit)… */
  status: string;
  summary: string | null;
  duration_ms: number;
  credits: number;
  citations: Citation[];
}

/** A running tool says what it is doing (e.g. "building the documentation index… 40%"). */
export interface ToolProgressEvent {
  type: "tool_progress";
  id: string;
  item_id: string;
  message: string;
}

/** Boost mode: the planner's ANALYSIS and GUIDANCE (Markdown) for one loop. */
export interface PlanEvent {
  type: "plan";
  loop: number;
  analysis: string;
  guidance: string;
  model: string;
}

/** Collaboration: the primary model was judged stuck and a helper model was asked. */
export interface EscalationEvent {
  type: "escalation";
  reason: string;
  from_model: string;
  to_model: string;
  attempt: number;
}

/** A summary that finished after `message_end` (the stream stays open until the last one). */
export interface SummaryEvent {
  type: "summary";
  item_id: string;
  summary_id: string;
  summary: string;
  /** "done", or "failed" (the item is kept verbatim, bounded). */
  status: string;
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
  /** null while the answer's summary is still being written (a `summary` event follows). */
  summary: string | null;
  response: string;
  tools_used: string[];
  credits_used: number;
  credits_remaining: number;
  turns: number;
  stop_reason: string;
  summaries: Record<string, string>;
  /** The per-query credit ceiling (0 or absent: unknown). */
  credit_limit?: number;
  /** Some tool call was not run because the question reached its ceiling. */
  credit_limit_reached?: boolean;
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
  | ToolProgressEvent
  | PlanEvent
  | EscalationEvent
  | UsageEvent
  | MessageEndEvent
  | SummaryEvent
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
  /** The model that wrote a response (null for other items and older answers). */
  model?: string | null;
}

export interface Conversation {
  id: string;
  title: string;
  query_count: number;
  created_at: string;
  updated_at: string;
  /** How this conversation's questions are answered (null: the user's default). */
  strategy?: Strategy | null;
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

/** One of the caller's API keys (GET /api/keys); never the key itself. */
export interface ApiKey {
  id: string;
  name: string;
  /** The key's first characters, to recognise it. */
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** This browser session was signed in with this key. */
  current: boolean;
}

export interface ApiKeyList {
  data: ApiKey[];
  count: number;
}

/** A new key: `api_key` is shown this once and never again. */
export interface ApiKeyCreated extends ApiKey {
  api_key: string;
}

/** The caller's GitHub token (GET/PUT /api/integrations/github). */
export interface GithubIntegration {
  connected: boolean;
  /** The token with all but a few characters hidden. */
  masked: string | null;
  updated_at: string | null;
  /** The server has a token of its own that GitHub tools use when the user has none. */
  shared_token_available: boolean;
  /** The server runs GitHub tools with users' own tokens (else a token cannot be saved). */
  available?: boolean;
}
