// @vitest-environment jsdom
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GithubSection, githubAvailable } from "./GithubDialog";

type Reply = { status: number; body?: unknown };

/** A fetch that answers each call with the next reply, recording method, URL and body. */
function scripted(...replies: Reply[]) {
  const calls: { method: string; url: string; body: unknown }[] = [];
  const fetch = vi.fn(async (url: string, init: RequestInit = {}) => {
    calls.push({ method: init.method ?? "GET", url, body: init.body ? JSON.parse(init.body as string) : undefined });
    const reply = replies.shift() ?? { status: 500, body: { error: { code: "x", message: "unexpected call" } } };
    return new Response(reply.status === 204 ? null : JSON.stringify(reply.body ?? {}), {
      status: reply.status,
      headers: { "Content-Type": "application/json" },
    });
  });
  vi.stubGlobal("fetch", fetch);
  return calls;
}

const DISCONNECTED = { connected: false, masked: null, updated_at: null, shared_token_available: true };
const CONNECTED = { connected: true, masked: "github_pat_…x9Zq", updated_at: new Date().toISOString(), shared_token_available: true };

function mount(onUnavailable = vi.fn()) {
  const root = document.createElement("div");
  document.body.append(root);
  render(<GithubSection onUnavailable={onUnavailable} />, root);
  return { root, onUnavailable };
}

function type(input: HTMLInputElement, value: string) {
  act(() => {
    input.value = value;
    input.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

function submit(root: HTMLElement) {
  root.querySelector("form")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
}

afterEach(() => {
  vi.unstubAllGlobals();
  document.body.innerHTML = "";
});

describe("GitHub token section", () => {
  it("says whether the route exists: only a 404 hides it", async () => {
    scripted({ status: 404, body: { error: { code: "not_found", message: "Not Found" } } });
    expect(await githubAvailable()).toBe(false);
    scripted({ status: 200, body: DISCONNECTED });
    expect(await githubAvailable()).toBe(true);
    scripted({ status: 500, body: { error: { code: "internal_error", message: "boom" } } });
    expect(await githubAvailable()).toBe(true);
  });

  it("on a server without GitHub tools, offers no token field", async () => {
    const calls = scripted({ status: 200, body: { ...DISCONNECTED, available: false } });
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelector("[data-testid=github-unavailable]")).not.toBeNull());
    expect(root.querySelector("#github-token")).toBeNull();
    expect(root.textContent).not.toContain("search repositories");
    expect(calls.map((c) => c.method)).toEqual(["GET"]);
  });

  it("asks to be hidden when the server answers 404", async () => {
    scripted({ status: 404, body: { error: { code: "not_found", message: "Not Found" } } });
    const { onUnavailable } = mount();
    await vi.waitFor(() => expect(onUnavailable).toHaveBeenCalledOnce());
  });

  it("shows 'not connected' (and the shared token), saves a pasted token and then shows it masked", async () => {
    const calls = scripted({ status: 200, body: DISCONNECTED }, { status: 200, body: CONNECTED });
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelector("[data-testid=github-status]")?.textContent).toContain("Not connected."));
    expect(root.textContent).toContain("shared token");
    const field = root.querySelector<HTMLInputElement>("#github-token")!;
    expect(field.type).toBe("password");
    type(field, "  github_pat_secret123  ");
    submit(root);
    await vi.waitFor(() => expect(root.querySelector("[data-testid=github-status]")?.textContent).toContain("github_pat_…x9Zq"));
    expect(calls.map((c) => [c.method, c.url, c.body])).toEqual([
      ["GET", "/api/integrations/github", undefined],
      ["PUT", "/api/integrations/github", { token: "github_pat_secret123" }],
    ]);
    expect(root.querySelector<HTMLInputElement>("#github-token")!.value).toBe(""); // not kept in the page
    expect(root.innerHTML).not.toContain("secret123");
    expect(root.querySelector("[role=status]")?.textContent).toBe("The GitHub token was saved.");
  });

  it("shows the server's message for a malformed token (422 error.fields) on the field", async () => {
    scripted(
      { status: 200, body: DISCONNECTED },
      {
        status: 422,
        body: { error: { code: "invalid_token", message: "token is bad", fields: [{ field: "token", message: "must start with ghp_" }] } },
      },
    );
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelector("#github-token")).not.toBeNull());
    type(root.querySelector<HTMLInputElement>("#github-token")!, "nope");
    submit(root);
    await vi.waitFor(() => expect(root.querySelector("#github-token-error")?.textContent).toBe("The token must start with ghp_"));
    const field = root.querySelector("#github-token")!;
    expect(field.getAttribute("aria-invalid")).toBe("true");
    expect(field.getAttribute("aria-describedby")).toBe("github-token-error");
    expect(root.querySelector("#github-token-error")!.getAttribute("role")).toBe("alert");
  });

  it("does not send an empty token", async () => {
    const calls = scripted({ status: 200, body: DISCONNECTED });
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelector("#github-token")).not.toBeNull());
    submit(root);
    await vi.waitFor(() => expect(root.querySelector("#github-token-error")?.textContent).toBe("Paste a GitHub token first."));
    expect(calls).toHaveLength(1);
  });

  it("removes the token after a confirmation", async () => {
    const calls = scripted({ status: 200, body: CONNECTED }, { status: 204 });
    const { root } = mount();
    const remove = await vi.waitFor(() => {
      const button = Array.from(root.querySelectorAll("button")).find((b) => b.textContent === "Remove the token");
      expect(button).toBeDefined();
      return button!;
    });
    remove.click();
    const confirm = await vi.waitFor(() => {
      const dialog = root.querySelector<HTMLDialogElement>("dialog.confirm[open]");
      expect(dialog).not.toBeNull();
      return dialog!;
    });
    expect(calls).toHaveLength(1); // nothing removed before confirming
    Array.from(confirm.querySelectorAll("button")).find((b) => b.textContent === "Remove")!.click();
    await vi.waitFor(() => expect(root.querySelector("[data-testid=github-status]")?.textContent).toContain("Not connected."));
    expect(calls.map((c) => [c.method, c.url])).toEqual([
      ["GET", "/api/integrations/github"],
      ["DELETE", "/api/integrations/github"],
    ]);
    expect(root.textContent).toContain("shared token"); // still known after removing
  });

  it("shows other load errors in place", async () => {
    scripted({ status: 500, body: { error: { code: "internal_error", message: "an internal error occurred" } } });
    const { root, onUnavailable } = mount();
    await vi.waitFor(() => expect(root.querySelector("[role=alert]")?.textContent).toBe("an internal error occurred"));
    expect(onUnavailable).not.toHaveBeenCalled();
  });
});
