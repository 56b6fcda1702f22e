// @vitest-environment jsdom
import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatEvent } from "../api/types";
import { newTurn, reduce, type Action, type ConversationState } from "../chat/state";
import { Turn } from "./Turn";

const events: ChatEvent[] = [
  { type: "message_start", conversation_id: "c1", query_id: "q1", model: "exec-m", provider: "offline" },
  { type: "plan", loop: 1, analysis: "Needs the **docs** <img src=x onerror=alert(1)>", guidance: "Call `retrieve_documentation`", model: "planner-m" },
  { type: "tool_call", id: "a", name: "retrieve_documentation", input: { query: "spin" }, item_id: "q1-t1", turn: 1 },
  { type: "tool_progress", id: "a", item_id: "q1-t1", message: "building the documentation index… 40%" },
];

function stateOf(list: ChatEvent[]): ConversationState {
  const start: ConversationState = { id: null, title: null, turns: [newTurn("t1", "How?")], loaded: true, loading: false, loadError: null };
  return list.map((event): Action => ({ type: "event", localId: "t1", event })).reduce(reduce, start);
}

function mount(state: ConversationState): HTMLElement {
  const root = document.createElement("div");
  document.body.append(root);
  render(
    <Turn
      turn={state.turns[0]}
      conversationId="c1"
      expanded={new Set()}
      highlighted={null}
      onToggleTool={() => {}}
      onRetry={() => {}}
      onDismiss={() => {}}
    />,
    root,
  );
  return root;
}

afterEach(() => {
  document.body.innerHTML = "";
});

describe("a turn with plans, progress, escalations and a credit limit", () => {
  it("shows the running tool's progress and a collapsed plan before it, its Markdown sanitised", () => {
    const root = mount(stateOf(events));
    const steps = Array.from(root.querySelector(".tools")!.children).map((el) => el.getAttribute("data-testid") ?? el.tagName);
    expect(steps).toEqual(["plan", "SECTION"]);
    expect(root.querySelector("[data-testid=tool-progress]")?.textContent).toBe("building the documentation index… 40%");
    const plan = root.querySelector<HTMLDetailsElement>("details[data-testid=plan]")!;
    expect(plan.open).toBe(false);
    expect(plan.querySelector("summary")?.textContent).toContain("Plan (loop 1)");
    expect(plan.querySelector(".plan-body strong")?.textContent).toBe("docs");
    expect(plan.querySelector(".plan-body code")?.textContent).toBe("retrieve_documentation");
    expect(plan.querySelector("img")).toBeNull();
    expect(plan.innerHTML).not.toContain("onerror=\"");
  });

  it("after the answer: escalation line, skipped lookup, the credit-limit notice under the answer", () => {
    const state = stateOf([
      ...events,
      { type: "tool_result", id: "a", name: "retrieve_documentation", item_id: "q1-t1", summary_id: "q1-t1-sum", is_error: false, status: "ok", summary: "s", duration_ms: 5, credits: 10, citations: [] },
      { type: "escalation", reason: "the same tool failed twice", from_model: "small-m", to_model: "big-m", attempt: 1 },
      { type: "tool_call", id: "b", name: "github__search_repositories", input: {}, item_id: "q1-t2", turn: 2 },
      { type: "tool_result", id: "b", name: "github__search_repositories", item_id: "q1-t2", summary_id: "q1-t2-sum", is_error: true, status: "over_limit", summary: null, duration_ms: 0, credits: 0, citations: [] },
      { type: "text_delta", text: "Answer." },
      {
        type: "message_end", conversation_id: "c1", query_id: "q1", message_id: "q1-r", summary_id: "q1-r-sum", summary: null,
        response: "Answer.", tools_used: [], credits_used: 15, credits_remaining: 35, turns: 2, stop_reason: "end_turn",
        summaries: {}, credit_limit: 15, credit_limit_reached: true,
      },
    ]);
    const root = mount(state);
    const steps = Array.from(root.querySelector(".tools")!.children).map((el) => el.getAttribute("data-testid") ?? el.tagName);
    expect(steps).toEqual(["plan", "SECTION", "escalation", "SECTION"]);
    expect(root.querySelector("[data-testid=escalation]")?.textContent).toBe("Asked big-m for help: the same tool failed twice");
    expect(root.querySelector("[data-testid=tool-progress]")).toBeNull();
    expect(root.querySelectorAll(".tool-state")[1].textContent).toBe("Skipped: credit limit");
    const note = root.querySelector("[data-testid=credit-limit]")!;
    expect(note.textContent).toBe("This question reached its limit of 15 credits; some lookups were skipped.");
    // Under the answer (after it in document order).
    const answer = root.querySelector("[data-testid=answer]")!;
    expect(answer.compareDocumentPosition(note) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });
});
