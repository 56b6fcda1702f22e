// @vitest-environment jsdom
import { render } from "preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Credits } from "../api/types";
import { parseRoute } from "../lib/router";
import { BillingPage, checkoutReturn } from "./BillingPage";

const PRODUCTS = [
  { id: "pro", name: "Pro", price_usd: 19, interval: "month", credits: 150, description: "150 credits a day" },
  { id: "pack", name: "Credit pack", price_usd: 20, interval: null, credits: 500, description: "500 credits" },
];
const CREDITS: Credits = {
  plan: "free",
  balance: 50,
  buckets: { daily: 50, pack: 0 },
  daily_allowance: 50,
  left_today: 50,
  period: "2026-11-24",
  monthly_cap: null,
  used_this_month: 0,
  left_this_month: null,
  prices: { query: 5 },
};

function serve(billing: unknown) {
  const calls: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit = {}) => {
      calls.push(`${init.method ?? "GET"} ${url}`);
      return new Response(JSON.stringify(billing), { status: 200, headers: { "Content-Type": "application/json" } });
    }),
  );
  return calls;
}

async function mount(): Promise<HTMLElement> {
  const root = document.createElement("div");
  document.body.append(root);
  render(<BillingPage credits={CREDITS} refreshCredits={async () => CREDITS} />, root);
  // Until the billing details have arrived (the products are drawn from them).
  for (let i = 0; i < 200 && !root.querySelector("[data-testid=product-pro]"); i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  return root;
}

afterEach(() => {
  vi.unstubAllGlobals();
  document.body.innerHTML = "";
});

describe("billing page", () => {
  it("offers the upgrade and a pack when the server takes payments", async () => {
    serve({ payments_enabled: true, plan: "free", subscription: null, portal_available: false, products: PRODUCTS });
    const root = await mount();
    const buttons = [...root.querySelectorAll("button")].map((b) => b.textContent);
    expect(buttons).toEqual(["Upgrade to Pro", "Buy a pack"]);
    expect(root.querySelector("[data-testid=left-today]")?.textContent).toContain("50 of 50");
  });

  it("shows the plans without any button when payments are off", async () => {
    serve({ payments_enabled: false, plan: "free", subscription: null, portal_available: false, products: PRODUCTS });
    const root = await mount();
    expect(root.querySelectorAll("button")).toHaveLength(0);
    expect(root.querySelector("[data-testid=payments-off]")).not.toBeNull();
    expect(root.querySelector("[data-testid=product-pro]")?.textContent).toContain("$19");
  });

  it("asks a Pro user with a failed payment to update their card, and offers the portal", async () => {
    const subscription = { status: "past_due", cancel_at_period_end: false, current_period_end: null, payment_failed: true };
    serve({ payments_enabled: true, plan: "pro", subscription, portal_available: true, products: PRODUCTS });
    const root = await mount();
    expect(root.querySelector("[data-testid=payment-failed]")).not.toBeNull();
    const buttons = [...root.querySelectorAll("button")].map((b) => b.textContent);
    expect(buttons).toEqual(["Buy a pack", "Manage subscription and invoices"]);
  });

  it("reads the return from Checkout without trusting it", () => {
    expect(checkoutReturn("?checkout=success&product=pack&session_id=cs_1")).toEqual({ state: "success", product: "pack" });
    expect(checkoutReturn("?checkout=cancelled&product=pro")).toEqual({ state: "cancelled", product: "pro" });
    expect(checkoutReturn("?checkout=granted")).toBeNull();
  });
});

describe("routes", () => {
  it("knows the pages beside the chat", () => {
    expect(parseRoute("/billing")).toEqual({ conversationId: null, page: "billing" });
    expect(parseRoute("/usage/")).toEqual({ conversationId: null, page: "usage" });
    expect(parseRoute("/admin/users/u%201")).toEqual({ conversationId: null, page: "admin", adminUserId: "u 1" });
    expect(parseRoute("/c/abc")).toEqual({ conversationId: "abc" });
    expect(parseRoute("/nowhere")).toEqual({ conversationId: null });
  });
});
