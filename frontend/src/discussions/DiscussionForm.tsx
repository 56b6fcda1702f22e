import { useState } from "preact/hooks";
import { formProblem, type DiscussionForm as Form, type Limits } from "./state";
import type { ModelInfo } from "./types";

interface Props {
  models: ModelInfo[];
  limits: Limits;
  turnCredits: number;
  busy: boolean;
  onStart: (form: Form) => void;
}

const ROLES = ["asks questions and pushes for specifics", "answers and proposes solutions", "reviews and criticises", "summarises"];

function participant(models: ModelInfo[], index: number) {
  return { model: models[0]?.name ?? "", role: ROLES[index % ROLES.length], name: "" };
}

/** The form that starts a discussion: goal, participants (model, role, name), turns, tools, help. */
export function DiscussionForm({ models, limits, turnCredits, busy, onStart }: Props) {
  const [form, setForm] = useState<Form>(() => ({
    goal: "",
    turns: Math.min(4, limits.max_turns),
    participants: [participant(models, 0), participant(models, 1)],
    tools: true,
    collaboration: false,
  }));
  const [problem, setProblem] = useState<{ field: string; message: string } | null>(null);

  function change(update: Partial<Form>) {
    setForm((now) => ({ ...now, ...update }));
    setProblem(null);
  }

  function changeParticipant(index: number, update: Partial<Form["participants"][number]>) {
    change({ participants: form.participants.map((p, i) => (i === index ? { ...p, ...update } : p)) });
  }

  function submit(event: Event) {
    event.preventDefault();
    const found = formProblem(form, limits);
    setProblem(found);
    if (!found) onStart(form);
  }

  const invalid = (field: string) => (problem?.field === field ? true : undefined);
  return (
    <form class="discussion-form" onSubmit={submit} aria-label="New discussion" noValidate>
      <div class="disc-field">
        <label for="discussion-goal">Goal</label>
        <textarea
          id="discussion-goal"
          rows={3}
          maxLength={4000}
          value={form.goal}
          aria-invalid={invalid("goal")}
          placeholder="What should the models work out together?"
          onInput={(e) => change({ goal: (e.target as HTMLTextAreaElement).value })}
        />
      </div>
      <fieldset class="disc-participants" aria-invalid={invalid("participants")}>
        <legend>Participants</legend>
        {form.participants.map((p, index) => (
          <div class="disc-participant" key={index} data-testid={`participant-${index}`}>
            <div class="disc-field">
              <label for={`participant-${index}-model`}>Model {index + 1}</label>
              <select
                id={`participant-${index}-model`}
                value={p.model}
                aria-invalid={invalid(`participant-${index}`)}
                onChange={(e) => changeParticipant(index, { model: (e.target as HTMLSelectElement).value })}
              >
                {models.map((m) => (
                  <option key={m.name} value={m.name}>
                    {m.name}
                    {m.roles.length ? ` (${m.roles.join(", ")})` : ""}
                  </option>
                ))}
              </select>
            </div>
            <div class="disc-field grow">
              <label for={`participant-${index}-role`}>Role</label>
              <input
                id={`participant-${index}-role`}
                value={p.role}
                maxLength={200}
                aria-invalid={invalid(`participant-${index}`)}
                onInput={(e) => changeParticipant(index, { role: (e.target as HTMLInputElement).value })}
              />
            </div>
            <div class="disc-field">
              <label for={`participant-${index}-name`}>Name (optional)</label>
              <input
                id={`participant-${index}-name`}
                value={p.name}
                maxLength={60}
                placeholder={`Participant ${index + 1}`}
                onInput={(e) => changeParticipant(index, { name: (e.target as HTMLInputElement).value })}
              />
            </div>
            {form.participants.length > 2 && (
              <button
                type="button"
                class="btn btn-small btn-ghost disc-remove"
                aria-label={`Remove participant ${index + 1}`}
                onClick={() => change({ participants: form.participants.filter((_, i) => i !== index) })}
              >
                Remove
              </button>
            )}
          </div>
        ))}
        {form.participants.length < limits.max_participants && (
          <button
            type="button"
            class="btn btn-small"
            onClick={() => change({ participants: [...form.participants, participant(models, form.participants.length)] })}
          >
            Add participant
          </button>
        )}
      </fieldset>
      <div class="disc-options">
        <div class="disc-field">
          <label for="discussion-turns">Turns</label>
          <input
            id="discussion-turns"
            type="number"
            min={1}
            max={limits.max_turns}
            value={form.turns}
            aria-invalid={invalid("turns")}
            onInput={(e) => change({ turns: Number((e.target as HTMLInputElement).value) })}
          />
        </div>
        <label class="disc-check">
          <input type="checkbox" checked={form.tools} onChange={(e) => change({ tools: (e.target as HTMLInputElement).checked })} />
          Participants may use tools
        </label>
        <label class="disc-check">
          <input
            type="checkbox"
            checked={form.collaboration}
            onChange={(e) => change({ collaboration: (e.target as HTMLInputElement).checked })}
          />
          A stuck participant asks a helper model
        </label>
      </div>
      {problem && (
        <p class="form-error" role="alert">
          {problem.message}
        </p>
      )}
      <div class="disc-actions">
        <button type="submit" class="btn btn-primary" disabled={busy || models.length === 0}>
          Start discussion
        </button>
        <span class="muted small">
          {form.turns} turns × {turnCredits} credits, plus tool calls
        </span>
      </div>
    </form>
  );
}
