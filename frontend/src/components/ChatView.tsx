import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Strategy } from "../api/types";
import { isActive, isBusy, type ConversationState, type Turn as TurnState } from "../chat/state";
import type { ChatStore } from "../chat/store";
import { useAccount } from "../lib/account";
import { outOfCredits } from "../lib/credits";
import { loadDraft, saveDraft } from "../lib/drafts";
import { copyText, credits as creditsText } from "../lib/format";
import { Composer } from "./Composer";
import { ComposerControls, OfflineNote } from "./ComposerExtras";
import { Logo } from "./icons";
import { OutOfCreditsHelp } from "./OutOfCredits";
import { Turn } from "./Turn";

interface Props {
  store: ChatStore;
  storeKey: string;
  /** How this conversation's questions are answered, and changing it. */
  strategy: Strategy;
  onStrategy: (strategy: Strategy) => void;
}

function useConversation(store: ChatStore, key: string): ConversationState {
  const [, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion((v) => v + 1)), [store]);
  return store.get(key);
}

/**
 * The message box's text for a conversation, kept in storage as it is typed. On a switch to another
 * conversation its own draft is shown from the very first render (never the one left behind); a new
 * conversation that just got its ID is the same conversation, so what is being typed stays.
 */
function useDraft(store: ChatStore, resolved: string, draftKey: string): [string, (text: string) => void] {
  const [held, setHeld] = useState(() => ({ key: resolved, text: loadDraft(draftKey) }));
  const moved = held.key !== resolved;
  const text = !moved || store.resolve(held.key) === resolved ? held.text : loadDraft(draftKey);
  useLayoutEffect(() => {
    if (!moved) return;
    if (store.resolve(held.key) === resolved) saveDraft(draftKey, text); // kept under the conversation's ID
    setHeld({ key: resolved, text });
  });
  const update = useCallback(
    (value: string) => {
      setHeld({ key: resolved, text: value });
      saveDraft(draftKey, value);
    },
    [resolved, draftKey],
  );
  return [text, update];
}

/** The open conversation: its turns, the composer, and jumping between item IDs. */
export function ChatView({ store, storeKey, strategy, onStrategy }: Props) {
  const { credits, config } = useAccount();
  const state = useConversation(store, storeKey);
  const resolved = store.resolve(storeKey);
  // Drafts of a not-yet-started conversation share one slot, so they survive a reload too.
  const draftKey = resolved.startsWith("new:") ? "new" : resolved;
  const busy = isBusy(state);
  const [draft, setDraft] = useDraft(store, resolved, draftKey);
  const [expanded, setExpanded] = useState<Set<string>>(() => new Set());
  const [highlighted, setHighlighted] = useState<string | null>(null);
  const [announcement, setAnnouncement] = useState("");
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const previousKey = useRef(resolved);
  const statuses = useRef(new Map<string, string>());
  const area = useRef<HTMLTextAreaElement>(null);

  // Another conversation: load it, its tools folded, following its end. (A new conversation that just
  // got its ID is the same conversation.)
  useEffect(() => {
    const before = previousKey.current;
    previousKey.current = resolved;
    if (before !== resolved && store.resolve(before) !== resolved) {
      setExpanded(new Set());
      setHighlighted(null);
      stick.current = true;
    }
    if (!resolved.startsWith("new:")) void store.load(resolved);
  }, [resolved, store]);

  // Announce finished answers and errors to screen readers.
  useEffect(() => {
    for (const turn of state.turns) {
      const previous = statuses.current.get(turn.localId);
      statuses.current.set(turn.localId, turn.status);
      if (previous === undefined || previous === turn.status || isActive(turn)) continue;
      setAnnouncement(describeEnd(turn));
    }
  }, [state.turns]);

  // Follow the answer while the reader is at the bottom.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [state.turns, state.loaded]);

  const onScroll = useCallback(() => {
    const el = scroller.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }, []);

  const toggleTool = useCallback((itemId: string) => {
    setExpanded((current) => {
      const next = new Set(current);
      if (next.has(itemId)) next.delete(itemId);
      else next.add(itemId);
      return next;
    });
  }, []);

  function jumpTo(ref: string) {
    const id = ref.replace(/-sum$/, "");
    const target = document.getElementById(`item-${id}`);
    if (!target) {
      setAnnouncement(`Item ${id} is not in this conversation.`);
      return;
    }
    if (target.classList.contains("tool-card")) {
      setExpanded((current) => new Set(current).add(id));
    }
    stick.current = false;
    target.scrollIntoView({ block: "center", behavior: "smooth" });
    const focusable = target.querySelector<HTMLElement>(".tool-head") ?? target;
    if (focusable === target) target.tabIndex = -1;
    focusable.focus({ preventScroll: true });
    setHighlighted(id);
    window.setTimeout(() => setHighlighted((h) => (h === id ? null : h)), 2200);
  }

  // Delegated clicks inside rendered Markdown: copy buttons and [q3-t1] references.
  async function onClick(event: MouseEvent) {
    const target = event.target as HTMLElement;
    const copy = target.closest<HTMLButtonElement>("[data-action='copy-code']");
    if (copy) {
      const code = copy.closest(".code-block")?.querySelector("pre code, pre")?.textContent ?? "";
      const ok = await copyText(code);
      copy.textContent = ok ? "Copied" : "Copy failed";
      window.setTimeout(() => (copy.textContent = "Copy"), 1500);
      return;
    }
    const ref = target.closest<HTMLElement>("[data-item-ref]");
    if (ref) jumpTo(ref.dataset.itemRef ?? "");
  }

  function send() {
    const message = draft.trim();
    if (!message || busy) return;
    setDraft("");
    stick.current = true;
    void store.send(storeKey, message, strategy);
  }

  /** Stop the running answer; the message box has the focus again. */
  function stop() {
    const running = state.turns.find(isActive);
    if (running) store.stop(storeKey, running.localId);
    area.current?.focus();
  }

  // Escape stops a streaming answer — unless it is closing something else (a dialog, a menu, the
  // credits panel), which handles it first.
  const stopRef = useRef(stop);
  stopRef.current = stop;
  useEffect(() => {
    if (!busy) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Escape" || event.defaultPrevented || document.querySelector("dialog[open]")) return;
      const target = event.target as HTMLElement | null;
      if (target && target !== document.body && !target.closest("main.chat")) return;
      event.preventDefault();
      stopRef.current();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [busy]);

  // Out of credits is said once: on the refused message's card, or else above the message box.
  const last = state.turns[state.turns.length - 1];
  const refusedForCredits = last?.error?.status === 402;
  const notice =
    outOfCredits(credits) && !refusedForCredits ? (
      <div class="composer-notice" role="status" data-testid="credits-notice">
        <strong>Out of credits.</strong>
        <OutOfCreditsHelp credits={credits} payments={config?.payments_enabled ?? false} />
      </div>
    ) : null;

  return (
    <main class="chat" id="main">
      <div class="messages" ref={scroller} onScroll={onScroll} onClick={onClick}>
        <div class="messages-inner" role="log" aria-label="Messages" aria-live="off">
          {state.loading && !state.loaded && <Skeleton />}
          {state.loadError && (
            <div class="notice notice-error" role="alert">
              {state.loadError}
            </div>
          )}
          {state.loaded && state.turns.length === 0 && !state.loadError && (
            <Welcome
              suggestions={config?.suggestions ?? []}
              onPick={(text) => {
                setDraft(text);
                const box = area.current;
                if (box) {
                  box.focus();
                  box.setSelectionRange(text.length, text.length);
                }
              }}
            />
          )}
          {state.turns.map((turn) => (
            <Turn
              key={turn.localId}
              turn={turn}
              conversationId={state.id}
              expanded={expanded}
              highlighted={highlighted}
              onToggleTool={toggleTool}
              onRetry={(localId) => store.retry(storeKey, localId, strategy)}
              onDismiss={(localId) => store.dismiss(storeKey, localId)}
            />
          ))}
        </div>
      </div>
      <Composer
        value={draft}
        busy={busy}
        disabled={state.loadError !== null}
        onChange={setDraft}
        onSend={send}
        onStop={stop}
        notice={notice}
        about={config?.chat_model.offline ? <OfflineNote /> : null}
        controls={<ComposerControls strategy={strategy} onStrategy={onStrategy} disabled={busy} />}
        focusKey={resolved}
        area={area}
      />
      <div class="sr-only" aria-live="polite" role="status">
        {announcement}
      </div>
    </main>
  );
}

function describeEnd(turn: TurnState): string {
  if (turn.status === "done") return `Answer complete${turn.credits !== null ? `, ${creditsText(turn.credits)}` : ""}.`;
  if (turn.status === "stopped") return "Answer stopped.";
  return `Error: ${turn.error?.message ?? "the answer failed"}`;
}

function Welcome({ suggestions, onPick }: { suggestions: string[]; onPick: (text: string) => void }) {
  return (
    <div class="welcome">
      <Logo size={44} />
      <h2>What are you working on?</h2>
      <p class="muted">
        Ask about a library, an API or a repository. Answers cite their sources and tool calls; each item has an ID
        (like <code>q2-t1</code>) you can refer to later.
      </p>
      <ul class="suggestions" aria-label="Suggestions" data-testid="suggestions">
        {suggestions.map((text) => (
          <li key={text}>
            <button type="button" class="suggestion" onClick={() => onPick(text)}>
              {text}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

function Skeleton() {
  return (
    <div class="skeleton" aria-busy="true" aria-label="Loading the conversation">
      <div class="sk-line short" />
      <div class="sk-line" />
      <div class="sk-line" />
      <div class="sk-line mid" />
    </div>
  );
}
