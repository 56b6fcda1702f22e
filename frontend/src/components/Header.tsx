import type { RefObject } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Credits, User } from "../api/types";
import { outOfCredits } from "../lib/credits";
import { credits as creditsText } from "../lib/format";
import { navigatePath } from "../lib/router";
import { AccountMenu, type MenuItem } from "./AccountMenu";
import { IconCoins, IconMenu } from "./icons";
import { planName } from "./Sidebar";

interface Props {
  title: string;
  credits: Credits | null;
  onMenu: () => void;
  menuOpen: boolean;
  user: User;
  accountItems: MenuItem[];
  accountButton: RefObject<HTMLButtonElement>;
}

/** The top bar: menu (small screens), the conversation's title, the credits balance, the account menu. */
export function Header({ title, credits, onMenu, menuOpen, user, accountItems, accountButton }: Props) {
  return (
    <header class="topbar">
      <button
        type="button"
        class="btn-icon btn-ghost menu-button"
        onClick={onMenu}
        aria-label="Show conversations"
        aria-expanded={menuOpen}
        aria-controls="sidebar"
      >
        <IconMenu />
      </button>
      <h1 class="topbar-title">{title}</h1>
      <CreditsBadge credits={credits} />
      <AccountMenu user={user} items={accountItems} buttonRef={accountButton} />
    </header>
  );
}

function CreditsBadge({ credits }: { credits: Credits | null }) {
  const [open, setOpen] = useState(false);
  const wrap = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    const close = (event: Event) => {
      if (event instanceof KeyboardEvent ? event.key === "Escape" : !wrap.current?.contains(event.target as Node)) {
        setOpen(false);
      }
    };
    document.addEventListener("keydown", close);
    document.addEventListener("pointerdown", close);
    return () => {
      document.removeEventListener("keydown", close);
      document.removeEventListener("pointerdown", close);
    };
  }, [open]);

  if (!credits) return <div class="credits-badge placeholder" aria-hidden="true" />;
  const empty = outOfCredits(credits);
  return (
    <div class="credits" ref={wrap}>
      <button
        type="button"
        class={`credits-badge ${empty ? "empty" : ""}`}
        aria-expanded={open}
        aria-controls="credits-panel"
        onClick={() => setOpen(!open)}
        data-testid="credits-badge"
      >
        <IconCoins />
        <span class="credits-balance" data-balance={credits.balance}>
          {credits.balance.toLocaleString("en")}
        </span>
        <span class="credits-unit">credits</span>
        <span class="plan-chip">{planName(credits.plan)}</span>
      </button>
      <div aria-live="polite" class="sr-only">
        {`Balance: ${creditsText(credits.balance)}`}
      </div>
      {open && (
        <div class="credits-panel" id="credits-panel" role="region" aria-label="Credits">
          {empty && <p class="credits-warning">Not enough credits for another question.</p>}
          <dl>
            <dt>Plan</dt>
            <dd>{planName(credits.plan)}</dd>
            <dt>Balance</dt>
            <dd>{creditsText(credits.balance)}</dd>
            <dt>Left today</dt>
            <dd>
              {credits.left_today} of {credits.daily_allowance} (renews 00:00 UTC)
            </dd>
            <dt>Credit packs</dt>
            <dd>{creditsText(credits.buckets.pack)} (never expire)</dd>
            {credits.monthly_cap !== null && (
              <>
                <dt>This month</dt>
                <dd>
                  {credits.used_this_month} used of {credits.monthly_cap}
                </dd>
              </>
            )}
          </dl>
          <p class="credits-more">
            <a
              href="/billing"
              onClick={(event) => {
                if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
                event.preventDefault();
                setOpen(false);
                navigatePath("/billing");
              }}
            >
              Billing: your plan, packs and how to get more credits
            </a>
          </p>
          <h3>Prices</h3>
          <ul class="prices">
            <li>
              Question <span>{credits.prices.query}</span>
            </li>
            <li>
              Documentation lookup <span>+{credits.prices.retrieve_documentation}</span>
            </li>
            <li>
              GitHub tool call <span>+{credits.prices.github_tool}</span>
            </li>
            <li>
              Other tool call <span>+{credits.prices.other_tool}</span>
            </li>
          </ul>
        </div>
      )}
    </div>
  );
}
