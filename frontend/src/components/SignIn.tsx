import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import type { LocalLogin, User } from "../api/types";
import { Logo } from "./icons";

/**
 * Sign-in: paste an API key (exchanged for an HttpOnly session cookie; the key is not kept), or —
 * on a local run, from this machine — continue as the local user without a key.
 */
export function SignIn({ onSignedIn, notice }: { onSignedIn: (user: User) => void; notice?: string | null }) {
  const [local, setLocal] = useState<LocalLogin | null>(null);
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.localLogin().then(setLocal, () => setLocal({ available: false, email: null }));
  }, []);

  async function attempt(action: () => Promise<User>) {
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await action());
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401
          ? "That API key is not valid (or it was revoked)."
          : e instanceof ApiError
            ? e.message
            : "Sign-in failed.",
      );
      setBusy(false);
    }
  }

  function submit(event: Event) {
    event.preventDefault();
    const value = key.trim();
    if (!value) {
      setError("Paste your API key first.");
      return;
    }
    setKey(""); // do not keep the key around, even in memory
    void attempt(() => api.signIn(value));
  }

  return (
    <main class="signin" id="main">
      <div class="signin-card">
        <div class="signin-brand">
          <Logo size={40} />
          <div>
            <h1>Almanac</h1>
            <p class="muted">Answers about libraries and repositories, with their sources.</p>
          </div>
        </div>
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        {local?.available && (
          <>
            <button type="button" class="btn btn-primary btn-block" disabled={busy} onClick={() => attempt(api.signInLocal)}>
              Continue as {local.email ?? "the local user"}
            </button>
            <p class="muted small">This server runs locally: no key is needed from this machine.</p>
            <div class="divider" role="separator">
              <span>or use an API key</span>
            </div>
          </>
        )}
        <form class="signin-form" onSubmit={submit}>
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="api-key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder="alm_…"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            aria-invalid={error ? "true" : undefined}
            aria-describedby={error ? "signin-error" : "signin-help"}
          />
          <button type="submit" class={`btn btn-block ${local?.available ? "" : "btn-primary"}`} disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
          {error && (
            <p id="signin-error" class="form-error" role="alert">
              {error}
            </p>
          )}
          <p id="signin-help" class="muted small">
            Your key is exchanged for a secure session cookie; this browser does not store the key. Keys come from{" "}
            <code>almanac users create</code> or <code>almanac keys create</code>.
          </p>
        </form>
      </div>
    </main>
  );
}
