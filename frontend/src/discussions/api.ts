/** Discussions over the API: list, read, delete, the models to choose from, and starting one as
 * a stream of events. */

import { ApiError, errorFrom, request } from "../api/client";
import { readSse } from "../sse/reader";
import type { DiscussionCreate, DiscussionDetail, DiscussionEvent, DiscussionList, Models } from "./types";

const enc = encodeURIComponent;

export const discussions = {
  list: (limit = 50) => request<DiscussionList>("GET", `/api/discussions?limit=${limit}`),
  get: (id: string, signal?: AbortSignal) => request<DiscussionDetail>("GET", `/api/discussions/${enc(id)}`, undefined, signal),
  remove: (id: string) => request<void>("DELETE", `/api/discussions/${enc(id)}`),
  models: () => request<Models>("GET", "/api/models"),

  /** Start one; yields its events as they come. Throws ApiError before the stream (402, 422…). */
  async *start(body: DiscussionCreate, signal: AbortSignal): AsyncGenerator<DiscussionEvent> {
    const response = await fetch("/api/discussions", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw await errorFrom(response);
    if (!response.body) throw new ApiError(0, "no_body", "The server sent an empty answer.");
    for await (const message of readSse(response.body)) {
      try {
        yield JSON.parse(message.data) as DiscussionEvent;
      } catch {
        /* a frame that is not JSON: skip it */
      }
    }
  },
};
