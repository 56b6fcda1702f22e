/**
 * A Server-Sent Events reader for `fetch` bodies (EventSource cannot POST).
 *
 * `SseParser` is pure and incremental: feed it bytes in chunks of any size (a chunk may end in the
 * middle of a line, a CRLF pair or a multi-byte UTF-8 character) and it returns the events that are
 * complete. It follows the WHATWG event-stream rules: lines end in CRLF, LF or CR; `:` starts a
 * comment; `data` lines are joined with "\n"; a blank line dispatches; an event without data is
 * dropped; an unfinished event at the end of the stream is discarded.
 */

export interface SseMessage {
  /** The `event:` field, "message" when absent. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last `id:` seen (sticky, as in the spec). */
  id: string;
}

export interface SseParseResult {
  messages: SseMessage[];
  /** Comment lines seen in this chunk (e.g. "heartbeat"), without the leading colon. */
  comments: string[];
}

export class SseParser {
  private decoder = new TextDecoder("utf-8");
  private buffer = "";
  private pendingCR = false;
  private eventType = "";
  private dataLines: string[] = [];
  private hasData = false;
  private lastId = "";

  /** Consume a chunk of bytes (or text) and return what became complete. */
  push(chunk: Uint8Array | string): SseParseResult {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.consume(text);
  }

  /** The stream ended: flush the decoder. An event not terminated by a blank line is discarded. */
  end(): SseParseResult {
    const result = this.consume(this.decoder.decode());
    this.buffer = "";
    this.resetEvent();
    return result;
  }

  private consume(text: string): SseParseResult {
    const result: SseParseResult = { messages: [], comments: [] };
    let start = 0;
    // A CR that ended the previous chunk may be the first half of a CRLF.
    if (this.pendingCR && text.startsWith("\n")) start = 1;
    if (text.length > 0) this.pendingCR = false;
    let buffer = this.buffer + text.slice(start);
    let index = 0;
    for (;;) {
      const cr = buffer.indexOf("\r", index);
      const lf = buffer.indexOf("\n", index);
      if (cr < 0 && lf < 0) break;
      let end: number;
      let next: number;
      if (cr >= 0 && (lf < 0 || cr < lf)) {
        end = cr;
        if (cr + 1 < buffer.length) {
          next = buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
        } else {
          next = cr + 1;
          this.pendingCR = true; // the LF may arrive with the next chunk
        }
      } else {
        end = lf;
        next = lf + 1;
      }
      this.line(buffer.slice(index, end), result);
      index = next;
    }
    buffer = buffer.slice(index);
    this.buffer = buffer;
    return result;
  }

  private line(line: string, result: SseParseResult): void {
    if (line === "") {
      this.dispatch(result);
      return;
    }
    if (line.startsWith(":")) {
      result.comments.push(line.slice(1).trimStart());
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.dataLines.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      default:
        break; // `retry` and unknown fields: not used here
    }
  }

  private dispatch(result: SseParseResult): void {
    if (this.hasData) {
      result.messages.push({ event: this.eventType || "message", data: this.dataLines.join("\n"), id: this.lastId });
    }
    this.resetEvent();
  }

  private resetEvent(): void {
    this.eventType = "";
    this.dataLines = [];
    this.hasData = false;
  }
}

export interface ReadSseOptions {
  /** Called for every comment line (heartbeats), e.g. to show the connection is alive. */
  onComment?: (comment: string) => void;
}

/** Read a fetch body as SSE messages, in order. Ends when the body ends; throws if reading fails. */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  options: ReadSseOptions = {},
): AsyncGenerator<SseMessage> {
  const parser = new SseParser();
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      finished = done;
      const result = done ? parser.end() : parser.push(value);
      for (const comment of result.comments) options.onComment?.(comment);
      yield* result.messages;
      if (done) return;
    }
  } finally {
    // The consumer stopped early (or reading failed): let go of the connection.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
