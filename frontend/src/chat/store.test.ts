import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChatEvent } from "../api/types";
import { ChatStore } from "./store";
import { isBusy, STOPPED_NOTE } from "./state";

const encoder = new TextEncoder();

function frame(event: ChatEvent): string {
  return `event: ${event.type}\r\ndata: ${JSON.stringify(event)}\r\n\r\n`;
}

const START: ChatEvent = { type: "message_start", conversation_id: "c9", query_id: "q1", model: "m", provider: "offline" };
const END: ChatEvent = {
  type: "message_end", conversation_id: "c9", query_id: "q1", message_id: "q1-r", summary_id: "q1-r-sum", summary: "s",
  response: "Hello there", tools_used: [], credits_used: 5, credits_remaining: 45, turns: 1, stop_reason: "end_turn", summaries: {},
};

/** A fetch answering the chat stream with `body` chunks (a slow, abortable stream when `hang`). */
function fakeFetch(chunks: string[], { hang = false, status = 200, json }: { hang?: boolean; status?: number; json?: unknown } = {}) {
  return vi.fn(async (_url: string, init: RequestInit) => {
    if (status !== 200) {
      return new Response(JSON.stringify(json), { status, headers: { "Content-Type": "application/json" } });
    }
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
        if (!hang) controller.close();
        init.signal?.addEventListener("abort", () => controller.error(new DOMException("aborted", "AbortError")));
      },
    });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  });
}

function newStore() {
  const started: string[] = [];
  const ended: (string | null)[] = [];
  const store = new ChatStore({
    conversationStarted: (_key, id) => started.push(id),
    answerEnded: (id) => ended.push(id),
  });
  return { store, started, ended };
}

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("ChatStore", () => {
  it("streams an answer into a new conversation, which then lives under its ID", async () => {
    const fetch = fakeFetch([frame(START), frame({ type: "text_delta", text: "Hello " }), frame({ type: "text_delta", text: "there" }), frame(END)]);
    vi.stubGlobal("fetch", fetch);
    const { store, started, ended } = newStore();
    await store.send("new:1", "hi");
    expect(JSON.parse(fetch.mock.calls[0][1].body as string)).toEqual({ message: "hi" });
    expect(fetch.mock.calls[0][1].credentials).toBe("same-origin");
    expect(started).toEqual(["c9"]);
    expect(ended).toEqual(["c9"]);
    expect(store.resolve("new:1")).toBe("c9");
    expect(store.get("c9").turns[0]).toMatchObject({ status: "done", text: "Hello there", credits: 5, messageId: "q1-r" });
  });

  it("continues an existing conversation by its ID", async () => {
    const fetch = fakeFetch([frame(START), frame(END)]);
    vi.stubGlobal("fetch", fetch);
    const { store } = newStore();
    await store.send("c9", "again");
    expect(JSON.parse(fetch.mock.calls[0][1].body as string)).toEqual({ message: "again", conversation_id: "c9" });
  });

  it("shows a 402 refusal in place, with the figures and what to do", async () => {
    vi.stubGlobal(
      "fetch",
      fakeFetch([], {
        status: 402,
        json: { error: { code: "insufficient_credits", message: "no", balance: 2, needed: 5, how_to_get_more: "wait" }, balance: 2, needed: 5 },
      }),
    );
    const { store } = newStore();
    await store.send("new:1", "hi");
    expect(store.get("new:1").turns[0]).toMatchObject({
      status: "error",
      error: { kind: "refused", status: 402, code: "insufficient_credits", balance: 2, needed: 5, howToGetMore: "wait" },
    });
  });

  it("reports a stream that ends without message_end as incomplete", async () => {
    vi.stubGlobal("fetch", fakeFetch([frame(START), frame({ type: "text_delta", text: "par" })]));
    const { store } = newStore();
    await store.send("new:1", "hi");
    expect(store.get("c9").turns[0]).toMatchObject({ status: "error", text: "par", error: { kind: "incomplete" } });
  });

  it("reports a lost connection and retries the same message", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => Promise.reject(new TypeError("Failed to fetch"))));
    const { store } = newStore();
    await store.send("new:1", "hi");
    const failed = store.get("new:1").turns[0];
    expect(failed).toMatchObject({ status: "error", error: { kind: "network" } });
    vi.stubGlobal("fetch", fakeFetch([frame(START), frame(END)]));
    store.retry("new:1", failed.localId);
    await vi.waitFor(() => expect(store.get("c9").turns.map((t) => [t.query, t.status])).toEqual([["hi", "done"]]));
  });

  it("frees the composer at message_end while the stream stays open for summaries, and a new message goes out meanwhile", async () => {
    // Each request gets a stream this test writes to (and closes) itself.
    const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
    const fetch = vi.fn(async () => {
      const body = new ReadableStream<Uint8Array>({ start: (controller) => void streams.push(controller) });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    });
    vi.stubGlobal("fetch", fetch);
    const { store, ended } = newStore();
    const write = (index: number, event: ChatEvent) => streams[index].enqueue(encoder.encode(frame(event)));

    let firstClosed = false;
    const first = store.send("new:1", "hi").then(() => (firstClosed = true));
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    write(0, START);
    write(0, { ...(END as Extract<ChatEvent, { type: "message_end" }>), summary: null });
    await vi.waitFor(() => expect(store.get("c9").turns[0]?.status).toBe("done"));
    expect(isBusy(store.get("c9"))).toBe(false);
    expect(ended).toEqual(["c9"]); // credits refresh at once, not when the stream closes
    expect(firstClosed).toBe(false);

    // The next message is sent while the first stream is still open.
    const second = store.send("c9", "next");
    await vi.waitFor(() => expect(streams).toHaveLength(2));
    expect(JSON.parse((fetch.mock.calls[1] as unknown as [string, RequestInit])[1].body as string)).toEqual({
      message: "next",
      conversation_id: "c9",
    });
    // The first answer's summary still arrives, into the first turn.
    write(0, { type: "summary", item_id: "q1-r", summary_id: "q1-r-sum", summary: "gist", status: "done" });
    await vi.waitFor(() => expect(store.get("c9").turns[0].summary).toBe("gist"));
    streams[0].close();
    await first;
    expect(store.get("c9").turns.map((t) => t.status)).toEqual(["done", "pending"]);
    expect(ended).toEqual(["c9"]); // closing after message_end is not a second end

    write(1, { ...(START as Extract<ChatEvent, { type: "message_start" }>), query_id: "q2" });
    write(1, { ...(END as Extract<ChatEvent, { type: "message_end" }>), query_id: "q2", message_id: "q2-r", summary_id: "q2-r-sum" });
    streams[1].close();
    await second;
    expect(store.get("c9").turns.map((t) => [t.query, t.status, t.messageId])).toEqual([
      ["hi", "done", "q1-r"],
      ["next", "done", "q2-r"],
    ]);
  });

  it("stops: aborts the request, marks the answer stopped, then syncs with the server", async () => {
    vi.useFakeTimers();
    const fetch = fakeFetch([frame(START), frame({ type: "text_delta", text: "Some text" })], { hang: true });
    vi.stubGlobal("fetch", fetch);
    const { store, ended } = newStore();
    const sending = store.send("new:1", "long please");
    await vi.waitFor(() => expect(store.get("c9").turns[0]?.text).toBe("Some text"));
    store.stop("c9", store.get("c9").turns[0].localId);
    await sending;
    const signal = fetch.mock.calls[0][1].signal as AbortSignal;
    expect(signal.aborted).toBe(true);
    expect(store.get("c9").turns[0]).toMatchObject({ status: "stopped", text: `Some text\n\n${STOPPED_NOTE}` });
    // After a moment the stored history is fetched (to show exactly what the server kept).
    fetch.mockImplementation(async () => new Response(JSON.stringify({ id: "c9", title: "t", query_count: 1, created_at: "", updated_at: "", full: [], summarised: [] })));
    await vi.advanceTimersByTimeAsync(1000);
    expect(fetch.mock.calls.at(-1)![0]).toBe("/api/conversations/c9");
    expect(ended).toContain("c9");
  });
});
