/**
 * Markdown → safe HTML for everything the model, tools and documents say (all untrusted).
 *
 * markdown-it with `html: false` escapes raw HTML and its `validateLink` rejects `javascript:`,
 * `vbscript:`, `file:` and non-image `data:` URLs; DOMPurify then enforces a tag/attribute allowlist
 * on the result (defence in depth), and its hooks
 *  - keep links only for http(s)/mailto, opening in a new tab without referrer or opener;
 *  - never let an image load by itself: only inline raster `data:image/…` images render; any other
 *    image becomes a placeholder (a rendered remote image URL could leak conversation data).
 * After sanitising, code blocks get a copy button and `[q3-t1]` item references become buttons
 * that jump to the item. Sanitising happens in DOMPurify's inert document, so nothing loads
 * before the string reaches the page.
 */

import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import { highlight } from "./highlight";

const ALLOWED_TAGS = [
  "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
  "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody",
  "td", "tfoot", "th", "thead", "tr", "ul",
];
const ALLOWED_ATTR = ["href", "title", "alt", "src", "class", "start", "colspan", "rowspan"];
const SAFE_IMAGE = /^data:image\/(?:png|gif|jpe?g|webp);base64,[a-z0-9+/=\s]+$/i;
const SAFE_LINK = /^(?:https?:|mailto:)/i;
const ITEM_REF = /\[(?:ID:\s*)?(q\d+(?:-(?:t\d+|r))?(?:-sum)?(?:\s*,\s*(?:ID:\s*)?q\d+(?:-(?:t\d+|r))?(?:-sum)?)*)\]/g;

// `breaks`: a line break is a line break. Tool output (git log, a program's output) and answers
// quoting it are lines, not paragraphs to reflow.
const md = new MarkdownIt({
  html: false,
  linkify: true,
  typographer: false,
  breaks: true,
  highlight: (code, lang) => highlight(code, lang),
});

type Purifier = ReturnType<typeof DOMPurify>;
let purifier: Purifier | null = null;

function getPurifier(): Purifier {
  if (purifier) return purifier;
  const instance = DOMPurify(window);
  instance.addHook("afterSanitizeAttributes", (node) => {
    const element = node as Element;
    if (element.tagName === "A") {
      const href = element.getAttribute("href") ?? "";
      if (!SAFE_LINK.test(href.trim())) {
        element.removeAttribute("href");
        element.classList.add("unsafe-link");
      } else {
        element.setAttribute("target", "_blank");
        element.setAttribute("rel", "noopener noreferrer nofollow");
      }
    } else if (element.tagName === "IMG") {
      const src = (element.getAttribute("src") ?? "").trim();
      if (!SAFE_IMAGE.test(src)) {
        element.removeAttribute("src");
        element.setAttribute("data-blocked-src", src);
      }
    }
  });
  purifier = instance;
  return instance;
}

/** Sanitise an HTML string (as produced by markdown-it) into an inert <body> element. */
export function sanitizeToBody(html: string): HTMLElement {
  return getPurifier().sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    FORBID_TAGS: ["style", "iframe", "form", "script", "svg", "math"],
    FORBID_ATTR: ["style", "srcset", "id", "name"],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|data:image\/(?:png|gif|jpe?g|webp);)/i,
    RETURN_DOM: true,
    WHOLE_DOCUMENT: false,
  }) as HTMLElement;
}

export interface RenderOptions {
  /** Turn `[q3-t1]` references into buttons (answers: yes; quoted tool output: yes). */
  itemRefs?: boolean;
}

/** Markdown → sanitised HTML string, safe for innerHTML under the app's CSP. */
export function renderMarkdown(source: string, options: RenderOptions = {}): string {
  const body = sanitizeToBody(md.render(source));
  decorate(body, options);
  return body.innerHTML;
}

function decorate(body: HTMLElement, options: RenderOptions): void {
  const doc = body.ownerDocument;
  for (const img of Array.from(body.querySelectorAll("img[data-blocked-src]"))) {
    img.replaceWith(blockedImage(doc, img.getAttribute("alt") ?? "", img.getAttribute("data-blocked-src") ?? ""));
  }
  for (const img of Array.from(body.querySelectorAll("img"))) img.setAttribute("loading", "lazy");
  for (const pre of Array.from(body.querySelectorAll("pre"))) wrapCode(doc, pre);
  for (const table of Array.from(body.querySelectorAll("table"))) {
    const wrap = doc.createElement("div");
    wrap.className = "table-wrap";
    wrap.tabIndex = 0; // it may scroll sideways: reachable with the keyboard
    table.replaceWith(wrap);
    wrap.appendChild(table);
  }
  if (options.itemRefs !== false) linkItemRefs(doc, body);
}

function blockedImage(doc: Document, alt: string, src: string): HTMLElement {
  const box = doc.createElement("span");
  box.className = "blocked-image";
  const label = doc.createElement("span");
  label.textContent = `Image not loaded${alt ? `: ${alt}` : ""}`;
  box.appendChild(label);
  if (/^https?:/i.test(src)) {
    const link = doc.createElement("a");
    link.href = src;
    link.textContent = "open";
    link.title = src;
    link.target = "_blank";
    link.rel = "noopener noreferrer nofollow";
    box.append(" ", link);
  }
  return box;
}

function wrapCode(doc: Document, pre: Element): void {
  const code = pre.querySelector("code");
  const language = /(?:^|\s)language-([\w+#.-]+)/.exec(code?.className ?? "")?.[1] ?? "";
  const block = doc.createElement("div");
  block.className = "code-block";
  const bar = doc.createElement("div");
  bar.className = "code-bar";
  const lang = doc.createElement("span");
  lang.className = "code-lang";
  lang.textContent = language || "text";
  const copy = doc.createElement("button");
  copy.type = "button";
  copy.className = "copy-code";
  copy.setAttribute("data-action", "copy-code");
  copy.setAttribute("aria-label", `Copy ${language || "code"} to the clipboard`);
  copy.textContent = "Copy";
  bar.append(lang, copy);
  // A long line scrolls sideways: the block must be reachable with the keyboard to scroll it.
  (pre as HTMLElement).tabIndex = 0;
  pre.setAttribute("aria-label", `${language || "text"} code`);
  pre.replaceWith(block);
  block.append(bar, pre);
}

function linkItemRefs(doc: Document, body: HTMLElement): void {
  const walker = doc.createTreeWalker(body, 4 /* NodeFilter.SHOW_TEXT */);
  const targets: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent?.closest("a, code, pre, button")) continue;
    ITEM_REF.lastIndex = 0;
    if (ITEM_REF.test(node.nodeValue ?? "")) targets.push(node as Text);
  }
  for (const text of targets) {
    const value = text.nodeValue ?? "";
    const fragment = doc.createDocumentFragment();
    let last = 0;
    ITEM_REF.lastIndex = 0;
    for (let match = ITEM_REF.exec(value); match; match = ITEM_REF.exec(value)) {
      fragment.append(value.slice(last, match.index));
      const ids = match[1].split(",").map((id) => id.replace(/^\s*(?:ID:\s*)?/, "").trim());
      ids.forEach((id, index) => {
        if (index > 0) fragment.append(" ");
        const button = doc.createElement("button");
        button.type = "button";
        button.className = "item-ref";
        button.setAttribute("data-item-ref", id);
        button.setAttribute("aria-label", `Go to item ${id}`);
        button.textContent = id;
        fragment.append(button);
      });
      last = match.index + match[0].length;
    }
    fragment.append(value.slice(last));
    text.replaceWith(fragment);
  }
}
