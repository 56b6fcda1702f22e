/** Pure geometry for the usage charts (drawn as SVG by components/Charts.tsx, no chart library). */

/** The smallest "round" number (1, 2 or 5 × 10^n) at least `value`; 1 for nothing. */
export function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= value) return step * power;
  }
  return 10 * power;
}

/** Axis values from 0 to `max` in `count` equal steps (integers when the steps are whole). */
export function ticks(max: number, count = 4): number[] {
  return Array.from({ length: count + 1 }, (_, i) => Math.round(((max * i) / count) * 100) / 100);
}

export interface Bar {
  x: number;
  width: number;
  /** The two stacked parts (day's allowance at the bottom, packs above), in SVG coordinates. */
  daily: { y: number; height: number };
  pack: { y: number; height: number };
}

/** Bars for `values` (each split into daily and pack) in a plot of `width` × `height`. */
export function bars(values: { daily: number; pack: number }[], width: number, height: number, max: number): Bar[] {
  const slot = values.length > 0 ? width / values.length : width;
  const gap = Math.min(4, slot * 0.2);
  return values.map((value, index) => {
    const dailyHeight = (value.daily / max) * height;
    const packHeight = (value.pack / max) * height;
    return {
      x: index * slot + gap / 2,
      width: Math.max(1, slot - gap),
      daily: { y: height - dailyHeight, height: dailyHeight },
      pack: { y: height - dailyHeight - packHeight, height: packHeight },
    };
  });
}

export interface Share {
  label: string;
  credits: number;
  calls: number;
  /** Of all credits, 0–1. */
  fraction: number;
}

/** The `limit` largest entries by credits (the rest summed up as "other"), with their fractions. */
export function shares(entries: { label: string; credits: number; calls: number }[], limit = 6): Share[] {
  const sorted = [...entries].sort((a, b) => b.credits - a.credits || a.label.localeCompare(b.label));
  const shown = sorted.slice(0, limit);
  const rest = sorted.slice(limit);
  if (rest.length > 0) {
    shown.push({
      label: "other",
      credits: rest.reduce((sum, e) => sum + e.credits, 0),
      calls: rest.reduce((sum, e) => sum + e.calls, 0),
    });
  }
  const total = shown.reduce((sum, e) => sum + e.credits, 0);
  return shown.map((entry) => ({ ...entry, fraction: total > 0 ? entry.credits / total : 0 }));
}

/** A day label for an axis: "Mar 4". */
export function shortDay(day: string): string {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, date)).toLocaleDateString("en", { month: "short", day: "numeric", timeZone: "UTC" });
}

/** Tokens as "950", "12.3k", "4.1M". */
export function tokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export interface MixRow {
  height: number;
  labelY: number;
  barX: number;
  barY: number;
  barW: number;
  valueY: number;
}

/** One row of the tool mix at `width` px: label, bar and value on one line when there is room;
 * on a narrow screen the label goes above a full-width bar (text never has to shrink). */
export function mixLayout(width: number): MixRow {
  const value = 90; // room for "1,234 (100%)"
  if (width >= 480) {
    const label = Math.min(220, Math.round(width * 0.34));
    return { height: 28, labelY: 18, barX: label, barY: 6, barW: Math.max(40, width - label - value - 8), valueY: 18 };
  }
  return { height: 44, labelY: 14, barX: 0, barY: 22, barW: Math.max(40, width - value - 8), valueY: 34 };
}
