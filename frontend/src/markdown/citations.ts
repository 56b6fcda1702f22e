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
