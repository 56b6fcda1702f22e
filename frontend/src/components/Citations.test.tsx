// @vitest-environment jsdom
import { render } from "preact";
import { describe, expect, it } from "vitest";
import { Citations } from "./Citations";

function mount(citations: { title: string; url: string; library: string }[]): HTMLElement {
  const root = document.createElement("div");
  render(<Citations citations={citations} />, root);
  return root;
}

describe("Citations", () => {
  it("links http(s) sources in a new tab without referrer or opener", () => {
    const root = mount([{ title: "Task.cancel()", url: "https://docs.python.org/3/library/asyncio-task.html", library: "/python/asyncio" }]);
    const link = root.querySelector("a")!;
    expect(link.textContent).toBe("Task.cancel()");
    expect(link.getAttribute("href")).toBe("https://docs.python.org/3/library/asyncio-task.html");
    expect(link.getAttribute("rel")).toBe("noopener noreferrer nofollow");
    expect(link.getAttribute("target")).toBe("_blank");
    expect(root.textContent).toContain("/python/asyncio");
  });

  it("shows other sources (local paths, javascript:, data:) as text, never as links", () => {
    const root = mount([
      { title: "Local guide", url: "docs/guide.md", library: "/local/docs" },
      { title: "Evil", url: "javascript:alert(1)", library: "x" },
      { title: "Data", url: "data:text/html,<script>alert(1)</script>", library: "x" },
    ]);
    expect(root.querySelectorAll("a")).toHaveLength(0);
    expect(root.textContent).toContain("docs/guide.md");
    expect(root.querySelector("script")).toBeNull();
  });
});
