import { useState } from "preact/hooks";
import type { Strategy } from "../api/types";
import { ConnectModelDialog } from "./ConnectModelDialog";
import { ToolsDialog } from "./ToolsDialog";

/** Where the user types, on a server without a real model: what answers, and how to change that. */
export function OfflineNote() {
  const [open, setOpen] = useState(false);
  return (
    <div class="composer-about" data-testid="offline-note">
      <p>
        Answers come from the built-in offline model, which quotes documentation.{" "}
        <button type="button" class="link-button" onClick={() => setOpen(true)}>
          How to connect a real model
        </button>
      </p>
      <ConnectModelDialog open={open} onClose={() => setOpen(false)} />
    </div>
  );
}

export const STRATEGIES: { value: Strategy; label: string; help: string }[] = [
  { value: "direct", label: "Direct", help: "the model answers, calling tools as it needs" },
  { value: "boost", label: "Boost", help: "a planner model guides it which tools to call" },
  { value: "collaborate", label: "Collaborate", help: "a helper model steps in when it is stuck" },
];

interface Props {
  strategy: Strategy;
  onStrategy: (strategy: Strategy) => void;
  /** While an answer streams, the strategy cannot change. */
  disabled?: boolean;
}

/** Beside the message box: how this conversation is answered, and the tools it can use. */
export function ComposerControls({ strategy, onStrategy, disabled }: Props) {
  const [tools, setTools] = useState(false);
  const help = STRATEGIES.find((s) => s.value === strategy)?.help ?? "";
  return (
    <div class="composer-controls">
      <span class="strategy-picker" title={help}>
        <label for="strategy-select">Strategy</label>
        <select
          id="strategy-select"
          value={strategy}
          disabled={disabled}
          aria-describedby="strategy-help"
          onChange={(event) => onStrategy((event.target as HTMLSelectElement).value as Strategy)}
        >
          {STRATEGIES.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      </span>
      <span id="strategy-help" class="sr-only">
        How this conversation's questions are answered: {help}.
      </span>
      <button type="button" class="link-button" onClick={() => setTools(true)}>
        Tools
      </button>
      <ToolsDialog open={tools} onClose={() => setTools(false)} />
    </div>
  );
}
