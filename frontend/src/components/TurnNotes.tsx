import type { Escalation, PlanStep } from "../chat/state";
import { credits as creditsText } from "../lib/format";
import { IconAlert, IconChevron } from "./icons";
import { Markdown } from "./Markdown";

/** Boost mode: the planner's ANALYSIS and GUIDANCE for one loop, collapsed by default. */
export function PlanBlock({ plan }: { plan: PlanStep }) {
  return (
    <details class="plan-block" data-testid="plan">
      <summary>
        <span class="plan-title">Plan (loop {plan.loop})</span>
        {plan.model && <span class="plan-model">{plan.model}</span>}
        <IconChevron />
      </summary>
      <div class="plan-body">
        <h4>Analysis</h4>
        {plan.analysis ? <Markdown source={plan.analysis} class="plan-text" /> : <p class="muted small">(none)</p>}
        <h4>Guidance</h4>
        {plan.guidance ? <Markdown source={plan.guidance} class="plan-text" /> : <p class="muted small">(none)</p>}
      </div>
    </details>
  );
}

/** Collaboration: one line saying which model was asked for help, and why. */
export function EscalationNote({ escalation }: { escalation: Escalation }) {
  const who = escalation.toModel || "a helper model";
  return (
    <p class="turn-note escalation" data-testid="escalation">
      <span>
        Asked <span class="note-model">{who}</span> for help{escalation.reason ? `: ${escalation.reason}` : ""}
      </span>
    </p>
  );
}

/** Under an answer whose question reached its credit ceiling (some lookups were not run). */
export function CreditLimitNote({ limit }: { limit: number | null }) {
  return (
    <p class="turn-note credit-limit" data-testid="credit-limit">
      <IconAlert />
      <span>
        {limit !== null
          ? `This question reached its limit of ${creditsText(limit)}; some lookups were skipped.`
          : "This question reached its credit limit; some lookups were skipped."}
      </span>
    </p>
  );
}
