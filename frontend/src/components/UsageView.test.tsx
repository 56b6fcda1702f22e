// @vitest-environment jsdom
import { render } from "preact";
import { act } from "preact/test-utils";
import { describe, expect, it } from "vitest";
import type { Usage, UsageModel } from "../api/operations";
import { UsageView } from "./UsageView";

function model(overrides: Partial<UsageModel>): UsageModel {
  return {
    source: "chat",
    role: "chat",
    provider: "openai",
    model: "smollm2",
    calls: 3,
    input_tokens: 1200,
    output_tokens: 300,
    estimated_calls: 0,
    estimated: false,
    ...overrides,
  };
}

function report(models: UsageModel[]): Usage {
  return {
    from: "2026-11-01",
    to: "2026-11-28",
    credits: 0,
    days: [],
    items: [],
    models,
    top_queries: [],
    top_users: [],
  } as Usage;
}

async function mount(models: UsageModel[]): Promise<HTMLElement> {
  const root = document.createElement("div");
  document.body.append(root);
  await act(async () => {
    render(<UsageView load={async () => report(models)} />, root);
  });
  await act(async () => {});
  return root;
}

describe("UsageView models", () => {
  it("marks token figures the server did not report as estimated", async () => {
    const root = await mount([model({ estimated_calls: 2, estimated: true })]);
    const cells = [...root.querySelectorAll("[data-testid=usage-models] tbody td")].map((td) => td.textContent);
    expect(cells[2]).toContain("(2 estimated)");
    expect(cells[3]?.startsWith("≈")).toBe(true);
    expect(cells[4]?.startsWith("≈")).toBe(true);
    expect(root.querySelector("[data-testid=usage-estimated-note]")).not.toBeNull();
  });

  it("shows reported figures plainly", async () => {
    const root = await mount([model({})]);
    const cells = [...root.querySelectorAll("[data-testid=usage-models] tbody td")].map((td) => td.textContent);
    expect(cells.join(" ")).not.toContain("≈");
    expect(cells.join(" ")).not.toContain("estimated");
    expect(root.querySelector("[data-testid=usage-estimated-note]")).toBeNull();
  });
});
