/**
 * Citations of documentation passages. `retrieve_documentation` results are Markdown with one
 * section per passage:
 *
 *     ### <title>            (or "### 2. <title>": passages may be numbered)
 *     Library: <library id> · Source: <url>
 *     <text>
 *
 * Live tool results also list them in `citations`; for reloaded conversations they are parsed here
 * from the stored full text.
 */

import type { Citation } from "../api/types";

const HEADING = /^#{3}\s+(?:\d+\.\s+)?(.+?)\s*#*\s*$/;
const SOURCE = /^Library:\s*(.*?)\s*[·•|]\s*Source:\s*(\S+)\s*$/i;

/** The passages' citations, in order, without duplicates. */
export function parseCitations(text: string): Citation[] {
  const lines = text.split(/\r\n|\r|\n/);
  const found: Citation[] = [];
  for (let i = 0; i < lines.length - 1; i++) {
    const heading = HEADING.exec(lines[i]);
    if (!heading) continue;
    const source = SOURCE.exec(lines[i + 1].trim());
    if (!source) continue;
    found.push({ title: heading[1], library: source[1], url: source[2] });
  }
  return dedupeCitations(found);
}

/** Citations without repeats (same source and title: several passages may share a page). */
export function dedupeCitations(citations: Citation[]): Citation[] {
  const seen = new Set<string>();
  return citations.filter((c) => {
    const key = `${c.url}\u0000${c.title}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The URL if it is safe to link to (http/https only), else null. */
export function safeLinkUrl(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** A short label for a source URL: its host and the end of its path. */
export function sourceLabel(url: string): string {
  try {
    const parsed = new URL(url);
    const path = parsed.pathname.replace(/\/$/, "");
    const tail = path.split("/").filter(Boolean).slice(-2).join("/");
    return tail ? `${parsed.host}/…/${tail}` : parsed.host;
  } catch {
    return url;
  }
}

/** A piece of a citation title: plain text, or the content of a `code span`. */
export interface TitlePart {
  code: boolean;
  text: string;
}

/**
 * A passage title split into plain text and inline code, by CommonMark's code-span rule (a run of
 * N backticks up to the next run of exactly N; an unmatched run is literal text). Nothing else in
 * the title is interpreted: `**`, `<b>` or `[x](y)` stay as the characters they are.
 */
export function titleParts(title: string): TitlePart[] {
  const parts: TitlePart[] = [];
  const push = (code: boolean, text: string) => {
    if (text === "") return;
    const last = parts[parts.length - 1];
    if (last && !last.code && !code) last.text += text;
    else parts.push({ code, text });
  };
  let i = 0;
  while (i < title.length) {
    const open = title.indexOf("`", i);
    if (open < 0) break;
    push(false, title.slice(i, open));
    let run = open;
    while (title[run] === "`") run++;
    const width = run - open;
    const close = closingRun(title, run, width);
    if (close < 0) {
      push(false, title.slice(open, run));
      i = run;
      continue;
    }
    let code = title.slice(run, close).replace(/\r\n|\r|\n/g, " ");
    if (code.length >= 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim() !== "") code = code.slice(1, -1);
    parts.push({ code: true, text: code });
    i = close + width;
  }
  push(false, title.slice(i));
  return parts;
}

/** Where the next run of exactly `width` backticks starts at or after `from`, or -1. */
function closingRun(text: string, from: number, width: number): number {
  let i = text.indexOf("`", from);
  while (i >= 0) {
    let end = i;
    while (text[end] === "`") end++;
    if (end - i === width) return i;
    i = text.indexOf("`", end);
  }
  return -1;
}
