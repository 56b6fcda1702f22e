/** When credits come back, and how to say it (pure: the clock is a parameter). */

import type { Credits } from "../api/types";

export interface Renewal {
  /** When the allowance is next renewed (UTC midnight of the next day, or of the next month when a
   * monthly cap is used up). */
  at: Date;
  /** How many credits it brings. */
  credits: number;
}

/** The next allowance: tomorrow's (UTC), or — a monthly cap used up — the next month's first. */
export function nextRenewal(credits: Credits, now: Date): Renewal {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const tomorrow = new Date(Date.UTC(year, month, now.getUTCDate() + 1));
  if (credits.monthly_cap === null) return { at: tomorrow, credits: credits.daily_allowance };
  const left = credits.left_this_month ?? credits.monthly_cap - credits.used_this_month;
  const sameMonth = tomorrow.getUTCMonth() === month;
  if (sameMonth && left <= 0) {
    return { at: new Date(Date.UTC(year, month + 1, 1)), credits: credits.daily_allowance };
  }
  return { at: tomorrow, credits: sameMonth ? Math.min(credits.daily_allowance, left) : credits.daily_allowance };
}

/** "3 h 12 min", "45 min", "less than a minute". */
export function timeUntil(at: Date, now: Date): string {
  const minutes = Math.max(0, Math.ceil((at.getTime() - now.getTime()) / 60_000));
  if (minutes < 1) return "less than a minute";
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  if (hours >= 48) return `${Math.round(hours / 24)} days`;
  return rest ? `${hours} h ${rest} min` : `${hours} h`;
}

/** "00:00 UTC", or "00:00 UTC on Jul 1" when it is not tomorrow. */
export function renewalTime(renewal: Renewal, now: Date): string {
  const tomorrow = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  if (renewal.at.getTime() === tomorrow) return "00:00 UTC";
  const day = renewal.at.toLocaleDateString("en", { month: "short", day: "numeric", timeZone: "UTC" });
  return `00:00 UTC on ${day}`;
}

/** The same moment on the reader's own clock ("02:00"), or null when their clock is UTC. */
export function localTime(at: Date): string | null {
  if (at.getTimezoneOffset() === 0) return null;
  return at.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit" });
}

/** What a question costs. */
export function queryPrice(credits: Credits | null): number {
  return credits?.prices.query ?? 5;
}

/** Whether the balance cannot pay for another question. */
export function outOfCredits(credits: Credits | null): boolean {
  return credits !== null && credits.balance < queryPrice(credits);
}
