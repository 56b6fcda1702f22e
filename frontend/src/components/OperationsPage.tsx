import { useCallback } from "preact/hooks";
import { operations } from "../api/operations";
import type { Credits, User } from "../api/types";
import type { Page, Route } from "../lib/router";
import { AdminPage } from "./AdminPage";
import { BillingPage } from "./BillingPage";
import { UsageView } from "./UsageView";

const TITLES: Record<Page, string> = { billing: "Billing", usage: "Usage", admin: "Admin" };

export function pageTitle(page: Page): string {
  return TITLES[page];
}

interface Props {
  route: Route;
  user: User;
  credits: Credits | null;
  refreshCredits: () => Promise<Credits | null>;
}

/** The pages beside the chat: Billing, Usage and (administrators) Admin. */
export function OperationsPage({ route, user, credits, refreshCredits }: Props) {
  const ownUsage = useCallback((from?: string, to?: string) => operations.usage(from, to), []);
  return (
    <main class="page-scroll" id="main" aria-label={pageTitle(route.page ?? "usage")}>
      <div class="page-inner">
        {route.page === "billing" && <BillingPage credits={credits} refreshCredits={refreshCredits} />}
        {route.page === "usage" && <UsageView load={ownUsage} />}
        {route.page === "admin" &&
          (user.role === "admin" ? (
            <AdminPage userId={route.adminUserId} me={user.id} />
          ) : (
            <p class="muted">There is no such page.</p>
          ))}
      </div>
    </main>
  );
}
