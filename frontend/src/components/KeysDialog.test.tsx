// @vitest-environment jsdom
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it, vi } from "vitest";
import { KeysPanel } from "./KeysDialog";

const NOW = new Date().toISOString();
const CURRENT = { id: "k1", name: "first key", prefix: "alm_AAAA", created_at: NOW, last_used_at: NOW, revoked_at: null, current: true };
const OTHER = { id: "k2", name: "scripts", prefix: "alm_BBBB", created_at: NOW, last_used_at: null, revoked_at: null, current: false };
const REVOKED = { ...OTHER, id: "k3", name: "old", prefix: "alm_CCCC", revoked_at: NOW };

type Reply = { status: number; body?: unknown };

function scripted(...replies: Reply[]) {
  const calls: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit = {}) => {
      calls.push(`${init.method ?? "GET"} ${url}${init.body ? ` ${init.body as string}` : ""}`);
      const reply = replies.shift() ?? { status: 500, body: { error: { code: "x", message: "unexpected" } } };
      return new Response(reply.status === 204 ? null : JSON.stringify(reply.body ?? {}), {
        status: reply.status,
        headers: { "Content-Type": "application/json" },
      });
    }),
  );
  return calls;
}

function mount() {
  const onSessionEnded = vi.fn();
  const root = document.createElement("div");
  document.body.append(root);
  render(<KeysPanel onSessionEnded={onSessionEnded} />, root);
  return { root, onSessionEnded };
}

const button = (root: HTMLElement, name: string) =>
  Array.from(root.querySelectorAll("button")).find((b) => (b.getAttribute("aria-label") ?? b.textContent)?.startsWith(name));

afterEach(() => {
  vi.unstubAllGlobals();
  document.body.innerHTML = "";
});

describe("API keys panel", () => {
  it("lists keys with their state; revoked keys have no Revoke button", async () => {
    scripted({ status: 200, body: { data: [CURRENT, OTHER, REVOKED], count: 3 } });
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(3));
    const rows = Array.from(root.querySelectorAll(".key-row"));
    expect(rows[0].textContent).toContain("alm_AAAA…");
    expect(rows[0].textContent).toContain("This session");
    expect(rows[1].textContent).toContain("Never used");
    expect(rows[2].textContent).toContain("Revoked");
    expect(rows[2].querySelector("button")).toBeNull();
    expect(rows[1].querySelector("button")?.getAttribute("aria-label")).toBe("Revoke “scripts” (alm_BBBB…)");
  });

  it("shows a new key once, then forgets it", async () => {
    const created = { ...OTHER, id: "k9", name: "ci", api_key: "alm_SECRETSECRETSECRET" };
    const calls = scripted(
      { status: 200, body: { data: [CURRENT], count: 1 } },
      { status: 201, body: created },
      { status: 200, body: { data: [created, CURRENT], count: 2 } },
    );
    const { root } = mount();
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(1));
    const name = root.querySelector<HTMLInputElement>("#new-key-name")!;
    act(() => {
      name.value = "ci";
      name.dispatchEvent(new Event("input", { bubbles: true }));
    });
    act(() => {
      root.querySelector("form")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    });
    const shown = await vi.waitFor(() => {
      const field = root.querySelector<HTMLInputElement>("#new-key-value");
      expect(field).not.toBeNull();
      return field!;
    });
    expect(shown.value).toBe("alm_SECRETSECRETSECRET");
    expect(shown.readOnly).toBe(true);
    expect(root.textContent).toContain("it will not be shown again");
    expect(calls[1]).toBe('POST /api/keys {"name":"ci"}');
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(2));
    act(() => button(root, "I have copied it")!.click());
    expect(root.innerHTML).not.toContain("SECRET");
    expect(JSON.stringify({ ...localStorage, ...sessionStorage })).not.toContain("SECRET");
  });

  it("revokes another key after confirming, and reloads the list", async () => {
    const calls = scripted(
      { status: 200, body: { data: [CURRENT, OTHER], count: 2 } },
      { status: 204 },
      { status: 200, body: { data: [CURRENT, { ...OTHER, revoked_at: NOW }], count: 2 } },
    );
    const { root, onSessionEnded } = mount();
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(2));
    act(() => button(root, "Revoke “scripts”")!.click());
    const confirm = root.querySelector<HTMLDialogElement>("dialog.confirm[open]")!;
    expect(confirm.textContent).not.toContain("signed out");
    act(() => button(confirm, "Revoke")!.click());
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")[1].textContent).toContain("Revoked"));
    expect(calls.slice(1)).toEqual(["DELETE /api/keys/k2", "GET /api/keys"]);
    expect(onSessionEnded).not.toHaveBeenCalled();
  });

  it("revoking this session's key ends the session", async () => {
    scripted({ status: 200, body: { data: [CURRENT], count: 1 } }, { status: 204 });
    const { root, onSessionEnded } = mount();
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(1));
    act(() => button(root, "Revoke “first key”")!.click());
    const confirm = root.querySelector<HTMLDialogElement>("dialog.confirm[open]")!;
    expect(confirm.textContent).toContain("you will be signed out");
    act(() => button(confirm, "Revoke")!.click());
    await vi.waitFor(() => expect(onSessionEnded).toHaveBeenCalledOnce());
  });

  it("does not end the session when revoking failed", async () => {
    scripted({ status: 200, body: { data: [CURRENT], count: 1 } }, { status: 500, body: { error: { code: "internal_error", message: "boom" } } });
    const { root, onSessionEnded } = mount();
    await vi.waitFor(() => expect(root.querySelectorAll(".key-row")).toHaveLength(1));
    act(() => button(root, "Revoke “first key”")!.click());
    act(() => button(root.querySelector("dialog.confirm[open]")!, "Revoke")!.click());
    await vi.waitFor(() => expect(root.querySelector("[role=alert]")?.textContent).toBe("boom"));
    expect(onSessionEnded).not.toHaveBeenCalled();
  });
});
