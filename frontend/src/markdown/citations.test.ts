import { describe, expect, it } from "vitest";
import { dedupeCitations, parseCitations, safeLinkUrl, sourceLabel, titleParts } from "./citations";

const RESULT = `### asyncio — Coroutines and Tasks
Library: /python/cpython · Source: https://docs.python.org/3/library/asyncio-task.html
Tasks are used to schedule coroutines concurrently.

### Task.cancel()
Library: /python/cpython · Source: https://docs.python.org/3/library/asyncio-task.html#asyncio.Task.cancel
Request the Task to be cancelled.

### Not a passage
No source line here.

### asyncio — Coroutines and Tasks
Library: /python/cpython · Source: https://docs.python.org/3/library/asyncio-task.html
(repeated)`;

describe("parseCitations", () => {
  it("reads one citation per passage section, in order, without duplicates", () => {
    expect(parseCitations(RESULT)).toEqual([
      { title: "asyncio — Coroutines and Tasks", library: "/python/cpython", url: "https://docs.python.org/3/library/asyncio-task.html" },
      { title: "Task.cancel()", library: "/python/cpython", url: "https://docs.python.org/3/library/asyncio-task.html#asyncio.Task.cancel" },
    ]);
  });

  it("reads numbered passage headings as the backend writes them", () => {
    const text = [
      "Documentation for **all local documentation** (`/local/*`) from local: 2 passages.",
      "",
      "### 1. Frobnicate guide > Using frobnicate.spin",
      "Library: /local/docs · Source: docs/frobnicate.md",
      "",
      "## Using frobnicate.spin",
      "",
      "### 2. Frobnicate guide",
      "Library: /local/docs · Source: docs/frobnicate.md",
      "# Frobnicate guide",
    ].join("\n");
    expect(parseCitations(text)).toEqual([
      { title: "Frobnicate guide > Using frobnicate.spin", library: "/local/docs", url: "docs/frobnicate.md" },
      { title: "Frobnicate guide", library: "/local/docs", url: "docs/frobnicate.md" },
    ]);
    expect(safeLinkUrl("docs/frobnicate.md")).toBeNull(); // a local path: shown, not linked
  });

  it("accepts CRLF line ends and returns nothing for text without passages", () => {
    expect(parseCitations(RESULT.replaceAll("\n", "\r\n"))).toHaveLength(2);
    expect(parseCitations("just an answer\n### Heading\nnot a source")).toEqual([]);
  });

  it("keeps a javascript: source as data but safeLinkUrl refuses to link it", () => {
    const [c] = parseCitations("### Evil\nLibrary: x · Source: javascript:alert(1)\ntext");
    expect(c.url).toBe("javascript:alert(1)");
    expect(safeLinkUrl(c.url)).toBeNull();
    expect(safeLinkUrl("data:text/html,hi")).toBeNull();
    expect(safeLinkUrl("https://ok.example/a")).toBe("https://ok.example/a");
  });
});

describe("helpers", () => {
  it("dedupes repeated passages but keeps different sections of one page", () => {
    const a = { title: "A", url: "https://a", library: "l" };
    const b = { ...a, title: "B" };
    expect(dedupeCitations([a, b, { ...a }])).toEqual([a, b]);
  });

  it("labels sources by host and path tail", () => {
    expect(sourceLabel("https://docs.python.org/3/library/asyncio-task.html")).toBe("docs.python.org/…/library/asyncio-task.html");
    expect(sourceLabel("https://example.com/")).toBe("example.com");
  });
});

describe("titleParts", () => {
  const code = (text: string) => ({ code: true, text });
  const plain = (text: string) => ({ code: false, text });

  it("turns backtick spans into code and keeps the rest as plain text", () => {
    expect(titleParts("Module `asyncio.tasks` > Task.cancel")).toEqual([plain("Module "), code("asyncio.tasks"), plain(" > Task.cancel")]);
    expect(titleParts("`a` and `b`")).toEqual([code("a"), plain(" and "), code("b")]);
    expect(titleParts("No code here")).toEqual([plain("No code here")]);
    expect(titleParts("")).toEqual([]);
  });

  it("follows CommonMark: longer fences may hold backticks, one padding space is stripped", () => {
    expect(titleParts("Use ``a`b`` here")).toEqual([plain("Use "), code("a`b"), plain(" here")]);
    expect(titleParts("`` `x` ``")).toEqual([code("`x`")]);
    expect(titleParts("` `")).toEqual([code(" ")]);
  });

  it("keeps unmatched backticks as text", () => {
    expect(titleParts("it`s a `tick")).toEqual([plain("it"), code("s a "), plain("tick")]);
    expect(titleParts("one ` only")).toEqual([plain("one ` only")]);
    expect(titleParts("``not closed` x")).toEqual([plain("``not closed` x")]);
  });

  it("interprets no other Markdown or HTML", () => {
    expect(titleParts("**bold** <b>x</b> [l](javascript:alert(1))")).toEqual([plain("**bold** <b>x</b> [l](javascript:alert(1))")]);
    expect(titleParts("`<script>`")).toEqual([code("<script>")]);
  });
});
