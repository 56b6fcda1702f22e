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

describe("Citations titles", () => {
  it("render inline code as <code> and everything else as plain text", () => {
    const root = mount([
      { title: "Module `asyncio.tasks` > Task.cancel", url: "https://docs.python.org/3/library/asyncio-task.html", library: "/python" },
      { title: "**Bold** <b>tag</b> `<i>x</i>`", url: "docs/local.md", library: "/local" },
    ]);
    const [first, second] = Array.from(root.querySelectorAll(".citation-title"));
    expect(first.textContent).toBe("Module asyncio.tasks > Task.cancel");
    expect(Array.from(first.querySelectorAll("code")).map((c) => c.textContent)).toEqual(["asyncio.tasks"]);
    expect(first.innerHTML).not.toContain("`");
    expect(second.textContent).toBe("**Bold** <b>tag</b> <i>x</i>");
    expect(second.querySelector("b")).toBeNull();
    expect(second.querySelector("i")).toBeNull();
    expect(second.querySelector("code")?.textContent).toBe("<i>x</i>");
  });

  it("keep the icon beside a title that wraps (icon and text in separate grid cells)", () => {
    const root = mount([{ title: "A very long title ".repeat(10), url: "https://example.org/a", library: "" }]);
    const item = root.querySelector("li")!;
    expect(Array.from(item.children).map((el) => el.getAttribute("class"))).toEqual(["icon ", "citation-body"]);
  });
});
