import { useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import { OVER_LIMIT, type ToolCard as Card } from "../chat/state";
import { credits as creditsText, duration, inputPreview } from "../lib/format";
import { dedupeCitations, parseCitations } from "../markdown/citations";
import { Citations } from "./Citations";
import { IconAlert, IconCheck, IconChevron, IconTool } from "./icons";
import { Markdown } from "./Markdown";

interface Props {
  card: Card;
  conversationId: string | null;
  expanded: boolean;
  highlighted: boolean;
  onToggle: (itemId: string) => void;
}

const STATUS_LABEL: Record<string, string> = {
  running: "Running…",
  done: "Done",
  error: "Error",
  cancelled: "Cancelled",
};

function statusLabel(card: Card): string {
  if (card.resultStatus === OVER_LIMIT) return "Skipped: credit limit";
  if (card.status === "error" && card.resultStatus && card.resultStatus !== "error") {
    return `Error: ${card.resultStatus.replace(/_/g, " ")}`;
  }
  return STATUS_LABEL[card.status] ?? card.status;
}

/** One tool call, live: name, input, running → done/error, duration and credits; expands to the
 * summary the model keeps and, on request, the full result fetched by its item ID. */
export function ToolCard({ card, conversationId, expanded, highlighted, onToggle }: Props) {
  const [fetched, setFull] = useState<string | null>(null);
  const full = fetched ?? card.fullText;
  // A short result is its own summary: "Show full text" would only repeat what is shown.
  const whole = card.summary !== null && card.fullText !== null && card.summary.trim() === card.fullText.trim();
  const [showFull, setShowFull] = useState(false);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const bodyId = `tool-body-${card.itemId}`;
  const preview = inputPreview(card.input);

  async function toggleFull() {
    if (showFull) {
      setShowFull(false);
      return;
    }
    setShowFull(true);
    if (full !== null || !conversationId) return;
    setLoading(true);
    setError(null);
    try {
      const item = await api.item(conversationId, card.itemId);
      setFull(item.content);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "The full text could not be loaded.");
      setShowFull(false);
    } finally {
      setLoading(false);
    }
  }

  const citations = dedupeCitations([...card.citations, ...(full ? parseCitations(full) : [])]);
  return (
    <section
      class={`tool-card status-${card.status} ${card.resultStatus === OVER_LIMIT ? "skipped" : ""} ${highlighted ? "flash" : ""} ${expanded ? "expanded" : ""}`}
      id={`item-${card.itemId}`}
      aria-label={`Tool call ${card.name}, ${card.itemId}`}
      data-item-id={card.itemId}
    >
      <button
        type="button"
        class="tool-head"
        aria-expanded={expanded}
        aria-controls={bodyId}
        onClick={() => onToggle(card.itemId)}
      >
        <span class={`tool-status-icon ${card.status}`} aria-hidden="true">
          {card.status === "running" ? <span class="spinner" /> : card.status === "done" ? <IconCheck /> : card.status === "error" ? <IconAlert /> : <IconTool />}
        </span>
        <span class="tool-title">
          <span class="tool-line">
            <span class="tool-name">{card.name}</span>
            {preview && <span class="tool-input">{preview}</span>}
          </span>
          {card.status === "running" && card.progress && (
            <span class="tool-progress" data-testid="tool-progress">
              {card.progress}
            </span>
          )}
        </span>
        <span class="tool-meta">
          <span class="item-id" title="Item ID">
            {card.itemId}
          </span>
          <span class={`tool-state ${card.status}`}>{statusLabel(card)}</span>
          {card.durationMs !== null && <span class="tool-duration">{duration(card.durationMs)}</span>}
          {card.credits !== null && <span class="tool-credits">{creditsText(card.credits)}</span>}
        </span>
        <IconChevron />
      </button>
      {expanded && (
        <div class="tool-body" id={bodyId}>
          <div class="tool-section">
            <h4>Input</h4>
            <pre class="tool-json">{JSON.stringify(card.input, null, 2)}</pre>
          </div>
          <div class="tool-section">
            {whole ? (
              <h4>
                Result <span class="item-id">{card.itemId}</span>
              </h4>
            ) : (
              <h4>
                Summary <span class="item-id">{card.summaryId}</span>
              </h4>
            )}
            {card.summary ? (
              <Markdown source={card.summary} class="tool-summary" />
            ) : (
              <p class="muted small">
                {card.status === "running"
                  ? "Waiting for the result…"
                  : card.summaryFailed
                    ? "No summary could be written; later questions see this result in full (shortened)."
                    : "The summary is not ready yet; the full text is below."}
              </p>
            )}
          </div>
          {!whole && (
          <div class="tool-section">
            <button
              type="button"
              class="btn btn-small"
              onClick={toggleFull}
              disabled={card.status === "running" || !conversationId}
              aria-expanded={showFull}
            >
              {showFull ? "Hide full text" : `Show full text (${card.itemId})`}
            </button>
            {loading && <span class="muted small loading-inline">Loading…</span>}
            {error && (
              <p class="form-error" role="alert">
                {error}
              </p>
            )}
            {showFull && full !== null && (
              <div class="tool-full" data-testid="tool-full">
                <h4>
                  Full result <span class="item-id">{card.itemId}</span>
                </h4>
                <Markdown source={full} class="tool-full-text" />
              </div>
            )}
          </div>
          )}
          {citations.length > 0 && <Citations citations={citations} />}
        </div>
      )}
    </section>
  );
}
