import { useState } from "preact/hooks";
import { isActive, type Escalation, type PlanStep, type ToolCard as Card, type Turn as TurnState, type TurnError } from "../chat/state";
import { useAccount } from "../lib/account";
import { queryPrice } from "../lib/credits";
import { copyText, credits as creditsText } from "../lib/format";
import { dedupeCitations } from "../markdown/citations";
import { Citations } from "./Citations";
import { IconAlert, IconCheck, IconCopy, IconRetry, Logo } from "./icons";
import { Markdown } from "./Markdown";
import { OutOfCreditsHelp } from "./OutOfCredits";
import { ToolCard } from "./ToolCard";
import { CreditLimitNote, EscalationNote, PlanBlock } from "./TurnNotes";

type Note = { kind: "plan"; plan: PlanStep; index: number } | { kind: "escalation"; escalation: Escalation; index: number };
type Step = { kind: "tool"; card: Card } | Note;

/** Tool cards, plans and escalations in the order they happened (a note sits before the card
 * that came after it). */
function steps(turn: TurnState): Step[] {
  const notes: (Note & { at: number })[] = [
    ...turn.plans.map((plan, index) => ({ kind: "plan" as const, plan, index, at: plan.afterTools })),
    ...turn.escalations.map((escalation, index) => ({ kind: "escalation" as const, escalation, index, at: escalation.afterTools })),
  ];
  const out: Step[] = [];
  turn.tools.forEach((card, position) => {
    out.push(...notes.filter((note) => note.at === position));
    out.push({ kind: "tool", card });
  });
  out.push(...notes.filter((note) => note.at >= turn.tools.length));
  return out;
}

interface Props {
  turn: TurnState;
  conversationId: string | null;
  expanded: Set<string>;
  highlighted: string | null;
  onToggleTool: (itemId: string) => void;
  onRetry: (localId: string) => void;
  onDismiss: (localId: string) => void;
}

/** One question and its answer: tool cards, the streamed Markdown, sources, cost, errors. */
export function Turn({ turn, conversationId, expanded, highlighted, onToggleTool, onRetry, onDismiss }: Props) {
  const active = isActive(turn);
  const responseId = turn.messageId ?? (turn.queryId ? `${turn.queryId}-r` : null);
  const citations = dedupeCitations(turn.tools.flatMap((t) => t.citations));
  const label = turn.queryId ? `Message ${turn.queryId}` : "New message";
  return (
    <article class={`turn ${active ? "active" : ""}`} aria-label={label} data-status={turn.status}>
      <div class={`user-msg ${highlighted !== null && highlighted === turn.queryId ? "flash" : ""}`} id={turn.queryId ? `item-${turn.queryId}` : undefined}>
        <div class="bubble">
          <p class="user-text">{turn.query}</p>
        </div>
        {turn.queryId && <span class="item-id">{turn.queryId}</span>}
      </div>
      <div class="assistant">
        <div class="assistant-avatar" aria-hidden="true">
          <Logo size={26} />
        </div>
        <div class="assistant-body">
          {(turn.tools.length > 0 || turn.plans.length > 0 || turn.escalations.length > 0) && (
            <div class="tools" aria-label="Tool calls">
              {steps(turn).map((step) =>
                step.kind === "tool" ? (
                  <ToolCard
                    key={step.card.callId}
                    card={step.card}
                    conversationId={conversationId}
                    expanded={expanded.has(step.card.itemId)}
                    highlighted={highlighted === step.card.itemId}
                    onToggle={onToggleTool}
                  />
                ) : step.kind === "plan" ? (
                  <PlanBlock key={`plan-${step.index}`} plan={step.plan} />
                ) : (
                  <EscalationNote key={`escalation-${step.index}`} escalation={step.escalation} />
                ),
              )}
            </div>
          )}
          {active && turn.text === "" && (
            <div class="thinking" role="status">
              <span class="dot" />
              <span class="dot" />
              <span class="dot" />
              <span class="sr-only">{turn.tools.some((t) => t.status === "running") ? "Running tools…" : "Thinking…"}</span>
            </div>
          )}
          {turn.text !== "" && (
            <div
              class={`answer ${highlighted !== null && highlighted === responseId ? "flash" : ""}`}
              id={responseId ? `item-${responseId}` : undefined}
              data-testid="answer"
              aria-busy={active ? "true" : undefined}
            >
              <Markdown source={turn.text} class="answer-text" streaming={turn.status === "streaming"} />
            </div>
          )}
          {turn.creditLimitReached && !active && <CreditLimitNote limit={turn.creditLimit} />}
          {citations.length > 0 && !active && <Citations citations={citations} />}
          {turn.error && <ErrorNotice error={turn.error} onRetry={() => onRetry(turn.localId)} onDismiss={() => onDismiss(turn.localId)} />}
          {!active && turn.messageId && <AnswerFooter turn={turn} />}
        </div>
      </div>
    </article>
  );
}

/** The model said it cannot answer (`declined`, or a provider's `refusal`): the answer was free. */
function declined(turn: TurnState): boolean {
  return turn.stopReason === "declined" || turn.stopReason === "refusal";
}

function AnswerFooter({ turn }: { turn: TurnState }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="answer-footer">
      <span class="item-id" title="Item ID of this answer">
        {turn.messageId}
      </span>
      {turn.credits !== null && (
        <span class="answer-cost" data-testid="answer-cost" data-credits={turn.credits}>
          {creditsText(turn.credits)}
        </span>
      )}
      {turn.status === "stopped" && <span class="answer-flag">Stopped</span>}
      {declined(turn) && (
        <span class="answer-flag" data-testid="not-charged">
          Not charged: the model could not answer this
        </span>
      )}
      {turn.model && <span class="answer-model">{turn.model}</span>}
      <button
        type="button"
        class="btn-icon btn-ghost"
        aria-label={copied ? "Copied" : "Copy the answer as Markdown"}
        title="Copy"
        onClick={async () => {
          if (await copyText(turn.text)) {
            setCopied(true);
            window.setTimeout(() => setCopied(false), 1500);
          }
        }}
      >
        {copied ? <IconCheck /> : <IconCopy />}
      </button>
    </div>
  );
}

const TITLES: Record<string, string> = {
  insufficient_credits: "You're out of credits",
  conversation_busy: "This conversation is busy",
  message_too_large: "Your message is too long",
  conversation_not_found: "Conversation not found",
  unauthorized: "You were signed out",
};

function errorTitle(error: TurnError): string {
  if (error.status === 402) return TITLES.insufficient_credits;
  if (TITLES[error.code]) return TITLES[error.code];
  if (error.status === 409) return TITLES.conversation_busy;
  if (error.status === 413) return TITLES.message_too_large;
  if (error.kind === "network") return "Connection lost";
  if (error.kind === "incomplete") return "The answer is incomplete";
  if (error.kind === "stream") return "The answer stopped early";
  return "Something went wrong";
}

function ErrorNotice({ error, onRetry, onDismiss }: { error: TurnError; onRetry: () => void; onDismiss: () => void }) {
  const { credits: now, config } = useAccount();
  const credits = error.status === 402;
  // Out of credits, "Try again" would fail at once: it is offered when the balance covers a question again.
  const retry = !credits || (now !== null && now.balance >= (error.needed ?? queryPrice(now)));
  return (
    <div class={`turn-error ${credits ? "out-of-credits" : ""}`} role="alert" data-testid={credits ? "out-of-credits" : "turn-error"}>
      <div class="turn-error-head">
        <IconAlert />
        <strong>{credits && retry ? "Credits are back" : errorTitle(error)}</strong>
      </div>
      {!credits && <p>{error.message}</p>}
      {credits &&
        (retry ? (
          <p>You have {creditsText(now?.balance ?? 0)} again: send this message now.</p>
        ) : (
          <OutOfCreditsHelp credits={now} payments={config?.payments_enabled ?? false} needed={error.needed} />
        ))}
      {error.refunded && <p class="muted small">You were not charged for this answer.</p>}
      <div class="turn-error-actions">
        {retry && (
          <button type="button" class="btn btn-small" onClick={onRetry}>
            <IconRetry /> {credits ? "Try again" : "Retry"}
          </button>
        )}
        {error.kind === "refused" && (
          <button type="button" class="btn btn-small btn-ghost" onClick={onDismiss}>
            Dismiss
          </button>
        )}
      </div>
    </div>
  );
}
