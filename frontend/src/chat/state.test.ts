import { describe, expect, it } from "vitest";
import type { ChatEvent } from "../api/types";
import { SseParser } from "../sse/reader";
import { parseChatEvent, ProtocolError } from "./events";
import { emptyConversation, isBusy, reduce, STOPPED_NOTE, type Action, type ConversationState } from "./state";

const start: ChatEvent = { type: "message_start", conversation_id: "c1", query_id: "q2", model: "almanac-offline", provider: "offline" };
const call: ChatEvent = { type: "tool_call", id: "call_1", name: "retrieve_full_context", input: { id: "q1-r" }, item_id: "q2-t1", turn: 1 };
const result: ChatEvent = {
  type: "tool_result", id: "call_1", name: "retrieve_full_context", item_id: "q2-t1", summary_id: "q2-t1-sum",
  is_error: false, status: "ok", summary: null, duration_ms: 12, credits: 2, citations: [],
};
const end: ChatEvent = {
  type: "message_end", conversation_id: "c1", query_id: "q2", message_id: "q2-r", summary_id: "q2-r-sum",
  summary: "short", response: "Hello world", tools_used: ["retrieve_full_context"], credits_used: 7,
  credits_remaining: 36, turns: 2, stop_reason: "end_turn", summaries: { "q2-t1-sum": "tool summary", "q2-r-sum": "short" },
};

function run(actions: Action[], state: ConversationState = emptyConversation()): ConversationState {
  return actions.reduce(reduce, state);
}

const ev = (event: ChatEvent): Action => ({ type: "event", localId: "t1", event });

describe("conversation reducer", () => {
  it("adds a pending turn on send and starts streaming at message_start", () => {
    let state = run([{ type: "send", localId: "t1", message: "hi" }]);
    expect(state.turns[0]).toMatchObject({ query: "hi", status: "pending", text: "" });
    expect(isBusy(state)).toBe(true);
    state = reduce(state, ev(start));
    expect(state.id).toBe("c1");
    expect(state.turns[0]).toMatchObject({ status: "streaming", queryId: "q2", model: "almanac-offline" });
  });

  it("accumulates text deltas in order", () => {
    const state = run([
      { type: "send", localId: "t1", message: "hi" },
      ev(start),
      ev({ type: "text_delta", text: "Hel" }),
      ev({ type: "text_delta", text: "lo " }),
      ev({ type: "text_delta", text: "wörld" }),
    ]);
    expect(state.turns[0].text).toBe("Hello wörld");
  });

  it("shows a tool card running, then done with duration, credits and (later) its summary", () => {
    let state = run([{ type: "send", localId: "t1", message: "show me" }, ev(start), ev(call)]);
    expect(state.turns[0].tools).toEqual([
      expect.objectContaining({ callId: "call_1", itemId: "q2-t1", summaryId: "q2-t1-sum", status: "running", credits: null }),
    ]);
    state = reduce(state, ev(result));
    expect(state.turns[0].tools[0]).toMatchObject({ status: "done", durationMs: 12, credits: 2, resultStatus: "ok", summary: null });
    state = reduce(state, ev(end));
    expect(state.turns[0].tools[0].summary).toBe("tool summary");
  });

  it("marks a failed tool call as an error card", () => {
    const state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start), ev(call),
      ev({ ...(result as Extract<ChatEvent, { type: "tool_result" }>), is_error: true, status: "timeout", credits: 0 }),
    ]);
    expect(state.turns[0].tools[0]).toMatchObject({ status: "error", resultStatus: "timeout", credits: 0 });
  });

  it("keeps citations from tool results", () => {
    const citations = [{ title: "asyncio", url: "https://docs.python.org/3/library/asyncio.html", library: "python" }];
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), ev(call), ev({ ...(result as Extract<ChatEvent, { type: "tool_result" }>), citations })]);
    expect(state.turns[0].tools[0].citations).toEqual(citations);
  });

  it("takes IDs, credits and the stored response from message_end", () => {
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), ev({ type: "text_delta", text: "Hello" }), ev(end)]);
    expect(state.turns[0]).toMatchObject({
      status: "done", text: "Hello world", messageId: "q2-r", summaryId: "q2-r-sum", summary: "short",
      credits: 7, creditsRemaining: 36, stopReason: "end_turn",
    });
    expect(isBusy(state)).toBe(false);
  });

  it("sums usage over model turns", () => {
    const state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start),
      ev({ type: "usage", turn: 1, input_tokens: 100, output_tokens: 10 }),
      ev({ type: "usage", turn: 2, input_tokens: 150, output_tokens: 40 }),
    ]);
    expect(state.turns[0].usage).toEqual({ input: 250, output: 50 });
  });

  it("records an error event and ends in error even when message_end follows", () => {
    let state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start), ev({ type: "text_delta", text: "partial" }),
      ev({ type: "error", code: "model_error", message: "the model failed", refunded: false }),
    ]);
    expect(state.turns[0]).toMatchObject({ status: "streaming", error: { kind: "stream", code: "model_error" } });
    state = reduce(state, ev({ ...(end as Extract<ChatEvent, { type: "message_end" }>), stop_reason: "error", response: "partial\n\n[The answer stopped early: the model failed]" }));
    expect(state.turns[0].status).toBe("error");
    expect(state.turns[0].text).toContain("stopped early");
  });

  it("ends in error when the stream closes without message_end (incomplete), cancelling running tools", () => {
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), ev(call), { type: "stream_ended", localId: "t1" }]);
    expect(state.turns[0]).toMatchObject({ status: "error", error: { kind: "incomplete" } });
    expect(state.turns[0].tools[0].status).toBe("cancelled");
  });

  it("keeps the error event's details when the stream closes after an error (query refunded)", () => {
    const state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start),
      ev({ type: "error", code: "provider_unavailable", message: "down", refunded: true }),
      { type: "stream_ended", localId: "t1" },
    ]);
    expect(state.turns[0]).toMatchObject({ status: "error", error: { code: "provider_unavailable", refunded: true } });
  });

  it("records a refusal before the stream (402) with what the user can do", () => {
    const state = run([
      { type: "send", localId: "t1", message: "x" },
      { type: "refused", localId: "t1", error: { kind: "refused", status: 402, code: "insufficient_credits", message: "no credits", balance: 3, needed: 5, howToGetMore: "buy a pack" } },
    ]);
    expect(state.turns[0]).toMatchObject({ status: "error", error: { status: 402, balance: 3, needed: 5 } });
    expect(isBusy(state)).toBe(false);
  });

  it("records a network failure", () => {
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), { type: "network_error", localId: "t1", message: "offline" }]);
    expect(state.turns[0]).toMatchObject({ status: "error", error: { kind: "network", message: "offline" } });
  });

  it("stops: appends the Stopped note, cancels running tools and ignores later events", () => {
    let state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start), ev({ type: "text_delta", text: "Some text " }), ev(call),
      { type: "stopped", localId: "t1" },
    ]);
    expect(state.turns[0].status).toBe("stopped");
    expect(state.turns[0].text).toBe(`Some text\n\n${STOPPED_NOTE}`);
    expect(state.turns[0].tools[0].status).toBe("cancelled");
    const after = reduce(state, ev({ type: "text_delta", text: "late" }));
    expect(after).toBe(state);
    state = reduce(state, { type: "stream_ended", localId: "t1" });
    expect(state.turns[0].status).toBe("stopped");
  });

  it("treats message_end with stop_reason cancelled as stopped", () => {
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), ev({ ...(end as Extract<ChatEvent, { type: "message_end" }>), stop_reason: "cancelled" })]);
    expect(state.turns[0].status).toBe("stopped");
  });

  it("shows a tool result that arrives without its call", () => {
    const state = run([{ type: "send", localId: "t1", message: "x" }, ev(start), ev(result)]);
    expect(state.turns[0].tools).toHaveLength(1);
    expect(state.turns[0].tools[0]).toMatchObject({ itemId: "q2-t1", status: "done" });
  });

  it("only touches the turn an event belongs to", () => {
    const state = run([
      { type: "send", localId: "t0", message: "old" },
      { type: "stream_ended", localId: "t0" },
      { type: "send", localId: "t1", message: "new" },
      ev({ type: "text_delta", text: "x" }),
    ]);
    expect(state.turns.map((t) => t.text)).toEqual(["", "x"]);
  });

  it("on reload, prefers the stored turn (keeping the local key) and keeps local-only turns", () => {
    let state = run([
      { type: "send", localId: "t1", message: "x" }, ev(start), ev({ type: "text_delta", text: "part" }), { type: "stopped", localId: "t1" },
      { type: "send", localId: "t2", message: "y" },
      { type: "refused", localId: "t2", error: { kind: "refused", status: 402, code: "insufficient_credits", message: "no" } },
    ], emptyConversation("c1"));
    const stored = { ...state.turns[0], localId: "stored-q2", text: `part\n\n${STOPPED_NOTE}`, messageId: "q2-r" };
    state = reduce(state, { type: "loaded", id: "c1", title: "T", turns: [stored] });
    expect(state.turns.map((t) => [t.localId, t.messageId])).toEqual([["t1", "q2-r"], ["t2", null]]);
  });

  it("keeps a running turn when the stored history is (re)loaded", () => {
    let state = run([{ type: "send", localId: "t1", message: "x" }, ev(start)], emptyConversation("c1"));
    state = reduce(state, { type: "loaded", id: "c1", title: "T", turns: [] });
    expect(state.turns.map((t) => t.localId)).toEqual(["t1"]);
    expect(state).toMatchObject({ loaded: true, title: "T" });
  });

  it("knows the conversation's stored strategy once loaded, and a change of it", () => {
    let state = emptyConversation("c1");
    expect(state.strategy).toBeUndefined(); // not known yet: the UI falls back to the list's copy
    state = reduce(state, { type: "loaded", id: "c1", title: "T", turns: [], strategy: "boost" });
    expect(state.strategy).toBe("boost");
    state = reduce(state, { type: "strategy", strategy: "collaborate" });
    expect(state.strategy).toBe("collaborate");
    state = reduce(state, { type: "loaded", id: "c1", title: "T", turns: [] });
    expect(state.strategy).toBeNull(); // stored without one: the user's default applies
  });
});

describe("events of boost, collaboration, progress, late summaries and credit limits", () => {
  const endEvent = end as Extract<ChatEvent, { type: "message_end" }>;
  const resultEvent = result as Extract<ChatEvent, { type: "tool_result" }>;
  const sent: Action = { type: "send", localId: "t1", message: "x" };

  it("shows a running tool's progress and clears it when the result comes", () => {
    let state = run([sent, ev(start), ev(call), ev({ type: "tool_progress", id: "call_1", item_id: "q2-t1", message: "building the documentation index… 40%" })]);
    expect(state.turns[0].tools[0].progress).toBe("building the documentation index… 40%");
    state = reduce(state, ev({ type: "tool_progress", id: "call_1", item_id: "q2-t1", message: "… 80%" }));
    expect(state.turns[0].tools[0].progress).toBe("… 80%");
    state = reduce(state, ev(result));
    expect(state.turns[0].tools[0]).toMatchObject({ status: "done", progress: null });
    // Progress of a finished or unknown call changes nothing.
    expect(reduce(state, ev({ type: "tool_progress", id: "call_1", item_id: "q2-t1", message: "late" }))).toBe(state);
    expect(reduce(state, ev({ type: "tool_progress", id: "nope", item_id: "q9-t9", message: "?" }))).toBe(state);
  });

  it("keeps the planner's steps in order, each placed after the tool cards that came before it", () => {
    const state = run([
      sent, ev(start),
      ev({ type: "plan", loop: 1, analysis: "Needs **docs**", guidance: "Call `retrieve_documentation`", model: "planner-m" }),
      ev(call), ev(result),
      ev({ type: "plan", loop: 2, analysis: "Enough", guidance: "Answer", model: "planner-m" }),
    ]);
    expect(state.turns[0].plans).toEqual([
      { loop: 1, analysis: "Needs **docs**", guidance: "Call `retrieve_documentation`", model: "planner-m", afterTools: 0 },
      { loop: 2, analysis: "Enough", guidance: "Answer", model: "planner-m", afterTools: 1 },
    ]);
  });

  it("records an escalation to a helper model", () => {
    const state = run([
      sent, ev(start), ev(call),
      ev({ type: "escalation", reason: "the same tool failed twice", from_model: "small", to_model: "big", attempt: 1 }),
    ]);
    expect(state.turns[0].escalations).toEqual([
      { reason: "the same tool failed twice", fromModel: "small", toModel: "big", attempt: 1, afterTools: 1 },
    ]);
  });

  it("frees the conversation at message_end even when the answer's summary is not written yet", () => {
    const state = run([sent, ev(start), ev(call), ev(result), ev({ ...endEvent, summary: null, summaries: {} })]);
    expect(isBusy(state)).toBe(false);
    expect(state.turns[0]).toMatchObject({ status: "done", summary: null, summaryId: "q2-r-sum" });
    expect(state.turns[0].tools[0].summary).toBeNull();
  });

  it("fills in summaries that arrive after message_end: the tool card's and the answer's", () => {
    let state = run([sent, ev(start), ev(call), ev(result), ev({ ...endEvent, summary: null, summaries: {} })]);
    state = reduce(state, ev({ type: "summary", item_id: "q2-t1", summary_id: "q2-t1-sum", summary: "the tool's gist", status: "done" }));
    expect(state.turns[0].tools[0]).toMatchObject({ summary: "the tool's gist", summaryFailed: false });
    state = reduce(state, ev({ type: "summary", item_id: "q2-r", summary_id: "q2-r-sum", summary: "the answer's gist", status: "done" }));
    expect(state.turns[0].summary).toBe("the answer's gist");
    expect(state.turns[0].status).toBe("done");
  });

  it("marks a failed summary, and ignores summaries of items it does not show", () => {
    let state = run([sent, ev(start), ev(call), ev(result), ev({ ...endEvent, summary: null, summaries: {} })]);
    state = reduce(state, ev({ type: "summary", item_id: "q2-t1", summary_id: "q2-t1-sum", summary: "", status: "failed" }));
    expect(state.turns[0].tools[0]).toMatchObject({ summary: null, summaryFailed: true });
    expect(reduce(state, ev({ type: "summary", item_id: "q7-t1", summary_id: "q7-t1-sum", summary: "x", status: "done" }))).toBe(state);
  });

  it("lets a new message start while the previous answer's summaries are still coming", () => {
    let state = run([sent, ev(start), ev({ ...endEvent, summary: null, summaries: {} }), { type: "send", localId: "t2", message: "next" }]);
    expect(state.turns.map((t) => t.status)).toEqual(["done", "pending"]);
    state = reduce(state, { type: "event", localId: "t1", event: { type: "summary", item_id: "q2-r", summary_id: "q2-r-sum", summary: "late", status: "done" } });
    expect(state.turns[0].summary).toBe("late");
    expect(state.turns[1].status).toBe("pending");
    state = reduce(state, { type: "stream_ended", localId: "t1" }); // the old stream closes: nothing changes
    expect(state.turns.map((t) => t.status)).toEqual(["done", "pending"]);
  });

  it("notes when the question reached its credit limit (from message_end or a skipped tool)", () => {
    const fromEnd = run([sent, ev(start), ev({ ...endEvent, credit_limit: 40, credit_limit_reached: true })]);
    expect(fromEnd.turns[0]).toMatchObject({ creditLimit: 40, creditLimitReached: true });
    const skipped = run([sent, ev(start), ev(call), ev({ ...resultEvent, is_error: true, status: "over_limit", credits: 0 })]);
    expect(skipped.turns[0]).toMatchObject({ creditLimitReached: true, creditLimit: null });
    expect(skipped.turns[0].tools[0]).toMatchObject({ status: "error", resultStatus: "over_limit" });
    const normal = run([sent, ev(start), ev(end)]);
    expect(normal.turns[0]).toMatchObject({ creditLimit: null, creditLimitReached: false });
  });
});

describe("parsing the new events", () => {
  const parse = (type: string, data: Record<string, unknown>) => parseChatEvent({ event: type, data: JSON.stringify(data), id: "" });

  it("reads plan, escalation, tool_progress and summary; message_end's summary may be null", () => {
    expect(parse("plan", { type: "plan", loop: 1, analysis: "a", guidance: "g", model: "m" })).toMatchObject({ type: "plan", loop: 1 });
    expect(parse("escalation", { reason: "stuck", from_model: "a", to_model: "b", attempt: 1 })).toMatchObject({ type: "escalation", to_model: "b" });
    expect(parse("tool_progress", { id: "c", item_id: "q1-t1", message: 42 })).toMatchObject({ type: "tool_progress", message: "42" });
    expect(parse("summary", { item_id: "q1-r", summary_id: "q1-r-sum", summary: null, status: "failed" })).toMatchObject({ type: "summary", summary: "" });
    expect(parse("message_end", { ...end, summary: null })).toMatchObject({ type: "message_end", summary: null });
  });

  it("ignores event types it does not know, whatever their data", () => {
    expect(parse("thinking_delta", { type: "thinking_delta", text: "hmm" })).toBeNull();
    expect(parse("x", { type: "x" })).toBeNull();
    let state = run([{ type: "send", localId: "t1", message: "x" }, ev(start)]);
    const unknown = { type: "brand_new" } as unknown as ChatEvent;
    state = reduce(state, ev(unknown));
    expect(state.turns[0].status).toBe("streaming");
  });
});

describe("events from a real SSE body into state", () => {
  it("builds the same state however the body is chunked", () => {
    const frames = [start, { type: "text_delta", text: "Ünïcödé " }, call, result, { type: "text_delta", text: "ok" }, end]
      .map((e) => `event: ${e.type}\r\ndata: ${JSON.stringify(e)}\r\n\r\n: heartbeat\r\n\r\n`)
      .join("");
    const bytes = new TextEncoder().encode(frames);
    const build = (size: number) => {
      const parser = new SseParser();
      let state = run([{ type: "send", localId: "t1", message: "q" }]);
      for (let i = 0; i <= bytes.length; i += size) {
        const out = i < bytes.length ? parser.push(bytes.slice(i, i + size)) : parser.end();
        for (const m of out.messages) {
          const event = parseChatEvent(m);
          if (event) state = reduce(state, ev(event));
        }
      }
      return reduce(state, { type: "stream_ended", localId: "t1" });
    };
    const reference = build(bytes.length);
    expect(reference.turns[0]).toMatchObject({ status: "done", text: "Hello world", credits: 7 });
    for (const size of [1, 2, 3, 7, 64]) expect(build(size)).toEqual(reference);
  });

  it("ignores unknown event types and rejects unreadable data", () => {
    expect(parseChatEvent({ event: "ping", data: "{\"type\": \"ping\"}", id: "" })).toBeNull();
    expect(() => parseChatEvent({ event: "text_delta", data: "{not json", id: "" })).toThrow(ProtocolError);
    expect(parseChatEvent({ event: "text_delta", data: "{\"text\": \"a\"}", id: "" })).toEqual({ type: "text_delta", text: "a" });
  });
});
