import { describe, expect, it } from "vitest";
import { parseRoute } from "../lib/router";
import { applyDiscussionEvent, formProblem, fromDetail, outcome, startingView, toRequest, type DiscussionForm } from "./state";
import type { DiscussionDetail, DiscussionEvent } from "./types";

const REQUEST = {
  goal: "Plan the release",
  turns: 2,
  participants: [
    { model: "offline", role: "asks", name: "Ada" },
    { model: "offline", role: "answers" },
  ],
};

const PARTICIPANTS = [
  { index: 0, model: "offline", role: "asks", name: "Ada" },
  { index: 1, model: "offline", role: "answers", name: "Participant 2" },
];

function fold(events: DiscussionEvent[]) {
  return events.reduce(applyDiscussionEvent, startingView(REQUEST));
}

const START: DiscussionEvent = { type: "discussion_start", discussion_id: "d1", goal: "Plan the release", turns: 2, participants: PARTICIPANTS };
const turnStart = (turn: number, speaker: number): DiscussionEvent => ({
  type: "message_start",
  discussion_id: "d1",
  turn,
  speaker,
  name: PARTICIPANTS[speaker].name,
  role: PARTICIPANTS[speaker].role,
  model: "offline",
  provider: "offline",
});
const turnEnd = (turn: number, speaker: number, response: string, credits: number): DiscussionEvent => ({
  type: "message_end",
  discussion_id: "d1",
  turn,
  speaker,
  message_id: `q${turn}-r`,
  response,
  tools_used: [],
  credits_used: credits,
  credits_remaining: 50 - 5 * turn,
  stop_reason: "end_turn",
  escalations: 0,
});

describe("a discussion folded from its events", () => {
  it("starts with the request's participants, named", () => {
    const view = startingView(REQUEST);
    expect(view.status).toBe("starting");
    expect(view.participants.map((p) => p.name)).toEqual(["Ada", "Participant 2"]);
    expect(outcome(view)).toBe("Starting…");
  });

  it("gives each turn its speaker, text, tools and escalations", () => {
    const view = fold([
      START,
      turnStart(1, 0),
      { type: "text_delta", turn: 1, speaker: 0, text: "Ship " },
      { type: "tool_call", turn: 1, speaker: 0, id: "t1", name: "clock", input: {}, item_id: "q1-t1" },
      { type: "tool_progress", turn: 1, speaker: 0, id: "t1", item_id: "q1-t1", message: "asking the clock" },
      { type: "text_delta", turn: 1, speaker: 0, text: "Friday" },
    ]);
    expect(view.id).toBe("d1");
    expect(view.status).toBe("running");
    expect(outcome(view)).toBe("Turn 1 of 2…");
    const [first] = view.spoken;
    expect([first.name, first.text, first.status]).toEqual(["Ada", "Ship Friday", "speaking"]);
    expect(first.tools[0]).toMatchObject({ name: "clock", status: "running", progress: "asking the clock" });

    const later = [
      { type: "tool_result", turn: 1, speaker: 0, id: "t1", name: "clock", item_id: "q1-t1", is_error: false, status: "ok", credits: 2, duration_ms: 3 },
      turnEnd(1, 0, "Ship Friday.", 7),
      turnStart(2, 1),
      { type: "escalation", turn: 2, speaker: 1, reason: "explicit_phrase", from_model: "offline", to_model: "big", attempt: 1 },
      turnEnd(2, 1, "Friday is fine.", 5),
    ] as DiscussionEvent[];
    const after = later.reduce(applyDiscussionEvent, view);
    expect(after.spoken.map((s) => [s.turn, s.speaker, s.text, s.credits, s.status])).toEqual([
      [1, 0, "Ship Friday.", 7, "done"],
      [2, 1, "Friday is fine.", 5, "done"],
    ]);
    expect(after.spoken[0].tools[0]).toMatchObject({ status: "done", credits: 2, progress: null });
    expect(after.spoken[1].escalations).toEqual([{ reason: "explicit_phrase", fromModel: "offline", toModel: "big", attempt: 1, afterTools: 0 }]);
    expect(after.creditsUsed).toBe(12);
  });

  it("says how it ended, credits run out included", () => {
    const view = fold([
      START,
      turnStart(1, 0),
      turnEnd(1, 0, "One.", 5),
      { type: "error", code: "insufficient_credits", message: "Turn 2 needs 5 credits and the balance is 2: the discussion stops here." },
      { type: "discussion_end", discussion_id: "d1", status: "stopped", stop_reason: "credits_exhausted", turns_done: 1, credits_used: 5, credits_remaining: 2 },
    ]);
    expect(view.status).toBe("stopped");
    expect(view.error?.code).toBe("insufficient_credits");
    expect(outcome(view)).toBe("Stopped: out of credits after 1 of 2 turns · 5 credits");
  });

  it("marks an interrupted turn and ignores events it does not know", () => {
    const view = fold([
      START,
      turnStart(1, 0),
      { type: "tool_call", turn: 1, speaker: 0, id: "t1", name: "clock", input: {}, item_id: "q1-t1" },
      { ...turnEnd(1, 0, "Half.\n\n[The turn was interrupted.]", 5), stop_reason: "interrupted" } as DiscussionEvent,
      { type: "something_new", turn: 1 } as unknown as DiscussionEvent,
    ]);
    expect(view.spoken[0].status).toBe("interrupted");
    expect(view.spoken[0].tools[0]).toMatchObject({ status: "error", resultStatus: "cancelled" });
  });
});

describe("a stored discussion", () => {
  it("shows its messages by turn with their tool calls", () => {
    const detail: DiscussionDetail = {
      id: "d1",
      title: "Plan the release",
      goal: "Plan the release",
      status: "done",
      stop_reason: "completed",
      turns: 2,
      turns_done: 2,
      credits_used: 12,
      participants: PARTICIPANTS,
      tools: ["clock"],
      collaboration: false,
      created_at: "2026-11-24T10:00:00Z",
      updated_at: "2026-11-24T10:01:00Z",
      items: [
        { id: "q1-t1", kind: "tool_result", content: "12:00", status: "ok", tool_name: "clock", tool_input: {}, credits: 2, turn: 1, speaker: null, model: null },
        { id: "q1-t1-sum", kind: "tool_summary", content: "12:00", status: "done", credits: 0, turn: 1, speaker: null, model: null },
        { id: "q1-r", kind: "response", content: "Ship Friday.", status: "done", credits: 7, turn: 1, speaker: 0, model: "offline" },
        { id: "q2-r", kind: "response", content: "Fine.", status: "done", credits: 5, turn: 2, speaker: 1, model: "offline" },
      ],
    };
    const view = fromDetail(detail);
    expect(view.spoken.map((s) => [s.turn, s.name, s.text])).toEqual([
      [1, "Ada", "Ship Friday."],
      [2, "Participant 2", "Fine."],
    ]);
    expect(view.spoken[0].tools.map((t) => t.name)).toEqual(["clock"]);
    expect(outcome(view)).toBe("Finished after 2 of 2 turns · 12 credits");
  });
});

describe("the form", () => {
  const limits = { max_turns: 20, max_participants: 4 };
  const form: DiscussionForm = {
    goal: "  Plan the release ",
    turns: 3,
    participants: [
      { model: "offline", role: " asks ", name: "" },
      { model: "offline", role: "answers", name: " Bo " },
    ],
    tools: false,
    collaboration: true,
  };

  it("becomes the request body", () => {
    expect(formProblem(form, limits)).toBeNull();
    expect(toRequest(form)).toEqual({
      goal: "Plan the release",
      turns: 3,
      participants: [
        { model: "offline", role: "asks" },
        { model: "offline", role: "answers", name: "Bo" },
      ],
      tools: [],
      collaboration: { enabled: true },
    });
    expect(toRequest({ ...form, tools: true, collaboration: false })).toMatchObject({ tools: null, collaboration: null });
  });

  it("names what is missing", () => {
    expect(formProblem({ ...form, goal: " " }, limits)?.field).toBe("goal");
    expect(formProblem({ ...form, turns: 21 }, limits)?.field).toBe("turns");
    expect(formProblem({ ...form, turns: 0 }, limits)?.field).toBe("turns");
    expect(formProblem({ ...form, participants: [form.participants[0]] }, limits)?.field).toBe("participants");
    expect(formProblem({ ...form, participants: [form.participants[0], { model: "offline", role: " ", name: "" }] }, limits)?.field).toBe(
      "participant-1",
    );
  });
});

describe("routes", () => {
  it("routes /discussions and /discussions/{id}", () => {
    expect(parseRoute("/discussions")).toEqual({ conversationId: null, discussions: { id: null } });
    expect(parseRoute("/discussions/")).toEqual({ conversationId: null, discussions: { id: null } });
    expect(parseRoute("/discussions/a%20b")).toEqual({ conversationId: null, discussions: { id: "a b" } });
    expect(parseRoute("/discussions/a/b")).toEqual({ conversationId: null });
  });
});
