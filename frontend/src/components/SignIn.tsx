import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import type { LocalLogin, User } from "../api/types";
import { ACCOUNT_DISABLED_NOTICE, linkErrorMessage, LINK_REFUSED } from "../lib/session";
import { tokenFromInput } from "../lib/signInLink";
import { Logo } from "./icons";

interface Props {
  onSignedIn: (user: User) => void;
  /** Why the user is here (signed out, session ended). */
  notice?: string | null;
  /** A sign-in link the page was opened with did not work. */
  linkError?: string | null;
}

/**
 * Sign-in: paste an API key (exchanged for an HttpOnly session cookie; the key is not kept), or —
 * on a local run — use the one-time sign-in link `almanac serve` printed (opening it signs in by
 * itself; it can also be pasted here).
 */
export function SignIn({ onSignedIn, notice, linkError: initialLinkError = null }: Props) {
  const [local, setLocal] = useState<LocalLogin | null>(null);
  const [key, setKey] = useState("");
  const [link, setLink] = useState("");
  const [busy, setBusy] = useState<"key" | "link" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [linkError, setLinkError] = useState<string | null>(initialLinkError);

  useEffect(() => {
    api.localLogin().then(setLocal, () => setLocal({ available: false, email: null }));
  }, []);

  async function attempt(which: "key" | "link", action: () => Promise<User>, fail: (e: unknown) => void) {
    setBusy(which);
    setError(null);
    setLinkError(null);
    try {
      onSignedIn(await action());
    } catch (e) {
      fail(e);
      setBusy(null);
    }
  }

  function submitKey(event: Event) {
    event.preventDefault();
    const value = key.trim();
    if (!value) {
      setError("Paste your API key first.");
      return;
    }
    setKey(""); // do not keep the key around, even in memory
    void attempt(
      "key",
      () => api.signIn(value),
      (e) =>
        setError(
          e instanceof ApiError && e.code === "account_disabled"
            ? ACCOUNT_DISABLED_NOTICE
            : e instanceof ApiError && e.status === 401
            ? "That API key is not valid (or it was revoked)."
            : e instanceof ApiError
              ? e.message
              : "Sign-in failed.",
        ),
    );
  }

  function submitLink(event: Event) {
    event.preventDefault();
    const token = tokenFromInput(link);
    setLink("");
    if (token === null) {
      setLinkError(link.trim() === "" ? "Paste the sign-in link (or its token) first." : LINK_REFUSED);
      return;
    }
    void attempt(
      "link",
      () => api.signInLocal(token),
      (e) => setLinkError(linkErrorMessage(e)),
    );
  }

  const offered = local?.available === true;
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
        {local !== null && !offered && linkError && (
          <p class="form-error" role="alert">
            {linkError}
          </p>
        )}
        {offered && (
          <>
            <section class="local-signin" aria-labelledby="local-signin-title">
              <h2 id="local-signin-title" class="sr-only">
                Sign in with the local sign-in link
              </h2>
              <p class="local-signin-help" id="link-help">
                <strong>Local run:</strong> open the sign-in link <code>almanac serve</code> printed in its terminal (also
                saved in <code>data/local-sign-in-url</code>).
              </p>
              <form class="signin-form" onSubmit={submitLink}>
                <label for="sign-in-link">Sign-in link or token</label>
                <input
                  id="sign-in-link"
                  name="sign-in-link"
                  type="password"
                  autocomplete="off"
                  spellcheck={false}
                  placeholder="http://127.0.0.1:8000/#sign-in=…"
                  value={link}
                  onInput={(e) => setLink((e.target as HTMLInputElement).value)}
                  aria-invalid={linkError ? "true" : undefined}
                  aria-describedby={linkError ? "link-error link-help" : "link-help"}
                />
                <button type="submit" class="btn btn-primary btn-block" disabled={busy !== null}>
                  {busy === "link" ? "Signing in…" : "Sign in with link"}
                </button>
                {linkError && (
                  <p id="link-error" class="form-error" role="alert">
                    {linkError}
                  </p>
                )}
              </form>
              <p class="muted small">
                Signs in as {local.email ?? "the local user"}. Each link works once; a new one is then written to the same
                file.
              </p>
            </section>
            <div class="divider" role="separator">
              <span>or use an API key</span>
            </div>
          </>
        )}
        <form class="signin-form" onSubmit={submitKey}>
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
            aria-describedby={error ? "signin-error signin-help" : "signin-help"}
          />
          <button type="submit" class={`btn btn-block ${local?.available === false ? "btn-primary" : ""}`} disabled={busy !== null}>
            {busy === "key" ? "Signing in…" : "Sign in"}
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
