/**
 * The API client. The browser is authenticated by the HttpOnly session cookie the backend sets
 * at sign-in: requests go same-origin with `credentials: "same-origin"`, and no API key is ever
 * kept by this code (not in localStorage, sessionStorage or memory beyond the sign-in request).
 */

import type {
  ApiKeyCreated,
  ApiKeyList,
  ConversationDetail,
  ConversationList,
  Conversation,
  Credits,
  GithubIntegration,
  Item,
  LocalLogin,
  ServerConfig,
  Strategy,
  ToolInfo,
  User,
} from "./types";

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The message of the first field at fault (422 `error.fields`), if any. */
  fieldMessage(): string | undefined {
    const fields = this.detail<unknown>("fields");
    if (!Array.isArray(fields)) return undefined;
    const first = fields.find((f): f is { message: unknown } => typeof f === "object" && f !== null && "message" in f);
    return first && typeof first.message === "string" ? first.message : undefined;
  }

  /** A field of `error` (or of the body itself), e.g. balance, needed, how_to_get_more. */
  detail<T = unknown>(name: string): T | undefined {
    const error = this.body.error as Record<string, unknown> | undefined;
    return (error?.[name] ?? this.body[name]) as T | undefined;
  }
}

let unauthorizedHandler: ((code: string) => void) | null = null;

/** Called whenever the API answers 401 (the session ended, or — code `account_disabled` — its
 * owner was disabled): the app shows the sign-in screen, saying why. */
export function onUnauthorized(handler: (code: string) => void): void {
  unauthorizedHandler = handler;
}

/** The 401 code of a key or session whose owner an administrator disabled. */
export const ACCOUNT_DISABLED = "account_disabled";

/** An error for a path that names nothing (404), or names it in a shape no ID has (a malformed
 * deep link, 422 on the path): both mean "there is no such thing". */
export function notFound(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 422);
}

/** Turn a non-2xx response into an ApiError with the backend's `{error: {code, message}}`. */
export async function errorFrom(response: Response): Promise<ApiError> {
  let body: Record<string, unknown> = {};
  try {
    body = (await response.json()) as Record<string, unknown>;
  } catch {
    /* not JSON (a proxy's error page): keep the status */
  }
  const error = (body.error ?? {}) as Record<string, unknown>;
  const code = typeof error.code === "string" ? error.code : `http_${response.status}`;
  const message =
    typeof error.message === "string" ? error.message : `The server answered ${response.status} ${response.statusText}`.trim();
  if (response.status === 401 && !response.url.includes("/api/auth/")) unauthorizedHandler?.(code);
  return new ApiError(response.status, code, message, body);
}

/** One JSON request to the API (same-origin cookie); non-2xx becomes an ApiError. */
export async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = { method, credentials: "same-origin", headers: { Accept: "application/json" }, signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, "Content-Type": "application/json" };
  }
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if ((error as Error).name === "AbortError") throw error;
    throw new ApiError(0, "network_error", "Cannot reach the server. Check your connection and try again.");
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

const enc = encodeURIComponent;

export const api = {
  me: () => request<User>("GET", "/api/me"),
  localLogin: () => request<LocalLogin>("GET", "/api/auth/local"),
  /** Redeem the one-time token of the local sign-in link (403 when wrong or used). */
  signInLocal: (token: string) => request<User>("POST", "/api/auth/local", { token }),
  signIn: (apiKey: string) => request<User>("POST", "/api/auth/session", { api_key: apiKey }),
  signOut: () => request<void>("DELETE", "/api/auth/session"),
  conversations: (limit = 100, offset = 0) =>
    request<ConversationList>("GET", `/api/conversations?limit=${limit}&offset=${offset}`),
  conversation: (id: string, signal?: AbortSignal) =>
    request<ConversationDetail>("GET", `/api/conversations/${enc(id)}`, undefined, signal),
  item: (conversationId: string, itemId: string) =>
    request<Item>("GET", `/api/conversations/${enc(conversationId)}/items/${enc(itemId)}`),
  rename: (id: string, title: string) => request<Conversation>("PATCH", `/api/conversations/${enc(id)}`, { title }),
  /** Choose how a conversation's questions are answered (null: the user's default). */
  setStrategy: (id: string, strategy: Strategy | null) =>
    request<Conversation>("PATCH", `/api/conversations/${enc(id)}`, { strategy }),
  config: () => request<ServerConfig>("GET", "/api/config"),
  tools: () => request<{ data: ToolInfo[]; count: number }>("GET", "/api/tools"),
  remove: (id: string) => request<void>("DELETE", `/api/conversations/${enc(id)}`),
  credits: () => request<Credits>("GET", "/api/credits?recent=0"),
  keys: () => request<ApiKeyList>("GET", "/api/keys"),
  createKey: (name: string) => request<ApiKeyCreated>("POST", "/api/keys", { name }),
  revokeKey: (id: string) => request<void>("DELETE", `/api/keys/${enc(id)}`),
  github: () => request<GithubIntegration>("GET", "/api/integrations/github"),
  saveGithub: (token: string) => request<GithubIntegration>("PUT", "/api/integrations/github", { token }),
  removeGithub: () => request<void>("DELETE", "/api/integrations/github"),

  /** Start a streamed answer; resolves to the open SSE response, or throws ApiError (402, 409…). */
  async chatStream(
    message: string,
    conversationId: string | null,
    signal: AbortSignal,
    strategy: Strategy | null = null,
  ): Promise<Response> {
    const body: Record<string, string> = { message };
    if (conversationId) body.conversation_id = conversationId;
    // A new conversation keeps the strategy it is started with.
    if (strategy && !conversationId) body.strategy = strategy;
    const response = await fetch("/api/chat/stream", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw await errorFrom(response);
    if (!response.body) throw new ApiError(0, "no_body", "The server sent an empty answer.");
    return response;
  },
};
