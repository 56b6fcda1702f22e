import type { Citation } from "../api/types";
import { safeLinkUrl, sourceLabel } from "../markdown/citations";
import { IconBook } from "./icons";

/** Documentation passages as links to their sources (http/https only; others shown as text). */
export function Citations({ citations, title = "Sources" }: { citations: Citation[]; title?: string }) {
  return (
    <div class="citations">
      <h4>{title}</h4>
      <ol>
        {citations.map((c, index) => {
          const href = safeLinkUrl(c.url);
          const label = c.title || sourceLabel(c.url);
          return (
            <li key={`${c.url}-${index}`}>
              <IconBook />
              {href ? (
                <a href={href} target="_blank" rel="noopener noreferrer nofollow" title={c.url}>
                  {label}
                </a>
              ) : (
                <span title={c.url}>{label}</span>
              )}
              <span class="citation-meta">
                {c.library && <span class="citation-lib">{c.library}</span>}
                {c.url && <span class="citation-host">{href ? sourceLabel(c.url) : c.url}</span>}
              </span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
