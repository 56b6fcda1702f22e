import { useMemo } from "preact/hooks";
import { renderMarkdown } from "../markdown/render";

/** Untrusted Markdown, rendered through the sanitiser (see markdown/render.ts). */
export function Markdown({ source, class: cls = "", streaming = false }: { source: string; class?: string; streaming?: boolean }) {
  const html = useMemo(() => renderMarkdown(source), [source]);
  return <div class={`markdown ${cls} ${streaming ? "streaming" : ""}`} dangerouslySetInnerHTML={{ __html: html }} />;
}
