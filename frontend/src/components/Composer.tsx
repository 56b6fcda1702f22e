import type { ComponentChildren, RefObject } from "preact";
import { useEffect, useLayoutEffect } from "preact/hooks";
import { IconSend, IconStop } from "./icons";

interface Props {
  value: string;
  busy: boolean;
  disabled?: boolean;
  onChange: (value: string) => void;
  onSend: () => void;
  onStop: () => void;
  notice?: ComponentChildren;
  /** A line above the box: what answers (the offline model says so here). */
  about?: ComponentChildren;
  /** Controls beside the keyboard hint (strategy, tools). */
  controls?: ComponentChildren;
  focusKey: string;
  area: RefObject<HTMLTextAreaElement>;
}

const MAX_HEIGHT = 240;

/** The message box: Enter sends, Shift+Enter adds a line; Stop (or Escape) while an answer streams. */
export function Composer({ value, busy, disabled, onChange, onSend, onStop, notice, about, controls, focusKey, area }: Props) {
  // Grow with the text (CSSOM from our own script is allowed by the CSP; style attributes are not).
  useLayoutEffect(() => {
    const el = area.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, MAX_HEIGHT)}px`;
  }, [value]);

  useEffect(() => {
    if (window.matchMedia("(pointer: fine)").matches) area.current?.focus();
  }, [focusKey]);

  function keyDown(event: KeyboardEvent) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    if (!busy && !disabled && value.trim() !== "") onSend();
  }

  return (
    <div class="composer-wrap">
      {notice}
      {about}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          if (!busy && value.trim() !== "") onSend();
        }}
      >
        <label for="composer-input" class="sr-only">
          Message
        </label>
        <textarea
          id="composer-input"
          ref={area}
          rows={1}
          value={value}
          placeholder="Ask about a library, an API, a repo…"
          aria-describedby="composer-hint"
          disabled={disabled}
          onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)}
          onKeyDown={keyDown}
        />
        {busy ? (
          <button type="button" class="composer-btn stop" onClick={onStop} aria-label="Stop the answer" title="Stop">
            <IconStop />
          </button>
        ) : (
          <button
            type="submit"
            class="composer-btn send"
            disabled={disabled || value.trim() === ""}
            aria-label="Send message"
            title="Send (Enter)"
          >
            <IconSend />
          </button>
        )}
      </form>
      <div class="composer-foot">
        <p id="composer-hint" class="composer-hint">
          <kbd>Enter</kbd> to send · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>Esc</kbd> stops · answers can be
          wrong: check the sources
        </p>
        {controls}
      </div>
    </div>
  );
}
