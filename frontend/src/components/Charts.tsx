import type { RefObject } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import type { UsageDay, UsageItem } from "../api/operations";
import { bars, mixLayout, niceMax, shares, shortDay, ticks } from "../lib/charts";

const H = 200;
const LEFT = 40;
const BOTTOM = 24;
const DEFAULT_W = 640;

/** The element's width in CSS pixels, kept up to date: charts are drawn at that width, so their
 * text keeps its size on a phone instead of shrinking with a scaled-down picture. */
function useWidth(ref: RefObject<HTMLElement>): number {
  const [width, setWidth] = useState(DEFAULT_W);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => {
      const measured = Math.round(element.getBoundingClientRect().width);
      if (measured > 0) setWidth(measured);
    };
    measure();
    if (typeof ResizeObserver !== "function") return;
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return width;
}

/** Credits per day as stacked SVG bars (the day's allowance, packs above), with a text summary. */
export function DailyCreditsChart({ days }: { days: UsageDay[] }) {
  const frame = useRef<HTMLElement>(null);
  const W = useWidth(frame);
  const max = niceMax(Math.max(0, ...days.map((d) => d.credits)));
  const plotW = W - LEFT - 8;
  const plotH = H - BOTTOM - 8;
  const layout = bars(days, plotW, plotH, max);
  const total = days.reduce((sum, d) => sum + d.credits, 0);
  const busiest = days.reduce<UsageDay | null>((best, d) => (best === null || d.credits > best.credits ? d : best), null);
  // A day label takes about 48 px: as many as fit.
  const labelEvery = Math.max(1, Math.ceil(days.length / Math.max(2, Math.floor(plotW / 48))));
  const summary =
    `Credits per day, ${days.length} days: ${total} in all` +
    (busiest && busiest.credits > 0 ? `, most on ${shortDay(busiest.day)} (${busiest.credits})` : "");
  return (
    <figure class="chart" data-testid="daily-chart" ref={frame}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={summary} class="chart-svg">
        <g transform={`translate(${LEFT} 8)`}>
          {ticks(max, max <= 4 ? max : max % 4 === 0 ? 4 : 5).map((value) => {
            const y = plotH - (value / max) * plotH;
            return (
              <g key={value} class="chart-grid">
                <line x1={0} x2={plotW} y1={y} y2={y} />
                <text x={-6} y={y + 4} text-anchor="end">
                  {value}
                </text>
              </g>
            );
          })}
          {layout.map((bar, index) => {
            const day = days[index];
            return (
              <g key={day.day} class="chart-bar" data-day={day.day} data-credits={day.credits}>
                <title>{`${shortDay(day.day)}: ${day.credits} credits (${day.daily} from the day's allowance, ${day.pack} from packs)`}</title>
                {bar.daily.height > 0 && (
                  <rect class="bar-daily" x={bar.x} y={bar.daily.y} width={bar.width} height={bar.daily.height} />
                )}
                {bar.pack.height > 0 && (
                  <rect class="bar-pack" x={bar.x} y={bar.pack.y} width={bar.width} height={bar.pack.height} />
                )}
                {index % labelEvery === 0 && (
                  <text class="chart-axis" x={bar.x + bar.width / 2} y={plotH + 16} text-anchor="middle">
                    {shortDay(day.day)}
                  </text>
                )}
              </g>
            );
          })}
        </g>
      </svg>
      <figcaption class="chart-legend">
        <span class="legend-swatch bar-daily" aria-hidden="true" /> day's allowance
        <span class="legend-swatch bar-pack" aria-hidden="true" /> packs
      </figcaption>
    </figure>
  );
}

export function itemLabel(item: UsageItem): string {
  if (item.kind === "question") return "questions (base price)";
  if (item.kind === "discussion") return "discussion turns";
  if (item.kind === "gateway") return "gateway (/v1/messages)";
  return item.name ?? "tools paid before this period";
}

/** Where the credits went, as horizontal SVG bars with their share (one colour: each bar is
 * named by its label, and no colour here means what it means in the chart above). */
export function ToolMix({ items }: { items: UsageItem[] }) {
  const frame = useRef<HTMLElement>(null);
  const W = useWidth(frame);
  const mix = shares(items.map((item) => ({ label: itemLabel(item), credits: item.credits, calls: item.calls })));
  if (mix.length === 0 || mix.every((share) => share.credits === 0)) {
    return <p class="muted">Nothing spent in this period.</p>;
  }
  const row = mixLayout(W);
  return (
    <figure class="chart" data-testid="tool-mix" ref={frame}>
      <svg
        viewBox={`0 0 ${W} ${mix.length * row.height}`}
        width={W}
        height={mix.length * row.height}
        role="img"
        aria-label={`Credits by tool: ${mix.map((s) => `${s.label} ${s.credits}`).join(", ")}`}
        class="chart-svg"
      >
        {mix.map((share, index) => (
          <g key={share.label} class="mix-row" transform={`translate(0 ${index * row.height})`}>
            <title>{`${share.label}: ${share.credits} credits, ${share.calls} calls`}</title>
            <text class="mix-label" x={0} y={row.labelY}>
              {share.label}
            </text>
            <rect class="mix-track" x={row.barX} y={row.barY} width={row.barW} height={14} rx={3} />
            <rect
              class="mix-bar"
              x={row.barX}
              y={row.barY}
              width={Math.max(share.credits > 0 ? 2 : 0, share.fraction * row.barW)}
              height={14}
              rx={3}
            />
            <text class="mix-value" x={W - 4} y={row.valueY} text-anchor="end">
              {`${share.credits} (${Math.round(share.fraction * 100)}%)`}
            </text>
          </g>
        ))}
      </svg>
    </figure>
  );
}
