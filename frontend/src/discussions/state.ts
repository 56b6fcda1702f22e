/**
 * A discussion as the page shows it, folded from its streamed events or from its stored detail
 * (pure), and the form that starts one.
 */

import type { Escalation } from "../chat/turn";
import type { DiscussionCreate, DiscussionDetail, DiscussionEvent, Participant } from "./types";

export interface ToolStep {
  id: string;
  name: string;
  input: Record<string, unknown>;
  itemId: string;
  status: "running" | "done" | "error";
  resultStatus: string | null;
  credits: number | null;
  durationMs: number | null;
  progress: string | null;
}

export interface SpokenTurn {
  turn: number;
  speaker: number;
  name: string;
  role: string;
  model: string;
  text: string;
  tools: ToolStep[];
  escalations: Escalation[];
  status: "speaking" | "done" | "interrupted";
  credits: number | null;
}

export type DiscussionStatus = "starting" | "running" | "done" | "stopped" | "failed" | "interrupted";

export interface DiscussionView {
  id: string | null;
  goal: string;
  turns: number;
  participants: Participant[];
  spoken: SpokenTurn[];
  status: DiscussionStatus;
  stopReason: string | null;
  creditsUsed: number;
  creditsRemaining: number | null;
  error: { code: string; message: string } | null;
}

export function startingView(request: DiscussionCreate): DiscussionView {
  return {
    id: null,
    goal: request.goal,
    turns: request.turns,
    participants: request.participants.map((p, index) => ({
      index,
      model: p.model,
      role: p.role,
      name: p.name || `Participant ${index + 1}`,
    })),
    spoken: [],
    status: "starting",
    stopReason: null,
    creditsUsed: 0,
    creditsRemaining: null,
    error: null,
  };
}

function updateTurn(view: DiscussionView, turn: number, change: (spoken: SpokenTurn) => SpokenTurn): DiscussionView {
  const index = view.spoken.findIndex((s) => s.turn === turn);
  if (index < 0) return view;
  const spoken = view.spoken.slice();
  spoken[index] = change(spoken[index]);
  return { ...view, spoken };
}

function updateTool(spoken: SpokenTurn, id: string, change: (tool: ToolStep) => ToolStep): SpokenTurn {
  const index = spoken.tools.findIndex((t) => t.id === id);
  if (index < 0) return spoken;
  const tools = spoken.tools.slice();
  tools[index] = change(tools[index]);
  return { ...spoken, tools };
}

/** Apply one streamed event. Unknown events (a newer server's) change nothing. */
export function applyDiscussionEvent(view: DiscussionView, event: DiscussionEvent): DiscussionView {
  switch (event.type) {
    case "discussion_start":
      return { ...view, id: event.discussion_id, goal: event.goal, turns: event.turns, participants: event.participants, status: "running" };
    case "message_start": {
      const spoken: SpokenTurn = {
        turn: event.turn,
        speaker: event.speaker,
        name: event.name,
        role: event.role,
        model: event.model,
        text: "",
        tools: [],
        escalations: [],
        status: "speaking",
        credits: null,
      };
      return { ...view, status: "running", spoken: [...view.spoken.filter((s) => s.turn !== event.turn), spoken] };
    }
    case "text_delta":
      return updateTurn(view, event.turn, (s) => ({ ...s, text: s.text + event.text }));
    case "tool_call":
      return updateTurn(view, event.turn, (s) =>
        s.tools.some((t) => t.id === event.id)
          ? s
          : {
              ...s,
              tools: [
                ...s.tools,
                {
                  id: event.id,
                  name: event.name,
                  input: event.input ?? {},
                  itemId: event.item_id,
                  status: "running",
                  resultStatus: null,
                  credits: null,
                  durationMs: null,
                  progress: null,
                },
              ],
            },
      );
    case "tool_progress":
      return updateTurn(view, event.turn, (s) => updateTool(s, event.id, (t) => ({ ...t, progress: event.message })));
    case "tool_result":
      return updateTurn(view, event.turn, (s) =>
        updateTool(s, event.id, (t) => ({
          ...t,
          status: event.is_error ? "error" : "done",
          resultStatus: event.status,
          credits: event.credits,
          durationMs: event.duration_ms,
          progress: null,
        })),
      );
    case "escalation":
      return updateTurn(view, event.turn, (s) => ({
        ...s,
        escalations: [
          ...s.escalations,
          {
            reason: event.reason,
            fromModel: event.from_model,
            toModel: event.to_model,
            attempt: event.attempt,
            afterTools: s.tools.length,
          },
        ],
      }));
    case "message_end":
      return {
        ...updateTurn(view, event.turn, (s) => ({
          ...s,
          text: event.response || s.text,
          credits: event.credits_used,
          status: event.stop_reason === "interrupted" ? "interrupted" : "done",
          tools: s.tools.map((t) => (t.status === "running" ? { ...t, status: "error", resultStatus: "cancelled" } : t)),
        })),
        creditsUsed: view.creditsUsed + event.credits_used,
        creditsRemaining: event.credits_remaining,
      };
    case "error":
      return { ...view, error: { code: event.code, message: event.message } };
    case "discussion_end":
      return {
        ...view,
        status: endStatus(event.status),
        stopReason: event.stop_reason,
        creditsUsed: event.credits_used,
        creditsRemaining: event.credits_remaining,
      };
    default:
      return view;
  }
}

function endStatus(status: string): DiscussionStatus {
  return status === "done" || status === "stopped" || status === "failed" || status === "interrupted" ? status : "done";
}

/** A stored discussion as the page shows it. */
export function fromDetail(detail: DiscussionDetail): DiscussionView {
  const byTurn = new Map<number, SpokenTurn>();
  for (const item of detail.items) {
    if (item.kind !== "response") continue;
    const speaker = detail.participants[item.speaker ?? (item.turn - 1) % Math.max(1, detail.participants.length)];
    byTurn.set(item.turn, {
      turn: item.turn,
      speaker: speaker?.index ?? 0,
      name: speaker?.name ?? "Participant",
      role: speaker?.role ?? "",
      model: item.model ?? speaker?.model ?? "",
      text: item.content,
      tools: [],
      escalations: [],
      status: item.status === "interrupted" ? "interrupted" : "done",
      credits: item.credits,
    });
  }
  for (const item of detail.items) {
    const spoken = byTurn.get(item.turn);
    if (item.kind !== "tool_result" || !spoken) continue;
    spoken.tools.push({
      id: item.id,
      name: item.tool_name ?? "tool",
      input: item.tool_input ?? {},
      itemId: item.id,
      status: item.is_error ? "error" : "done",
      resultStatus: item.status,
      credits: item.credits,
      durationMs: item.duration_ms ?? null,
      progress: null,
    });
  }
  return {
    id: detail.id,
    goal: detail.goal,
    turns: detail.turns,
    participants: detail.participants,
    spoken: [...byTurn.values()].sort((a, b) => a.turn - b.turn),
    status: detail.status === "running" ? "running" : endStatus(detail.status),
    stopReason: detail.stop_reason || null,
    creditsUsed: detail.credits_used,
    creditsRemaining: null,
    error: detail.error ?? null,
  };
}

const REASONS: Record<string, string> = {
  completed: "Finished",
  credits_exhausted: "Stopped: out of credits",
  cancelled: "Stopped",
  model_error: "Stopped: a model failed",
  internal_error: "Stopped by an error",
  interrupted: "Interrupted: the server stopped",
};

/** One line saying how the discussion ended (or that it is still going). */
export function outcome(view: DiscussionView): string {
  if (view.status === "starting") return "Starting…";
  if (view.status === "running") return `Turn ${view.spoken.length} of ${view.turns}…`;
  const done = view.spoken.filter((s) => s.status !== "speaking").length;
  const how = REASONS[view.stopReason ?? ""] ?? "Ended";
  return `${how} after ${done} of ${view.turns} turns · ${view.creditsUsed} credits`;
}

export interface ParticipantForm {
  model: string;
  role: string;
  name: string;
}

export interface DiscussionForm {
  goal: string;
  turns: number;
  participants: ParticipantForm[];
  tools: boolean;
  collaboration: boolean;
}

export interface Limits {
  max_turns: number;
  max_participants: number;
}

/** What is wrong with the form (the field and what to say), or null. */
export function formProblem(form: DiscussionForm, limits: Limits): { field: string; message: string } | null {
  if (!form.goal.trim()) return { field: "goal", message: "Say what the discussion is for." };
  if (!Number.isInteger(form.turns) || form.turns < 1 || form.turns > limits.max_turns) {
    return { field: "turns", message: `Turns: 1 to ${limits.max_turns}.` };
  }
  if (form.participants.length < 2) return { field: "participants", message: "A discussion needs two participants." };
  const missing = form.participants.findIndex((p) => !p.model || !p.role.trim());
  if (missing >= 0) return { field: `participant-${missing}`, message: `Participant ${missing + 1} needs a model and a role.` };
  return null;
}

/** The form as the API's request body. */
export function toRequest(form: DiscussionForm): DiscussionCreate {
  return {
    goal: form.goal.trim(),
    turns: form.turns,
    participants: form.participants.map((p) => ({
      model: p.model,
      role: p.role.trim(),
      ...(p.name.trim() ? { name: p.name.trim() } : {}),
    })),
    tools: form.tools ? null : [],
    collaboration: form.collaboration ? { enabled: true } : null,
  };
}
