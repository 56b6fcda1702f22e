import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api/client";
import { operations, type Billing, type Product } from "../api/operations";
import type { Credits } from "../api/types";
import { credits as creditsText } from "../lib/format";
import { planName } from "./Sidebar";

interface Props {
  credits: Credits | null;
  /** Fetch the balance again (after a purchase is confirmed). */
  refreshCredits: () => Promise<Credits | null>;
}

/** What `?checkout=…` says about a return from Stripe Checkout (nothing is granted by it). */
export function checkoutReturn(search: string): { state: "success" | "cancelled"; product: string } | null {
  const params = new URLSearchParams(search);
  const state = params.get("checkout");
  if (state !== "success" && state !== "cancelled") return null;
  return { state, product: params.get("product") ?? "" };
}

const CONFIRM_POLLS = 40;
/** The pack balance when the user left for Checkout, to tell when Stripe's confirmation arrived. */
const PACK_BEFORE = "almanac-pack-before-checkout";

/** The plan, what is left today and this month, and the buttons to upgrade, buy a pack or manage
 * the subscription (none of them when the server takes no payments). */
export function BillingPage({ credits, refreshCredits }: Props) {
  const [billing, setBilling] = useState<Billing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [returned] = useState(() => checkoutReturn(location.search));
  const [confirmed, setConfirmed] = useState(false);

  useEffect(() => {
    operations
      .billing()
      .then(setBilling)
      .catch(() => setError("The billing details could not be loaded."));
  }, []);

  // Back from Checkout: wait for Stripe's webhook to grant (the redirect itself grants nothing).
  useEffect(() => {
    if (returned?.state !== "success") return;
    const stored = Number(sessionStorage.getItem(PACK_BEFORE) ?? Number.NaN);
    let before: number | null = Number.isFinite(stored) ? stored : null;
    let polls = 0;
    const timer = setInterval(async () => {
      polls += 1;
      const [now, status] = await Promise.all([refreshCredits(), operations.billing().catch(() => null)]);
      if (status) setBilling(status);
      if (before === null && now !== null) before = now.buckets.pack;
      const granted =
        returned.product === "pack" ? now !== null && before !== null && now.buckets.pack > before : status?.plan === "pro";
      if (granted) {
        setConfirmed(true);
        sessionStorage.removeItem(PACK_BEFORE);
      }
      if (granted || polls >= CONFIRM_POLLS) clearInterval(timer);
    }, 1500);
    return () => clearInterval(timer);
  }, [returned]);

  async function go(action: "pro" | "pack" | "portal") {
    setBusy(action);
    setError(null);
    try {
      const { url } = action === "portal" ? await operations.portal() : await operations.checkout(action);
      if (action === "pack" && credits) sessionStorage.setItem(PACK_BEFORE, String(credits.buckets.pack));
      location.assign(url);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "Stripe could not be reached; try again later.");
      setBusy(null);
    }
  }

  const plan = billing?.plan ?? credits?.plan ?? "free";
  const subscription = billing?.subscription ?? null;
  const payments = billing?.payments_enabled ?? false;
  return (
    <div class="page billing-page">
      {returned?.state === "success" && (
        <p class={`notice ${confirmed ? "" : "notice-wait"}`} role="status" data-testid="checkout-return">
          {confirmed
            ? returned.product === "pack"
              ? "Payment received: 500 credits were added to your packs."
              : "Payment received: you are on Pro now."
            : "Thank you! Confirming your payment with Stripe… (credits appear once Stripe confirms it)"}
        </p>
      )}
      {returned?.state === "cancelled" && (
        <p class="notice" role="status" data-testid="checkout-return">
          Checkout was cancelled; nothing was charged.
        </p>
      )}
      {error && (
        <p class="notice notice-error" role="alert">
          {error}
        </p>
      )}
      <section class="page-section" aria-labelledby="billing-plan">
        <h2 id="billing-plan">Your plan</h2>
        <dl class="facts">
          <dt>Plan</dt>
          <dd data-testid="billing-plan">{planName(plan)}</dd>
          {credits && (
            <>
              <dt>Left today</dt>
              <dd data-testid="left-today">
                {credits.left_today} of {credits.daily_allowance} (renews 00:00 UTC)
              </dd>
              {credits.monthly_cap !== null && (
                <>
                  <dt>This month</dt>
                  <dd>
                    {credits.left_this_month ?? 0} left of {credits.monthly_cap.toLocaleString("en")} ({credits.used_this_month} used)
                  </dd>
                </>
              )}
              <dt>Credit packs</dt>
              <dd data-testid="pack-balance">{creditsText(credits.buckets.pack)} (never expire)</dd>
            </>
          )}
          {subscription && (
            <>
              <dt>Subscription</dt>
              <dd data-testid="subscription">
                {subscriptionText(subscription.status, subscription.cancel_at_period_end, subscription.current_period_end)}
              </dd>
            </>
          )}
        </dl>
        {subscription?.payment_failed && (
          <p class="notice notice-error" role="alert" data-testid="payment-failed">
            Your last payment failed. Stripe will try again; update your card in “Manage subscription” to keep Pro.
          </p>
        )}
      </section>
      <section class="page-section" aria-labelledby="billing-buy">
        <h2 id="billing-buy">Plans and packs</h2>
        {billing && !payments && (
          <p class="muted" data-testid="payments-off">
            This server does not take payments. Ask its operator for more credits or a plan change.
          </p>
        )}
        <div class="products">
          {(billing?.products ?? []).map((product) => (
            <ProductCard
              key={product.id}
              product={product}
              action={payments ? actionFor(product, plan) : null}
              busy={busy === product.id}
              onBuy={() => void go(product.id)}
            />
          ))}
        </div>
        {payments && billing?.portal_available && (
          <button type="button" class="btn" disabled={busy !== null} onClick={() => void go("portal")}>
            {busy === "portal" ? "Opening…" : "Manage subscription and invoices"}
          </button>
        )}
      </section>
    </div>
  );
}

function actionFor(product: Product, plan: string): string | null {
  if (product.id === "pro") return plan === "pro" ? null : "Upgrade to Pro";
  return "Buy a pack";
}

function ProductCard({ product, action, busy, onBuy }: { product: Product; action: string | null; busy: boolean; onBuy: () => void }) {
  return (
    <div class="product" data-testid={`product-${product.id}`}>
      <h3>{product.name}</h3>
      <p class="product-price">
        ${product.price_usd}
        {product.interval ? <span class="muted"> / {product.interval}</span> : <span class="muted"> once</span>}
      </p>
      <p class="muted small">{product.description}</p>
      {action && (
        <button type="button" class="btn btn-primary" disabled={busy} onClick={onBuy}>
          {busy ? "Opening Stripe…" : action}
        </button>
      )}
    </div>
  );
}

function subscriptionText(status: string, cancelling: boolean, end: string | null): string {
  const until = end ? new Date(end).toLocaleDateString("en", { year: "numeric", month: "short", day: "numeric" }) : null;
  if (cancelling && until) return `Cancelled: Pro until ${until}`;
  if (status === "active" && until) return `Active, renews ${until}`;
  if (status === "past_due") return "Payment overdue (Stripe is retrying)";
  return status.replace("_", " ");
}
