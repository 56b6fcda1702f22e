import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError, notFound } from "../api/client";
import { operations, type AdminUserDetail, type AdminUserRow, type AuditEntry } from "../api/operations";
import { relativeTime } from "../lib/format";
import { navigatePath } from "../lib/router";
import { ConfirmDialog } from "./ConfirmDialog";
import { Link } from "./Link";
import { planName } from "./Sidebar";
import { UsageView } from "./UsageView";

type Tab = "users" | "usage" | "audit";

/** The Admin page: users (search, one user's account and actions), service-wide usage, the audit log. */
export function AdminPage({ userId, me }: { userId?: string; me: string }) {
  const [tab, setTab] = useState<Tab>("users");
  const shown: Tab = userId ? "users" : tab;
  return (
    <div class="page admin-page">
      <div class="tabs" role="group" aria-label="Admin sections">
        {(["users", "usage", "audit"] as Tab[]).map((name) => (
          <button
            type="button"
            key={name}
            class={`btn btn-small ${shown === name ? "btn-primary" : ""}`}
            aria-pressed={shown === name}
            onClick={() => {
              setTab(name);
              if (userId) navigatePath("/admin");
            }}
          >
            {name === "users" ? "Users" : name === "usage" ? "Service usage" : "Audit log"}
          </button>
        ))}
      </div>
      {shown === "users" && (userId ? <UserDetail userId={userId} me={me} /> : <UserList />)}
      {shown === "usage" && <UsageView load={operations.serviceUsage} everyone />}
      {shown === "audit" && <AuditLog />}
    </div>
  );
}

function UserList() {
  const [search, setSearch] = useState("");
  const [rows, setRows] = useState<AdminUserRow[] | null>(null);
  const [count, setCount] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);

  async function showMore() {
    if (!rows) return;
    setLoadingMore(true);
    try {
      const page = await operations.adminUsers(search, rows.length);
      setRows([...rows, ...page.data.filter((row) => !rows.some((seen) => seen.id === row.id))]);
      setCount(page.count);
      setError(null);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "More users could not be loaded.");
    } finally {
      setLoadingMore(false);
    }
  }

  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      operations
        .adminUsers(search)
        .then((page) => {
          if (!live) return;
          setRows(page.data);
          setCount(page.count);
          setError(null);
        })
        .catch((e) => live && setError(e instanceof ApiError ? e.message : "The users could not be loaded."));
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [search]);

  return (
    <section class="page-section" aria-labelledby="admin-users">
      <h2 id="admin-users">Users</h2>
      <label class="field">
        <span>Search by e-mail</span>
        <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
      </label>
      {error && (
        <p class="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {rows && (
        <>
          <p class="muted small" aria-live="polite">
            {count} user{count === 1 ? "" : "s"}
            {count > rows.length ? ` (${rows.length} shown)` : ""}
          </p>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Users">
            <table class="data-table" data-testid="admin-users">
              <thead>
                <tr>
                  <th scope="col">E-mail</th>
                  <th scope="col">Plan</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">Packs</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr key={row.id}>
                    <td>
                      <Link href={`/admin/users/${encodeURIComponent(row.id)}`}>{row.email}</Link>
                    </td>
                    <td>{planName(row.plan)}</td>
                    <td>{row.role}</td>
                    <td>{row.disabled ? <span class="danger-text">disabled</span> : "active"}</td>
                    <td class="num">{row.pack}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {count > rows.length && (
            <button type="button" class="btn" disabled={loadingMore} onClick={() => void showMore()}>
              {loadingMore ? "Loading…" : `Show ${Math.min(50, count - rows.length)} more`}
            </button>
          )}
        </>
      )}
    </section>
  );
}

function UserDetail({ userId, me }: { userId: string; me: string }) {
  const [detail, setDetail] = useState<AdminUserDetail | null>(null);
  const [audit, setAudit] = useState<AuditEntry[]>([]);
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const [confirmDisable, setConfirmDisable] = useState(false);

  const reload = useCallback(async () => {
    try {
      const [user, log] = await Promise.all([operations.adminUser(userId), operations.audit(userId)]);
      setDetail(user);
      setAudit(log.data);
    } catch (e) {
      const text = notFound(e) ? "There is no such user." : e instanceof ApiError ? e.message : "The user could not be loaded.";
      setMessage({ text, error: true });
    }
  }, [userId]);

  useEffect(() => {
    void reload();
  }, [reload]);

  async function act(work: () => Promise<string>) {
    setMessage(null);
    try {
      const text = await work();
      setMessage({ text, error: false });
      await reload();
    } catch (e) {
      setMessage({ text: e instanceof ApiError ? e.message : "That did not work.", error: true });
    }
  }

  if (!detail) return message ? <p class="notice notice-error" role="alert">{message.text}</p> : <p class="muted">Loading…</p>;
  const { user, credits } = detail;
  return (
    <section class="page-section" aria-labelledby="admin-user">
      <p>
        <Link href="/admin">← All users</Link>
      </p>
      <h2 id="admin-user">{user.email}</h2>
      {message && (
        <p class={`notice ${message.error ? "notice-error" : ""}`} role={message.error ? "alert" : "status"} data-testid="admin-message">
          {message.text}
        </p>
      )}
      <dl class="facts" data-testid="admin-user-facts">
        <dt>Plan</dt>
        <dd>{planName(user.plan)}</dd>
        <dt>Role</dt>
        <dd>{user.role}</dd>
        <dt>Status</dt>
        <dd>{user.disabled ? `disabled ${user.disabled_at ? relativeTime(user.disabled_at) : ""}` : "active"}</dd>
        <dt>Balance</dt>
        <dd data-testid="admin-balance">
          {credits.balance} ({credits.buckets.daily} left today, {credits.buckets.pack} in packs)
        </dd>
        {credits.monthly_cap !== null && (
          <>
            <dt>This month</dt>
            <dd>
              {credits.used_this_month} used of {credits.monthly_cap}
            </dd>
          </>
        )}
        {detail.subscription && (
          <>
            <dt>Subscription</dt>
            <dd>
              {detail.subscription.status}
              {detail.subscription.cancel_at_period_end ? ", ends at period end" : ""}
              {detail.subscription.payment_failed ? ", last payment failed" : ""}
            </dd>
          </>
        )}
      </dl>
      <div class="admin-forms">
        <CreditsForm
          onSubmit={(body) =>
            act(async () => {
              const done = await operations.adjustCredits(user.id, body);
              return `${body.action === "grant" ? "Granted" : "Removed"} ${body.amount} credits; balance ${done.balance}.`;
            })
          }
        />
        <PlanForm
          plan={user.plan}
          onSubmit={(plan, reason) =>
            act(async () => {
              const change = await operations.setPlan(user.id, plan, reason);
              return `Plan: ${planName(change.plan)}${change.top_up ? ` (+${change.top_up} credits today)` : ""}.`;
            })
          }
        />
        <fieldset class="admin-form">
          <legend>Access</legend>
          <button
            type="button"
            class={`btn ${user.disabled ? "" : "btn-danger"}`}
            disabled={user.id === me}
            onClick={() =>
              user.disabled
                ? act(async () => {
                    await operations.setDisabled(user.id, false, "");
                    return "Enabled again.";
                  })
                : setConfirmDisable(true)
            }
          >
            {user.disabled ? "Enable user" : "Disable user"}
          </button>
          <button
            type="button"
            class="btn"
            disabled={user.id === me}
            onClick={() =>
              act(async () => {
                const changed = await operations.setRole(user.id, user.role === "admin" ? "user" : "admin");
                return `Role: ${changed.role}.`;
              })
            }
          >
            {user.role === "admin" ? "Make ordinary user" : "Make administrator"}
          </button>
        </fieldset>
      </div>
      <ConfirmDialog
        open={confirmDisable}
        title={`Disable ${user.email}?`}
        message="None of their API keys or browser sessions will work until an administrator enables them again; they are told their account is disabled. Their conversations and credits are kept."
        confirmLabel="Disable user"
        danger
        onConfirm={() => {
          setConfirmDisable(false);
          void act(async () => {
            await operations.setDisabled(user.id, true, "");
            return "Disabled: their keys and sessions no longer work.";
          });
        }}
        onCancel={() => setConfirmDisable(false)}
      />
      <h3>Ledger</h3>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Ledger">
        <table class="data-table" data-testid="admin-ledger">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Kind</th>
              <th scope="col">Bucket</th>
              <th scope="col" class="num">Change</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {credits.recent.map((row) => (
              <tr key={row.id}>
                <td>{relativeTime(row.created_at)}</td>
                <td>{row.kind}</td>
                <td>{row.bucket}</td>
                <td class="num">{row.delta > 0 ? `+${row.delta}` : row.delta}</td>
                <td>{row.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h3>Audit log for this user</h3>
      <AuditTable entries={audit} />
    </section>
  );
}

function CreditsForm({
  onSubmit,
}: {
  onSubmit: (body: { action: "grant" | "remove"; bucket: "pack" | "daily"; amount: number; reason: string }) => Promise<void>;
}) {
  const [action, setAction] = useState<"grant" | "remove">("grant");
  const [bucket, setBucket] = useState<"pack" | "daily">("pack");
  const [amount, setAmount] = useState("100");
  const [reason, setReason] = useState("");
  return (
    <form
      class="admin-form"
      aria-label="Grant or remove credits"
      onSubmit={(event) => {
        event.preventDefault();
        void onSubmit({ action, bucket, amount: Number(amount), reason }).then(() => setReason(""));
      }}
    >
      <fieldset>
        <legend>Credits</legend>
        <label class="field">
          <span>Action</span>
          <select value={action} onChange={(e) => setAction((e.target as HTMLSelectElement).value as "grant" | "remove")}>
            <option value="grant">Grant</option>
            <option value="remove">Remove</option>
          </select>
        </label>
        <label class="field">
          <span>Bucket</span>
          <select value={bucket} onChange={(e) => setBucket((e.target as HTMLSelectElement).value as "pack" | "daily")}>
            <option value="pack">Packs (never expire)</option>
            <option value="daily">Today's allowance</option>
          </select>
        </label>
        <label class="field">
          <span>Amount</span>
          <input type="number" min={1} max={1000000} required value={amount} onInput={(e) => setAmount((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span>Reason</span>
          <input type="text" required maxLength={200} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="btn btn-primary">
          Apply
        </button>
      </fieldset>
    </form>
  );
}

function PlanForm({ plan, onSubmit }: { plan: string; onSubmit: (plan: "free" | "pro", reason: string) => Promise<void> }) {
  const [chosen, setChosen] = useState<"free" | "pro">(plan === "pro" ? "pro" : "free");
  const [reason, setReason] = useState("");
  useEffect(() => setChosen(plan === "pro" ? "pro" : "free"), [plan]);
  return (
    <form
      class="admin-form"
      aria-label="Change plan"
      onSubmit={(event) => {
        event.preventDefault();
        void onSubmit(chosen, reason);
      }}
    >
      <fieldset>
        <legend>Plan</legend>
        <label class="field">
          <span>New plan</span>
          <select value={chosen} onChange={(e) => setChosen((e.target as HTMLSelectElement).value as "free" | "pro")}>
            <option value="free">Free</option>
            <option value="pro">Pro</option>
          </select>
        </label>
        <label class="field">
          <span>Reason (optional)</span>
          <input type="text" maxLength={200} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="btn btn-primary">
          Change plan
        </button>
      </fieldset>
    </form>
  );
}

function AuditLog() {
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  useEffect(() => {
    operations
      .audit()
      .then((log) => setEntries(log.data))
      .catch(() => setEntries([]));
  }, []);
  return (
    <section class="page-section" aria-labelledby="admin-audit">
      <h2 id="admin-audit">Audit log</h2>
      {entries === null ? <p class="muted">Loading…</p> : <AuditTable entries={entries} />}
    </section>
  );
}

function AuditTable({ entries }: { entries: AuditEntry[] }) {
  if (entries.length === 0) return <p class="muted">No entries.</p>;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Audit log">
      <table class="data-table" data-testid="audit-log">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">Whom</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id}>
              <td title={entry.created_at}>{relativeTime(entry.created_at)}</td>
              <td>{entry.actor_email}</td>
              <td>{entry.action.replaceAll("_", " ")}</td>
              <td>{entry.target_email ?? "—"}</td>
              <td class="small">
                {Object.entries(entry.details)
                  .filter(([, value]) => value !== "" && value !== null)
                  .map(([key, value]) => `${key}: ${String(value)}`)
                  .join(", ")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
