import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, notFound } from "../api/client";
import { ConfirmDialog } from "../components/ConfirmDialog";
import { IconTrash } from "../components/icons";
import { Link } from "../components/Link";
import { OutOfCreditsHelp } from "../components/OutOfCredits";
import { useAccount } from "../lib/account";
import { relativeTime } from "../lib/format";
import { navigatePath } from "../lib/router";
import { discussions } from "./api";
import { DiscussionForm } from "./DiscussionForm";
import { DiscussionView } from "./DiscussionView";
import { applyDiscussionEvent, fromDetail, startingView, toRequest, type DiscussionForm as Form, type DiscussionView as View } from "./state";
import type { Discussion, Models } from "./types";
import "./discussions.css";

interface Props {
  /** /discussions/{id}: the discussion to show; null: the form to start one. */
  discussionId: string | null;
  /** A discussion ended (credits were spent). */
  onCreditsChanged: () => void;
}

const STATUS: Record<string, string> = {
  running: "running",
  done: "finished",
  stopped: "stopped",
  failed: "failed",
  interrupted: "interrupted",
};

export function pathOf(id: string | null): string {
  return id ? `/discussions/${encodeURIComponent(id)}` : "/discussions";
}

/** Discussions between models: start one and watch it live, or read a past one. */
export function DiscussionsPage({ discussionId, onCreditsChanged }: Props) {
  const [models, setModels] = useState<Models | null>(null);
  const [list, setList] = useState<Discussion[] | null>(null);
  const [live, setLive] = useState<View | null>(null);
  const [stored, setStored] = useState<View | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const [reload, setReload] = useState(0);
  const [deleting, setDeleting] = useState<Discussion | null>(null);
  const [refused, setRefused] = useState(false); // 402: not enough credits for the first turn
  const { credits, config } = useAccount();
  const controller = useRef<AbortController | null>(null);

  const refreshList = useCallback(async () => {
    try {
      setList((await discussions.list()).data);
    } catch {
      /* keep what is shown */
    }
  }, []);

  useEffect(() => {
    void discussions.models().then(setModels, () => setError("The configured models could not be loaded."));
    void refreshList();
    return () => controller.current?.abort();
  }, [refreshList]);

  const showingLive = live !== null && (discussionId === null ? live.id === null : live.id === discussionId);
  useEffect(() => {
    if (!discussionId || (live && live.id === discussionId)) {
      setStored(null);
      return;
    }
    setStored((now) => (now && now.id !== discussionId ? null : now)); // another discussion: not the old one meanwhile
    const abort = new AbortController();
    let again: ReturnType<typeof setTimeout> | undefined;
    discussions.get(discussionId, abort.signal).then(
      (detail) => {
        setStored(fromDetail(detail));
        // Running elsewhere (another tab, another client): look again in a while.
        if (detail.status === "running") again = setTimeout(() => setReload((n) => n + 1), 2000);
      },
      (e) => {
        if ((e as Error).name === "AbortError") return;
        setError(
          notFound(e)
            ? "This discussion does not exist, or it was deleted."
            : e instanceof ApiError
              ? e.message
              : "The discussion could not be loaded.",
        );
      },
    );
    return () => {
      abort.abort();
      clearTimeout(again);
    };
  }, [discussionId, reload]);

  async function start(form: Form) {
    const request = toRequest(form);
    const abort = new AbortController();
    controller.current = abort;
    setRunning(true);
    setError(null);
    setRefused(false);
    let view = startingView(request);
    setLive(view);
    try {
      for await (const event of discussions.start(request, abort.signal)) {
        view = applyDiscussionEvent(view, event);
        setLive(view);
        if (event.type === "discussion_start") navigatePath(pathOf(event.discussion_id), true);
      }
    } catch (e) {
      if ((e as Error).name === "AbortError") {
        setLive({ ...view, status: "stopped", stopReason: "cancelled" });
      } else if (e instanceof ApiError && e.status === 402) {
        setRefused(true);
        setLive(null);
      } else if (e instanceof ApiError) {
        setError(e.message);
        setLive(null);
      } else {
        setError("The connection was lost; the discussion keeps what was said so far.");
      }
    } finally {
      controller.current = null;
      setRunning(false);
      onCreditsChanged();
      void refreshList();
    }
  }

  async function confirmDelete() {
    const target = deleting;
    setDeleting(null);
    if (!target) return;
    try {
      await discussions.remove(target.id);
      setList((now) => now?.filter((d) => d.id !== target.id) ?? null);
      if (target.id === discussionId) {
        setStored(null);
        navigatePath("/discussions", true);
      }
      void refreshList();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "The discussion could not be deleted.");
    }
  }

  const shown = showingLive ? live : stored;
  return (
    <main class="page-scroll" id="main" aria-label="Discussions">
      <div class="page-inner discussions-page">
        <div class="discussions-top">
          <p class="muted small">Models take turns toward a goal; each turn is billed like a question.</p>
          {discussionId && (
            <Link href="/discussions" class="btn btn-small">
              New discussion
            </Link>
          )}
        </div>
        {error && (
          <p class="notice notice-error" role="alert">
            {error}
          </p>
        )}
        {refused && (
          <div class="notice notice-error" role="alert" data-testid="out-of-credits">
            <strong>You're out of credits</strong> for a discussion's first turn.
            <OutOfCreditsHelp credits={credits} payments={config?.payments_enabled ?? false} needed={models?.discussions.turn_credits} />
          </div>
        )}
        {!discussionId && !showingLive && models && (
          <section class="page-section">
            <h2>New discussion</h2>
            <DiscussionForm
              models={models.data}
              limits={models.discussions}
              turnCredits={models.discussions.turn_credits}
              busy={running}
              onStart={(form) => void start(form)}
            />
          </section>
        )}
        {shown && <DiscussionView view={shown} />}
        {showingLive && running && (
          <button type="button" class="btn" onClick={() => controller.current?.abort()}>
            Stop
          </button>
        )}
        <section class="page-section" aria-labelledby="past-discussions">
          <h2 id="past-discussions">Past discussions</h2>
          {list === null && <p class="muted small">Loading…</p>}
          {list?.length === 0 && <p class="muted small">None yet.</p>}
          <ul class="discussion-list">
            {list?.map((d) => (
              <li key={d.id} class={d.id === discussionId ? "current" : ""}>
                <span class="discussion-entry">
                  <Link href={pathOf(d.id)}>{d.title || d.goal}</Link>
                  <span class="muted small">
                    {" "}
                    · {STATUS[d.status] ?? d.status} · {d.turns_done}/{d.turns} turns · {d.credits_used} credits ·{" "}
                    {relativeTime(d.updated_at)}
                  </span>
                </span>
                <button
                  type="button"
                  class="btn-icon btn-ghost danger"
                  aria-label={`Delete “${d.title || d.goal}”`}
                  title="Delete"
                  disabled={d.status === "running"}
                  onClick={() => setDeleting(d)}
                >
                  <IconTrash />
                </button>
              </li>
            ))}
          </ul>
        </section>
        <ConfirmDialog
          open={deleting !== null}
          title="Delete this discussion?"
          message={`“${deleting?.title || deleting?.goal || ""}” and everything said in it will be deleted. This cannot be undone.`}
          confirmLabel="Delete"
          danger
          onConfirm={() => void confirmDelete()}
          onCancel={() => setDeleting(null)}
        />
      </div>
    </main>
  );
}
