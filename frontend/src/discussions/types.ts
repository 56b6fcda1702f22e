/** Discussions between models: wire types (backend/almanac/api/routes/discussions.py and
 * backend/almanac/discussions/events.py). */

export interface ModelInfo {
  name: string;
  provider: string;
  model: string;
  roles: string[];
  aliases: string[];
}

export interface Models {
  data: ModelInfo[];
  count: number;
  discussions: { turn_credits: number; max_turns: number; max_participants: number };
}

export interface Participant {
  index: number;
  model: string;
  role: string;
  name: string;
}

export interface DiscussionItem {
  id: string;
  kind: string;
  content: string;
  status: string;
  tool_name?: string | null;
  tool_input?: Record<string, unknown> | null;
  is_error?: boolean;
  credits: number;
  duration_ms?: number | null;
  turn: number;
  speaker: number | null;
  model: string | null;
}

export interface Discussion {
  id: string;
  title: string;
  goal: string;
  status: string;
  stop_reason: string;
  turns: number;
  turns_done: number;
  credits_used: number;
  participants: Participant[];
  tools: string[];
  collaboration: boolean;
  created_at: string;
  updated_at: string;
}

export interface DiscussionDetail extends Discussion {
  items: DiscussionItem[];
  error?: { code: string; message: string } | null;
}

export interface DiscussionList {
  data: Discussion[];
  count: number;
}

export interface DiscussionCreate {
  goal: string;
  turns: number;
  participants: { model: string; role: string; name?: string }[];
  tools?: string[] | null;
  collaboration?: { enabled: boolean } | null;
}

/** The events of a discussion's stream; every per-turn event carries `turn` and `speaker`. */
export type DiscussionEvent =
  | { type: "discussion_start"; discussion_id: string; goal: string; turns: number; participants: Participant[] }
  | {
      type: "message_start";
      discussion_id: string;
      turn: number;
      speaker: number;
      name: string;
      role: string;
      model: string;
      provider: string;
    }
  | { type: "text_delta"; turn: number; speaker: number; text: string }
  | {
      type: "tool_call";
      turn: number;
      speaker: number;
      id: string;
      name: string;
      input: Record<string, unknown>;
      item_id: string;
    }
  | {
      type: "tool_result";
      turn: number;
      speaker: number;
      id: string;
      name: string;
      item_id: string;
      is_error: boolean;
      status: string;
      credits: number;
      duration_ms: number;
    }
  | { type: "tool_progress"; turn: number; speaker: number; id: string; item_id: string; message: string }
  | {
      type: "escalation";
      turn: number;
      speaker: number;
      reason: string;
      from_model: string;
      to_model: string;
      attempt: number;
    }
  | { type: "usage"; turn: number; speaker: number; input_tokens: number; output_tokens: number; model: string; role: string }
  | {
      type: "message_end";
      discussion_id: string;
      turn: number;
      speaker: number;
      message_id: string;
      response: string;
      tools_used: string[];
      credits_used: number;
      credits_remaining: number;
      stop_reason: string;
      escalations: number;
    }
  | { type: "error"; code: string; message: string; refunded?: boolean }
  | {
      type: "discussion_end";
      discussion_id: string;
      status: string;
      stop_reason: string;
      turns_done: number;
      credits_used: number;
      credits_remaining: number;
    };
