import { EscalationNote } from "../components/TurnNotes";
import { Markdown } from "../components/Markdown";
import { credits as creditsText, inputPreview } from "../lib/format";
import { outcome, type DiscussionView as View, type SpokenTurn, type ToolStep } from "./state";

/** A discussion: its goal, who takes part, and each turn as it is spoken. */
export function DiscussionView({ view }: { view: View }) {
  const live = view.status === "starting" || view.status === "running";
  return (
    <section class="discussion" aria-label="Discussion" data-status={view.status}>
      <header class="discussion-head">
        <h2 class="discussion-goal">{view.goal}</h2>
        <ul class="discussion-cast" aria-label="Participants">
          {view.participants.map((p) => (
            <li key={p.index} class={`speaker-${p.index % 4}`}>
              <strong>{p.name}</strong> <span class="muted">({p.role})</span> <span class="badge badge-muted">{p.model}</span>
            </li>
          ))}
        </ul>
      </header>
      <ol class="discussion-turns">
        {view.spoken.map((spoken) => (
          <SpokenTurnView key={spoken.turn} spoken={spoken} of={view.turns} />
        ))}
      </ol>
      <p class={`discussion-outcome ${view.status}`} role="status" aria-live="polite" data-testid="discussion-outcome">
        {live && <span class="spinner" aria-hidden="true" />} {outcome(view)}
      </p>
      {view.error && (
        <p class="notice notice-error" role="alert">
          {view.error.message}
        </p>
      )}
    </section>
  );
}

function SpokenTurnView({ spoken, of }: { spoken: SpokenTurn; of: number }) {
  return (
    <li class={`spoken speaker-${spoken.speaker % 4}`} data-turn={spoken.turn} data-status={spoken.status}>
      <div class="spoken-head">
        <span class="spoken-turn">
          Turn {spoken.turn} of {of}
        </span>
        <strong>{spoken.name}</strong>
        <span class="muted">{spoken.role}</span>
        <span class="badge badge-muted">{spoken.model}</span>
        {spoken.credits !== null && <span class="spoken-credits muted small">{creditsText(spoken.credits)}</span>}
      </div>
      {spoken.tools.length > 0 && (
        <ul class="spoken-tools" aria-label={`Tool calls of turn ${spoken.turn}`}>
          {spoken.tools.map((tool) => (
            <ToolLine key={tool.id} tool={tool} />
          ))}
        </ul>
      )}
      {spoken.escalations.map((escalation) => (
        <EscalationNote key={`${escalation.attempt}-${escalation.afterTools}`} escalation={escalation} />
      ))}
      {spoken.text ? (
        <Markdown source={spoken.text} class="spoken-text" streaming={spoken.status === "speaking"} />
      ) : (
        spoken.status === "speaking" && <p class="muted small">Thinking…</p>
      )}
    </li>
  );
}

function ToolLine({ tool }: { tool: ToolStep }) {
  const state =
    tool.status === "running" ? tool.progress || "running…" : tool.status === "error" ? `error (${tool.resultStatus ?? "failed"})` : "done";
  return (
    <li class={`tool-line ${tool.status}`} data-item-id={tool.itemId}>
      <code>{tool.name}</code> <span class="muted small">{inputPreview(tool.input)}</span> <span class="small">{state}</span>
      {tool.credits !== null && tool.credits > 0 && <span class="muted small"> · {creditsText(tool.credits)}</span>}
    </li>
  );
}
