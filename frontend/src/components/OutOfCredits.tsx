import type { Credits } from "../api/types";
import { localTime, nextRenewal, queryPrice, renewalTime, timeUntil } from "../lib/credits";
import { credits as creditsText } from "../lib/format";
import { Link } from "./Link";

interface Props {
  credits: Credits | null;
  /** The server takes payments (GET /api/config): offer buying; else say who grants credits. */
  payments: boolean;
  /** What the refused question needed (a 402's `needed`), else a question's price. */
  needed?: number;
  /** The balance the refusal reported (else the current one). */
  balance?: number;
  now?: Date;
}

/** What someone out of credits can do: when the allowance comes back (with the time), and either
 * buying more (payments on) or asking the operator (payments off) — with the Billing page a click
 * away. The one place that says it: the refused message's card, or else the composer's banner. */
export function OutOfCreditsHelp({ credits, payments, needed, balance, now = new Date() }: Props) {
  const have = balance ?? credits?.balance ?? 0;
  const cost = needed ?? queryPrice(credits);
  const renewal = credits ? nextRenewal(credits, now) : null;
  const local = renewal ? localTime(renewal.at) : null;
  return (
    <div class="out-of-credits-help">
      <p class="credit-figures">
        You have <strong>{creditsText(have)}</strong>; a question needs <strong>{creditsText(cost)}</strong>.
      </p>
      {renewal && renewal.credits > 0 && (
        <p data-testid="renewal">
          Your allowance of {creditsText(renewal.credits)} comes back at <strong>{renewalTime(renewal, now)}</strong> (in{" "}
          {timeUntil(renewal.at, now)}
          {local ? `, ${local} your time` : ""}).
        </p>
      )}
      {payments ? (
        <p class="credit-actions">
          Or get more now:{" "}
          <Link href="/billing" class="btn btn-small btn-primary">
            Upgrade or buy a credit pack
          </Link>
        </p>
      ) : (
        <p data-testid="payments-off-note">
          This server does not take payments: ask its operator for more credits or a plan change.{" "}
          <Link href="/billing">Your plan and credits</Link>
        </p>
      )}
    </div>
  );
}
