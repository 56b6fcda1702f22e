import { describe, expect, it } from "vitest";
import { readSse, SseParser, type SseMessage } from "./reader";

const encoder = new TextEncoder();

/** Feed `bytes` to a fresh parser split at the given offsets; collect everything. */
function parseSplit(bytes: Uint8Array, cuts: number[]): { messages: SseMessage[]; comments: string[] } {
  const parser = new SseParser();
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    const result = parser.push(bytes.slice(start, cut));
    messages.push(...result.messages);
    comments.push(...result.comments);
    start = cut;
  }
  const end = parser.end();
  return { messages: [...messages, ...end.messages], comments: [...comments, ...end.comments] };
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

// A realistic body, as sse-starlette writes it (CRLF line ends), with a heartbeat and non-ASCII text.
const BODY =
  'event: message_start\r\ndata: {"type": "message_start", "conversation_id": "c1", "query_id": "q1", "model": "m", "provider": "offline"}\r\n\r\n' +
  ": heartbeat\r\n\r\n" +
  'event: text_delta\r\ndata: {"type": "text_delta", "text": "Grüße — 日本語 🎉 "}\r\n\r\n' +
  'event: text_delta\r\ndata: {"type": "text_delta", "text": "done"}\r\n\r\n' +
  'event: message_end\r\ndata: {"type": "message_end", "response": "Grüße — 日本語 🎉 done"}\r\n\r\n';

describe("SseParser", () => {
  it("parses events in order with their event names", () => {
    const { messages, comments } = parseSplit(encoder.encode(BODY), []);
    expect(messages.map((m) => m.event)).toEqual(["message_start", "text_delta", "text_delta", "message_end"]);
    expect(JSON.parse(messages[1].data).text).toBe("Grüße — 日本語 🎉 ");
    expect(comments).toEqual(["heartbeat"]);
  });

  it("gives the same result however the bytes are split (every single cut, incl. inside UTF-8 and CRLF)", () => {
    const bytes = encoder.encode(BODY);
    const whole = parseSplit(bytes, []);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(parseSplit(bytes, [cut])).toEqual(whole);
    }
  });

  it("survives byte-by-byte delivery and random multi-way splits", () => {
    const bytes = encoder.encode(BODY);
    const whole = parseSplit(bytes, []);
    expect(parseSplit(bytes, Array.from({ length: bytes.length - 1 }, (_, i) => i + 1))).toEqual(whole);
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 200; round++) {
      const cuts = Array.from({ length: 1 + Math.floor(random() * 8) }, () => 1 + Math.floor(random() * (bytes.length - 1)));
      expect(parseSplit(bytes, [...new Set(cuts)].sort((a, b) => a - b))).toEqual(whole);
    }
  });

  it("accepts LF, CRLF and lone CR line ends alike", () => {
    const lf = "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n";
    const crlf = lf.replaceAll("\n", "\r\n");
    const cr = lf.replaceAll("\n", "\r");
    const expected = parseSplit(encoder.encode(lf), []);
    expect(expected.messages.map((m) => [m.event, m.data])).toEqual([["a", "1"], ["b", "2"]]);
    expect(parseSplit(encoder.encode(crlf), [])).toEqual(expected);
    expect(parseSplit(encoder.encode(cr), [])).toEqual(expected);
  });

  it("does not read a CR at the end of a chunk followed by LF in the next as two line ends", () => {
    const parser = new SseParser();
    expect(parser.push("data: x\r").messages).toEqual([]);
    expect(parser.push("\n").messages).toEqual([]); // still the first line's end: no dispatch yet
    expect(parser.push("\r\n").messages).toEqual([{ event: "message", data: "x", id: "" }]);
  });

  it("joins multi-line data with newlines and strips one leading space only", () => {
    const { messages } = parseSplit(encoder.encode("data: line 1\ndata:line 2\ndata:  indented\ndata\n\n"), []);
    expect(messages).toEqual([{ event: "message", data: "line 1\nline 2\n indented\n", id: "" }]);
  });

  it("ignores comments, unknown fields and retry; keeps the last id", () => {
    const text = ": heartbeat\n:\nretry: 3000\nfoo: bar\nid: 7\nevent: usage\ndata: {}\n\n";
    const { messages, comments } = parseSplit(encoder.encode(text), []);
    expect(messages).toEqual([{ event: "usage", data: "{}", id: "7" }]);
    expect(comments).toEqual(["heartbeat", ""]);
  });

  it("drops events without data and resets the event name after each dispatch", () => {
    const { messages } = parseSplit(encoder.encode("event: lonely\n\ndata: a\n\n"), []);
    expect(messages).toEqual([{ event: "message", data: "a", id: "" }]);
  });

  it("discards an unfinished event when the stream ends", () => {
    const { messages } = parseSplit(encoder.encode("data: complete\n\ndata: cut off"), []);
    expect(messages.map((m) => m.data)).toEqual(["complete"]);
  });

  it("treats a UTF-8 character split across reads as one character", () => {
    const bytes = encoder.encode("data: é🎉\n\n");
    const emoji = bytes.indexOf(0xf0);
    const { messages } = parseSplit(bytes, [7, emoji + 1, emoji + 2, emoji + 3]);
    expect(messages[0].data).toBe("é🎉");
  });
});

describe("readSse", () => {
  it("yields messages from a fetch body and reports heartbeats", async () => {
    const bytes = encoder.encode(BODY);
    const chunks = [bytes.slice(0, 50), bytes.slice(50, 151), bytes.slice(151)];
    const comments: string[] = [];
    const events: string[] = [];
    for await (const message of readSse(streamOf(chunks), { onComment: (c) => comments.push(c) })) {
      events.push(message.event);
    }
    expect(events).toEqual(["message_start", "text_delta", "text_delta", "message_end"]);
    expect(comments).toEqual(["heartbeat"]);
  });

  it("propagates a read failure (connection lost) after the events already received", async () => {
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(encoder.encode("event: text_delta\ndata: {\"text\": \"a\"}\n\n"));
        else controller.error(new TypeError("network error"));
      },
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const message of readSse(body)) seen.push(message.event);
      })(),
    ).rejects.toThrow("network error");
    expect(seen).toEqual(["text_delta"]);
  });

  it("cancels the body when the consumer stops early", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode("data: 1\n\ndata: 2\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const message of readSse(body)) {
      expect(message.data).toBe("1");
      break;
    }
    expect(cancelled).toBe(true);
  });
});
