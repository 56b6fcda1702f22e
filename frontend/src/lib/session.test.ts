import { afterEach, describe, expect, it, vi } from "vitest";
import { ACCOUNT_DISABLED_NOTICE, LINK_REFUSED, LINK_UNAVAILABLE, resume, SESSION_ENDED, sessionEndedNotice } from "./session";

const USER = { id: "u1", email: "local@localhost", plan: "free" };

/** A fetch answering by "METHOD path" (unlisted requests fail the test). */
function routes(table: Record<string, { status: number; body?: unknown }>) {
  const seen: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit = {}) => {
      const key = `${init.method ?? "GET"} ${url}`;
      seen.push(init.body ? `${key} ${init.body as string}` : key);
      const reply = table[key];
      if (!reply) throw new Error(`unexpected request ${key}`);
      return new Response(JSON.stringify(reply.body ?? {}), { status: reply.status, headers: { "Content-Type": "application/json" } });
    }),
  );
  return seen;
}

const UNAUTHORIZED = { status: 401, body: { error: { code: "unauthorized", message: "no" } } };

afterEach(() => vi.unstubAllGlobals());

describe("resume", () => {
  it("enters with an existing session and leaves a sign-in link unused", async () => {
    const seen = routes({ "GET /api/me": { status: 200, body: USER } });
    expect(await resume("tok".repeat(10))).toEqual({ state: "signed_in", user: USER });
    expect(seen).toEqual(["GET /api/me"]);
  });

  it("without a session, redeems the link's token", async () => {
    const seen = routes({ "GET /api/me": UNAUTHORIZED, "POST /api/auth/local": { status: 200, body: USER } });
    expect(await resume("T".repeat(43))).toEqual({ state: "signed_in", user: USER });
    expect(seen).toEqual(["GET /api/me", `POST /api/auth/local {"token":"${"T".repeat(43)}"}`]);
  });

  it("says what to do when the link was used or is wrong (403)", async () => {
    routes({
      "GET /api/me": UNAUTHORIZED,
      "POST /api/auth/local": { status: 403, body: { error: { code: "invalid_sign_in_token", message: "wrong or used" } } },
    });
    expect(await resume("T".repeat(43))).toEqual({ state: "signed_out", notice: null, linkError: LINK_REFUSED });
    expect(LINK_REFUSED).toContain("data/local-sign-in-url");
  });

  it("says when the server offers no sign-in links", async () => {
    routes({
      "GET /api/me": UNAUTHORIZED,
      "POST /api/auth/local": { status: 403, body: { error: { code: "local_login_unavailable", message: "no" } } },
    });
    expect(await resume("T".repeat(43))).toEqual({ state: "signed_out", notice: null, linkError: LINK_UNAVAILABLE });
  });

  it("without a session or link, shows the sign-in screen (with the error when it was not a 401)", async () => {
    routes({ "GET /api/me": UNAUTHORIZED });
    expect(await resume(null)).toEqual({ state: "signed_out", notice: null, linkError: null });
    routes({ "GET /api/me": { status: 503, body: { error: { code: "not_ready", message: "the database is not ready" } } } });
    expect(await resume(null)).toEqual({ state: "signed_out", notice: "the database is not ready", linkError: null });
  });

  it("says the account is disabled when its session's owner was disabled", async () => {
    const disabled = { status: 401, body: { error: { code: "account_disabled", message: "this account is disabled" } } };
    routes({ "GET /api/me": disabled });
    expect(await resume(null)).toEqual({ state: "signed_out", notice: ACCOUNT_DISABLED_NOTICE, linkError: null });
    routes({ "GET /api/me": UNAUTHORIZED, "POST /api/auth/local": disabled });
    expect(await resume("T".repeat(43))).toEqual({ state: "signed_out", notice: null, linkError: ACCOUNT_DISABLED_NOTICE });
    expect(ACCOUNT_DISABLED_NOTICE).toContain("disabled");
  });
});

describe("sessionEndedNotice", () => {
  it("tells a disabled account from a session that just ended", () => {
    expect(sessionEndedNotice("account_disabled")).toBe(ACCOUNT_DISABLED_NOTICE);
    expect(sessionEndedNotice("unauthorized")).toBe(SESSION_ENDED);
  });
});
