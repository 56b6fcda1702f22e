// @vitest-environment jsdom
import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatEvent, Credits, ServerConfig } from "../api/types";
import { newTurn, reduce, type Action, type ConversationState } from "../chat/state";
import { AccountContext } from "../lib/account";
import { Turn } from "./Turn";

const CONFIG: ServerConfig = {
  chat_model: { name: "almanac-offline", provider: "offline", offline: true },
  strategies: { default: "direct", available: ["direct", "boost", "collaborate"] },
  payments_enabled: false,
  github_tools: false,
  suggestions: [],
};

function credits(balance: number): Credits {
  return {
    plan: "free",
    balance,
    buckets: { daily: balance, pack: 0 },
    daily_allowance: 50,
    left_today: balance,
    period: "2026-03-04",
    monthly_cap: null,
    used_this_month: 50 - balance,
    left_this_month: null,
    prices: { query: 5, retrieve_documentation: 10, github_tool: 3, other_tool: 2 },
  };
}

function stateOf(actions: Action[]): ConversationState {
  const start: ConversationState = { id: null, title: null, turns: [newTurn("t1", "How?")], loaded: true, loading: false, loadError: null };
  return actions.reduce(reduce, start);
}

const events = (list: ChatEvent[]): Action[] => list.map((event) => ({ type: "event", localId: "t1", event }));

function mount(state: ConversationState, balance: number, config: ServerConfig = CONFIG): HTMLElement {
  const root = document.createElement("div");
  document.body.append(root);
  render(
    <AccountContext.Provider value={{ credits: credits(balance), config }}>
      <Turn
        turn={state.turns[0]}
        conversationId="c1"
        expanded={new Set(["q1-t1", "q1-t2"])}
        highlighted={null}
        onToggleTool={() => {}}
        onRetry={() => {}}
        onDismiss={() => {}}
      />
    </AccountContext.Provider>,
    root,
  );
  return root;
}

afterEach(() => {
  document.body.innerHTML = "";
});

const REFUSED: Action = {
  type: "refused",
  localId: "t1",
  error: { kind: "refused", status: 402, code: "insufficient_credits", message: "this query needs 5 credits", balance: 0, needed: 5 },
};

describe("a message refused for want of credits", () => {
  it("on a server without payments: when credits come back, who grants them, the Billing page; no Try again", () => {
    const root = mount(stateOf([REFUSED]), 0);
    const card = root.querySelector("[data-testid=out-of-credits]")!;
    const text = card.textContent ?? "";
    expect(text).toContain("You're out of credits");
    expect(text).toContain("You have 0 credits; a question needs 5 credits.");
    expect(text).toMatch(/Your allowance of 50 credits comes back at 00:00 UTC \(in \d/);
    expect(text).toContain("This server does not take payments: ask its operator for more credits or a plan change.");
    expect(card.querySelector("a[href='/billing']")).not.toBeNull();
    expect(text).not.toContain("Upgrade");
    expect(Array.from(card.querySelectorAll("button")).map((b) => b.textContent?.trim())).toEqual(["Dismiss"]);
  });

  it("on a server with payments: offers buying on the Billing page", () => {
    const root = mount(stateOf([REFUSED]), 0, { ...CONFIG, payments_enabled: true });
    const card = root.querySelector("[data-testid=out-of-credits]")!;
    expect(card.querySelector("a.btn[href='/billing']")?.textContent).toBe("Upgrade or buy a credit pack");
    expect(card.textContent).not.toContain("does not take payments");
  });

  it("offers Try again once the balance covers a question again", () => {
    const root = mount(stateOf([REFUSED]), 20);
    const card = root.querySelector("[data-testid=out-of-credits]")!;
    expect(card.textContent).toContain("Credits are back");
    expect(Array.from(card.querySelectorAll("button")).map((b) => b.textContent?.trim())).toEqual(["Try again", "Dismiss"]);
  });
});

const END = {
  type: "message_end" as const,
  conversation_id: "c1",
  query_id: "q1",
  message_id: "q1-r",
  summary_id: "q1-r-sum",
  summary: null,
  response: "I cannot answer.",
  tools_used: [],
  credits_used: 0,
  credits_remaining: 50,
  turns: 1,
  summaries: {},
};

describe("an answer's footer", () => {
  it("says an answer the model declined was not charged", () => {
    const state = stateOf(
      events([
        { type: "message_start", conversation_id: "c1", query_id: "q1", model: "almanac-offline", provider: "offline" },
        { type: "text_delta", text: "I cannot answer." },
        { ...END, stop_reason: "declined" },
      ]),
    );
    const root = mount(state, 50);
    expect(root.querySelector("[data-testid=not-charged]")?.textContent).toContain("Not charged");
    expect(root.querySelector("[data-testid=answer-cost]")?.textContent).toBe("0 credits");
    expect(root.querySelector(".answer-model")?.textContent).toBe("almanac-offline");
  });

  it("says nothing of the kind for an ordinary answer", () => {
    const state = stateOf(events([{ type: "text_delta", text: "Yes." }, { ...END, credits_used: 5, stop_reason: "end_turn" }]));
    expect(mount(state, 45).querySelector("[data-testid=not-charged]")).toBeNull();
  });
});

describe("a tool card's full text", () => {
  const call = (id: string, item: string): ChatEvent => ({ type: "tool_call", id, name: "retrieve_full_context", input: { id: "q0" }, item_id: item, turn: 1 });
  const result = (id: string, item: string, summary: string | null): ChatEvent => ({
    type: "tool_result", id, name: "retrieve_full_context", item_id: item, summary_id: `${item}-sum`, is_error: false,
    status: "ok", summary, duration_ms: 3, credits: 2, citations: [],
  });

  it("is offered only when it is more than what is shown", () => {
    const state = stateOf(
      events([
        call("a", "q1-t1"),
        result("a", "q1-t1", "A short result, its own summary."),
        call("b", "q1-t2"),
        result("b", "q1-t2", null), // long: its summary is still being written
        { type: "summary", item_id: "q1-t2", summary_id: "q1-t2-sum", summary: "The gist.", status: "done" },
      ]),
    );
    const root = mount(state, 50);
    const [short, long] = Array.from(root.querySelectorAll(".tool-card"));
    const heading = (card: Element) => card.querySelectorAll(".tool-body h4")[1]?.textContent;
    expect(heading(short)).toContain("Result");
    expect(short.textContent).toContain("A short result, its own summary.");
    expect(Array.from(short.querySelectorAll("button")).some((b) => b.textContent?.startsWith("Show full text"))).toBe(false);
    expect(heading(long)).toContain("Summary");
    expect(Array.from(long.querySelectorAll("button")).map((b) => b.textContent)).toContain("Show full text (q1-t2)");
  });
});
