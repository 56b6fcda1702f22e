import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api/client";
import type { Usage, UsageQuery } from "../api/operations";
import { tokens } from "../lib/charts";
import { DailyCreditsChart, itemLabel, ToolMix } from "./Charts";
import { Link } from "./Link";

interface Props {
  /** Loads the report for a range (the caller's own, a user's, or the whole service's). */
  load: (from?: string, to?: string) => Promise<Usage>;
  /** Service-wide: show who the questions were from, and the users who spent most. */
  everyone?: boolean;
}

const RANGES: [string, number][] = [
  ["7 days", 7],
  ["30 days", 30],
  ["90 days", 90],
];

/** A costly question (linked to its conversation) or discussion turn (linked to its discussion). */
function QueryCell({ query, link }: { query: UsageQuery; link: boolean }) {
  if (query.kind === "discussion") {
    const turn = `turn ${query.query_id.replace(/^q/, "")}`;
    if (query.title === null) return <span class="muted">(discussion deleted) · {turn}</span>;
    const label = `Discussion: ${query.title} · ${turn}`;
    return link ? <Link href={`/discussions/${encodeURIComponent(query.conversation_id)}`}>{label}</Link> : <>{label}</>;
  }
  const id = <span class="item-id">{query.query_id}</span>;
  if (query.title === null) {
    return (
      <>
        {query.question ?? <span class="muted">(conversation deleted)</span>} {id}
      </>
    );
  }
  const text = query.question ?? query.title;
  return (
    <>
      {link ? <Link href={`/c/${encodeURIComponent(query.conversation_id)}`}>{text}</Link> : text} {id}
    </>
  );
}

function daysBack(n: number): string {
  return new Date(Date.now() - (n - 1) * 86_400_000).toISOString().slice(0, 10);
}

/** A usage report: credits per day, the tool mix, tokens per model and the costliest questions. */
export function UsageView({ load, everyone = false }: Props) {
  const [days, setDays] = useState(30);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    setError(null);
    load(daysBack(days))
      .then((report) => live && setUsage(report))
      .catch((e) => live && setError(e instanceof ApiError ? e.message : "The usage could not be loaded."));
    return () => {
      live = false;
    };
  }, [days, load]);

  return (
    <div class="usage">
      <div class="range-picker" role="group" aria-label="Period">
        {RANGES.map(([label, n]) => (
          <button
            type="button"
            key={n}
            class={`btn btn-small ${days === n ? "btn-primary" : ""}`}
            aria-pressed={days === n}
            onClick={() => setDays(n)}
          >
            {label}
          </button>
        ))}
      </div>
      {error && (
        <p class="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {usage === null && !error && <p class="muted">Loading…</p>}
      {usage && (
        <>
          <p class="usage-total">
            <strong data-testid="usage-total">{usage.credits.toLocaleString("en")}</strong> credits spent from {usage.from} to{" "}
            {usage.to} (UTC)
          </p>
          <section class="page-section" aria-labelledby="usage-days">
            <h2 id="usage-days">Credits per day</h2>
            <DailyCreditsChart days={usage.days} />
          </section>
          <section class="page-section" aria-labelledby="usage-mix">
            <h2 id="usage-mix">Where they went</h2>
            <ToolMix items={usage.items} />
            {usage.items.length > 0 && (
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Credits by tool">
                <table class="data-table" data-testid="usage-items">
                  <thead>
                    <tr>
                      <th scope="col">Tool</th>
                      <th scope="col" class="num">Calls</th>
                      <th scope="col" class="num">Credits</th>
                    </tr>
                  </thead>
                  <tbody>
                    {usage.items.map((item) => (
                      <tr key={`${item.kind}:${item.name}`}>
                        <td>{itemLabel(item)}</td>
                        <td class="num">{item.calls}</td>
                        <td class="num">{item.credits}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          <section class="page-section" aria-labelledby="usage-models">
            <h2 id="usage-models">Models</h2>
            {usage.models.length === 0 ? (
              <p class="muted">No model usage recorded in this period.</p>
            ) : (
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Tokens by model">
                <table class="data-table" data-testid="usage-models">
                  <thead>
                    <tr>
                      <th scope="col">Model</th>
                      <th scope="col">Used by</th>
                      <th scope="col" class="num">Calls</th>
                      <th scope="col" class="num">Tokens in</th>
                      <th scope="col" class="num">Tokens out</th>
                    </tr>
                  </thead>
                  <tbody>
                    {usage.models.map((model) => (
                      <tr key={`${model.source}:${model.role}:${model.provider}:${model.model}`}>
                        <td>
                          <code>{model.model}</code> <span class="muted small">{model.provider}</span>
                        </td>
                        <td>{model.source === "chat" ? `chat (${model.role})` : `gateway (${model.role})`}</td>
                        <td class="num">
                          {model.calls}
                          {model.estimated && <span class="muted small"> ({model.estimated_calls} estimated)</span>}
                        </td>
                        <td class="num">{estimate(model.estimated, tokens(model.input_tokens))}</td>
                        <td class="num">{estimate(model.estimated, tokens(model.output_tokens))}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {usage.models.some((model) => model.estimated) && (
                  <p class="muted small" data-testid="usage-estimated-note">
                    ≈ estimated: the model server reported no token counts for some calls, so Almanac counted them
                    (a conservative estimate, included in the totals).
                  </p>
                )}
              </div>
            )}
          </section>
          <section class="page-section" aria-labelledby="usage-top">
            <h2 id="usage-top">Questions that cost most</h2>
            {usage.top_queries.length === 0 ? (
              <p class="muted">No questions in this period.</p>
            ) : (
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Questions that cost most">
                <table class="data-table" data-testid="top-queries">
                  <thead>
                    <tr>
                      <th scope="col">Question</th>
                      {everyone && <th scope="col">User</th>}
                      <th scope="col">Day</th>
                      <th scope="col" class="num">Credits</th>
                    </tr>
                  </thead>
                  <tbody>
                    {usage.top_queries.map((query) => (
                      <tr key={`${query.conversation_id}:${query.query_id}`}>
                        <td>
                          <QueryCell query={query} link={!everyone} />
                        </td>
                        {everyone && <td>{query.email}</td>}
                        <td class="nowrap">{query.day}</td>
                        <td class="num">{query.credits}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          {everyone && usage.top_users.length > 0 && (
            <section class="page-section" aria-labelledby="usage-users">
              <h2 id="usage-users">Users who spent most</h2>
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Users who spent most">
                <table class="data-table" data-testid="top-users">
                  <thead>
                    <tr>
                      <th scope="col">User</th>
                      <th scope="col" class="num">Credits</th>
                    </tr>
                  </thead>
                  <tbody>
                    {usage.top_users.map((user) => (
                      <tr key={user.user_id}>
                        <td>
                          <Link href={`/admin/users/${encodeURIComponent(user.user_id)}`}>{user.email}</Link>
                        </td>
                        <td class="num">{user.credits}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </section>
          )}
        </>
      )}
    </div>
  );
}

/** A token figure, marked "≈" when it includes estimates. */
function estimate(estimated: boolean, figure: string): string {
  return estimated ? `≈ ${figure}` : figure;
}
