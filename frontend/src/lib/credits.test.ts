import { describe, expect, it } from "vitest";
import type { Credits } from "../api/types";
import { nextRenewal, outOfCredits, renewalTime, timeUntil } from "./credits";

function credits(change: Partial<Credits> = {}): Credits {
  return {
    plan: "free",
    balance: 0,
    buckets: { daily: 0, pack: 0 },
    daily_allowance: 50,
    left_today: 0,
    period: "2026-03-04",
    monthly_cap: null,
    used_this_month: 0,
    left_this_month: null,
    prices: { query: 5, retrieve_documentation: 10, github_tool: 3, other_tool: 2 },
    ...change,
  };
}

const NOW = new Date(Date.UTC(2026, 2, 4, 20, 48)); // 2026-03-04 20:48 UTC

describe("nextRenewal", () => {
  it("is the next UTC midnight with the day's allowance", () => {
    const renewal = nextRenewal(credits(), NOW);
    expect(renewal).toEqual({ at: new Date(Date.UTC(2026, 2, 5)), credits: 50 });
    expect(renewalTime(renewal, NOW)).toBe("00:00 UTC");
    expect(timeUntil(renewal.at, NOW)).toBe("3 h 12 min");
  });

  it("is the next month when a monthly cap is used up", () => {
    const pro = credits({ plan: "pro", daily_allowance: 150, monthly_cap: 3000, used_this_month: 3000, left_this_month: 0 });
    const renewal = nextRenewal(pro, NOW);
    expect(renewal).toEqual({ at: new Date(Date.UTC(2026, 3, 1)), credits: 150 });
    expect(renewalTime(renewal, NOW)).toBe("00:00 UTC on Apr 1");
  });

  it("brings only what is left of a monthly cap", () => {
    const pro = credits({ plan: "pro", daily_allowance: 150, monthly_cap: 3000, used_this_month: 2960, left_this_month: 40 });
    expect(nextRenewal(pro, NOW).credits).toBe(40);
    const lastDay = new Date(Date.UTC(2026, 2, 31, 12));
    expect(nextRenewal(pro, lastDay)).toEqual({ at: new Date(Date.UTC(2026, 3, 1)), credits: 150 }); // a new month
  });
});

describe("timeUntil", () => {
  it("rounds up to whole minutes", () => {
    expect(timeUntil(new Date(NOW.getTime() + 30_000), NOW)).toBe("1 min");
    expect(timeUntil(new Date(NOW.getTime() + 2 * 3600_000), NOW)).toBe("2 h");
    expect(timeUntil(NOW, NOW)).toBe("less than a minute");
  });
});

describe("outOfCredits", () => {
  it("is true when a question cannot be paid", () => {
    expect(outOfCredits(credits({ balance: 4 }))).toBe(true);
    expect(outOfCredits(credits({ balance: 5 }))).toBe(false);
    expect(outOfCredits(null)).toBe(false);
  });
});
