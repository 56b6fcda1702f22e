import { describe, expect, it } from "vitest";
import { bars, niceMax, shares, shortDay, ticks, tokens } from "./charts";

describe("chart geometry", () => {
  it("rounds the axis up to 1, 2 or 5 times a power of ten", () => {
    expect([0, 1, 3, 7, 10, 11, 48, 51, 150, 2001].map(niceMax)).toEqual([1, 1, 5, 10, 10, 20, 50, 100, 200, 5000]);
  });

  it("spaces ticks evenly from zero", () => {
    expect(ticks(20)).toEqual([0, 5, 10, 15, 20]);
  });

  it("stacks packs on top of the day's allowance, scaled to the plot", () => {
    const [first, second] = bars([{ daily: 10, pack: 0 }, { daily: 5, pack: 5 }], 100, 50, 10);
    expect(first.daily).toEqual({ y: 0, height: 50 });
    expect(first.pack.height).toBe(0);
    expect(second.daily).toEqual({ y: 25, height: 25 });
    expect(second.pack).toEqual({ y: 0, height: 25 });
    expect(second.x).toBeGreaterThan(first.x + first.width);
  });

  it("keeps the largest shares and sums the rest as other", () => {
    const mix = shares(
      [
        { label: "a", credits: 6, calls: 3 },
        { label: "b", credits: 2, calls: 1 },
        { label: "c", credits: 1, calls: 1 },
        { label: "d", credits: 1, calls: 2 },
      ],
      2,
    );
    expect(mix.map((s) => [s.label, s.credits, s.calls])).toEqual([["a", 6, 3], ["b", 2, 1], ["other", 2, 3]]);
    expect(mix.reduce((sum, s) => sum + s.fraction, 0)).toBeCloseTo(1);
  });

  it("labels days and token counts briefly", () => {
    expect(shortDay("2026-03-04")).toBe("Mar 4");
    expect([950, 12_345, 4_100_000].map(tokens)).toEqual(["950", "12k", "4.1M"]);
  });
});
