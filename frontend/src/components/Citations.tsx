import type { Citation } from "../api/types";
import { safeLinkUrl, sourceLabel, titleParts } from "../markdown/citations";
import { IconBook } from "./icons";

/** A passage title as plain text with inline code only (never HTML or other Markdown). */
export function CitationTitle({ title }: { title: string }) {
  return (
    <>
      {titleParts(title).map((part, index) => (part.code ? <code key={index}>{part.text}</code> : part.text))}
    </>
  );
}

/** Documentation passages as links to their sources (http/https only; others shown as text). */
export function Citations({ citations, title = "Sources" }: { citations: Citation[]; title?: string }) {
  return (
    <div class="citations">
      <h4>{title}</h4>
      <ol>
        {citations.map((c, index) => {
          const href = safeLinkUrl(c.url);
          const label = c.title ? <CitationTitle title={c.title} /> : sourceLabel(c.url);
          return (
            <li key={`${c.url}-${index}`}>
              <IconBook />
              <span class="citation-body">
                {href ? (
                  <a class="citation-title" href={href} target="_blank" rel="noopener noreferrer nofollow" title={c.url}>
                    {label}
                  </a>
                ) : (
                  <span class="citation-title" title={c.url}>
                    {label}
                  </span>
                )}
                <span class="citation-meta">
                  {c.library && <span class="citation-lib">{c.library}</span>}
                  {c.url && <span class="citation-host">{href ? sourceLabel(c.url) : c.url}</span>}
                </span>
              </span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
