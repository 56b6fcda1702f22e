import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import type { GithubIntegration } from "../api/types";
import { relativeTime } from "../lib/format";
import { ConfirmDialog } from "./ConfirmDialog";
import { Modal } from "./Modal";

interface DialogProps {
  open: boolean;
  onClose: () => void;
  /** The server has no GitHub integration route (404): hide the entry that opens this. */
  onUnavailable: () => void;
  returnFocus?: () => HTMLElement | null;
}

/** The user's own GitHub token for the GitHub tools: shown masked, replaced or removed. */
export function GithubDialog({ open, onClose, onUnavailable, returnFocus }: DialogProps) {
  return (
    <Modal open={open} title="GitHub token" onClose={onClose} class="github-dialog" returnFocus={returnFocus}>
      <GithubSection
        onUnavailable={() => {
          onUnavailable();
          onClose();
        }}
      />
    </Modal>
  );
}

/** Whether this server offers the GitHub integration: false only when the route is missing (404). */
export async function githubAvailable(): Promise<boolean> {
  try {
    await api.github();
    return true;
  } catch (error) {
    return !(error instanceof ApiError && error.status === 404);
  }
}

/** A 422's message about the token field, as a sentence ("The token must start with ghp_ …"). */
function tokenProblem(error: ApiError): string {
  const problem = error.fieldMessage() ?? error.message;
  return /^[a-z]/.test(problem) ? `The token ${problem}` : problem;
}

export function GithubSection({ onUnavailable }: { onUnavailable: () => void }) {
  const [state, setState] = useState<GithubIntegration | null>(null);
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [fieldError, setFieldError] = useState<string | null>(null);
  const [done, setDone] = useState("");
  const [confirming, setConfirming] = useState(false);

  useEffect(() => {
    api.github().then(setState, (e) => {
      if (e instanceof ApiError && e.status === 404) onUnavailable();
      else setError(e instanceof ApiError ? e.message : "The GitHub settings could not be loaded.");
    });
  }, []);

  async function save(event: Event) {
    event.preventDefault();
    const value = token.trim();
    if (!value) {
      setFieldError("Paste a GitHub token first.");
      return;
    }
    setBusy(true);
    setError(null);
    setFieldError(null);
    setDone("");
    try {
      setState(await api.saveGithub(value));
      setToken(""); // the token is not kept in the page once the server has it
      setDone("The GitHub token was saved.");
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) setFieldError(tokenProblem(e));
      else setError(e instanceof ApiError ? e.message : "The token could not be saved.");
    } finally {
      setBusy(false);
    }
  }

  async function remove() {
    setConfirming(false);
    setBusy(true);
    setError(null);
    setFieldError(null);
    setDone("");
    try {
      await api.removeGithub();
      setState((s) => ({ connected: false, masked: null, updated_at: null, shared_token_available: s?.shared_token_available ?? false }));
      setDone("The GitHub token was removed.");
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "The token could not be removed.");
    } finally {
      setBusy(false);
    }
  }

  if (state?.available === false) {
    return (
      <div class="modal-body github-section">
        <p data-testid="github-unavailable">
          This server has no GitHub tools (its operator has not configured the GitHub MCP server), so a GitHub token
          would not be used.
        </p>
      </div>
    );
  }
  return (
    <div class="modal-body github-section">
      <p class="muted small">
        GitHub tools (search repositories, read issues and pull requests) use this token, read-only. Create a fine-grained
        personal access token on GitHub with read access to what you want Almanac to see.
      </p>
      {state === null && !error && <p class="muted small">Loading…</p>}
      {state && (
        <p class="github-status" data-testid="github-status">
          {state.connected ? (
            <>
              Connected: <code>{state.masked ?? "••••"}</code>
              {state.updated_at && <span class="muted small"> (saved {relativeTime(state.updated_at)})</span>}
            </>
          ) : (
            <>
              Not connected.
              {state.shared_token_available && (
                <span class="muted small"> GitHub tools use this server's shared token until you add your own.</span>
              )}
            </>
          )}
        </p>
      )}
      {state && (
        <form class="inline-form" onSubmit={save}>
          <label for="github-token">{state.connected ? "Replace with a new token" : "Personal access token"}</label>
          <div class="inline-form-row">
            <input
              id="github-token"
              type="password"
              autocomplete="off"
              spellcheck={false}
              placeholder="github_pat_…"
              value={token}
              onInput={(e) => setToken((e.target as HTMLInputElement).value)}
              aria-invalid={fieldError ? "true" : undefined}
              aria-describedby={fieldError ? "github-token-error" : undefined}
            />
            <button type="submit" class="btn btn-primary" disabled={busy}>
              Save
            </button>
          </div>
          {fieldError && (
            <p id="github-token-error" class="form-error" role="alert">
              {fieldError}
            </p>
          )}
        </form>
      )}
      {state?.connected && (
        <button type="button" class="btn btn-small btn-ghost danger-text" disabled={busy} onClick={() => setConfirming(true)}>
          Remove the token
        </button>
      )}
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      <p class="sr-only" role="status">
        {done}
      </p>
      <ConfirmDialog
        open={confirming}
        title="Remove your GitHub token?"
        message="GitHub tools will stop using it at once. Almanac cannot show it again: keep a copy if you need it later."
        confirmLabel="Remove"
        danger
        onConfirm={() => void remove()}
        onCancel={() => setConfirming(false)}
      />
    </div>
  );
}
