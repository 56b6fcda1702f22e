import { describe, expect, it } from "vitest";
import type { ConversationDetail, Item } from "../api/types";
import { turnsFromConversation } from "./history";

function item(partial: Partial<Item> & Pick<Item, "id" | "kind" | "content">): Item {
  return { ref: null, status: "done", tool_name: null, tool_input: null, is_error: false, credits: 0, duration_ms: null, created_at: null, ...partial };
}

const DOCS = "### Tasks\nLibrary: /python/cpython · Source: https://docs.python.org/3/library/asyncio-task.html\nText.";

const detail: ConversationDetail = {
  id: "c1", title: "t", query_count: 3, created_at: "", updated_at: "",
  full: [
    item({ id: "q1", kind: "query", content: "first" }),
    item({ id: "q1-r", kind: "response", content: "answer one", credits: 5, model: "claude-haiku-4-5" }),
    item({ id: "q2", kind: "query", content: "show me the full answer from earlier" }),
    item({ id: "q2-t1", kind: "tool_result", content: "[ID:q1-r] Full text…", tool_name: "retrieve_full_context", tool_input: { id: "q1-r" }, credits: 2, duration_ms: 3, status: "ok" }),
    item({ id: "q2-t2", kind: "tool_result", content: DOCS, tool_name: "retrieve_documentation", tool_input: { query: "cancel" }, credits: 10, duration_ms: 80, status: "ok" }),
    item({ id: "q2-t3", kind: "tool_result", content: "boom", tool_name: "x", is_error: true, status: "timeout" }),
    item({ id: "q2-r", kind: "response", content: "quoted [q2-t1]", credits: 17 }),
    item({ id: "q3", kind: "query", content: "long" }),
    item({ id: "q3-r", kind: "response", content: "partial\n\n[Stopped: the answer was interrupted before it was complete.]", status: "interrupted", credits: 5 }),
    item({ id: "q10", kind: "query", content: "tenth, unanswered" }),
  ],
  summarised: [
    item({ id: "q1", kind: "query", content: "first" }),
    item({ id: "q1-r-sum", kind: "response_summary", ref: "q1-r", content: "sum of one" }),
    item({ id: "q2-t1-sum", kind: "tool_summary", ref: "q2-t1", content: "tool sum" }),
  ],
};

describe("turnsFromConversation", () => {
  const turns = turnsFromConversation(detail);

  it("rebuilds one turn per query, in numeric order", () => {
    expect(turns.map((t) => t.queryId)).toEqual(["q1", "q2", "q3", "q10"]);
    expect(turns[0]).toMatchObject({ query: "first", text: "answer one", messageId: "q1-r", summary: "sum of one", credits: 5, status: "done" });
  });

  it("knows a stored answer that cost nothing was one the model declined to give", () => {
    const declined = turnsFromConversation({
      ...detail,
      full: [item({ id: "q1", kind: "query", content: "?" }), item({ id: "q1-r", kind: "response", content: "I cannot.", credits: 0 })],
      summarised: [],
    });
    expect(declined[0].stopReason).toBe("declined");
    expect(turns[0].stopReason).toBe("end_turn");
    expect(turns[2].stopReason).toBe("interrupted");
  });

  it("keeps the model that wrote a stored answer (none for answers stored before models were)", () => {
    expect(turns[0].model).toBe("claude-haiku-4-5");
    expect(turns[1].model).toBeNull();
  });

  it("rebuilds tool cards with status, credits, duration, full text, summary and parsed citations", () => {
    const [full, docs, failed] = turns[1].tools;
    expect(full).toMatchObject({ itemId: "q2-t1", summaryId: "q2-t1-sum", name: "retrieve_full_context", status: "done", credits: 2, durationMs: 3, summary: "tool sum", input: { id: "q1-r" } });
    expect(docs.citations).toEqual([{ title: "Tasks", library: "/python/cpython", url: "https://docs.python.org/3/library/asyncio-task.html" }]);
    expect(failed).toMatchObject({ status: "error", resultStatus: "timeout", citations: [] });
    expect(turns[1].credits).toBe(17);
  });

  it("shows an interrupted answer as stopped and a query without answer as an error", () => {
    expect(turns[2]).toMatchObject({ status: "stopped" });
    expect(turns[2].text).toMatch(/\[Stopped: .*\]$/);
    expect(turns[3]).toMatchObject({ status: "error", error: { code: "no_answer" } });
  });
});

describe("turnsFromConversation and the credit limit", () => {
  it("marks a turn whose stored tool call was skipped by the credit ceiling (the limit itself is not stored)", () => {
    const limited = turnsFromConversation({
      ...detail,
      full: [
        item({ id: "q1", kind: "query", content: "q" }),
        item({ id: "q1-t1", kind: "tool_result", content: "not run", tool_name: "x", is_error: true, status: "over_limit" }),
        item({ id: "q1-r", kind: "response", content: "a", credits: 5 }),
      ],
    });
    expect(limited[0]).toMatchObject({ creditLimitReached: true, creditLimit: null });
    expect(turnsFromConversation(detail).every((t) => !t.creditLimitReached)).toBe(true);
  });
});
