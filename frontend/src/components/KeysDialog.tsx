import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import type { ApiKey, ApiKeyCreated } from "../api/types";
import { copyText, relativeTime } from "../lib/format";
import { ConfirmDialog } from "./ConfirmDialog";
import { IconCheck, IconCopy } from "./icons";
import { Modal } from "./Modal";

interface Props {
  open: boolean;
  onClose: () => void;
  /** The key this browser session was made from was revoked: the session has ended. */
  onSessionEnded: () => void;
  returnFocus?: () => HTMLElement | null;
}

/**
 * The user's API keys: list (newest first, revoked ones too), create (the key is shown once, kept
 * only in this component's memory until the dialog closes), revoke (with confirmation; revoking the
 * key of this session signs this browser out).
 */
export function KeysDialog({ open, onClose, onSessionEnded, returnFocus }: Props) {
  return (
    <Modal open={open} title="API keys" onClose={onClose} class="keys-dialog" returnFocus={returnFocus}>
      <KeysPanel onSessionEnded={onSessionEnded} />
    </Modal>
  );
}

function message(error: unknown, fallback: string): string {
  return error instanceof ApiError ? error.message : fallback;
}

export function KeysPanel({ onSessionEnded }: { onSessionEnded: () => void }) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  async function reload() {
    try {
      setKeys((await api.keys()).data);
    } catch (e) {
      setError(message(e, "The keys could not be loaded."));
    }
  }

  useEffect(() => {
    void reload();
  }, []);

  async function create(event: Event) {
    event.preventDefault();
    setCreating(true);
    setError(null);
    try {
      const key = await api.createKey(name.trim());
      setCreated(key);
      setName("");
      await reload();
    } catch (e) {
      setError(message(e, "The key could not be created."));
    } finally {
      setCreating(false);
    }
  }

  async function revoke() {
    const target = revoking;
    setRevoking(null);
    if (!target) return;
    setError(null);
    let gone = true; // revoked now, or before (404)
    try {
      await api.revokeKey(target.id);
    } catch (e) {
      gone = e instanceof ApiError && e.status === 404;
      setError(gone ? "That key was already revoked." : message(e, "Revoking failed."));
    }
    if (!gone) return;
    if (target.current) {
      onSessionEnded();
      return;
    }
    if (created?.id === target.id) setCreated(null);
    await reload();
  }

  return (
    <div class="modal-body">
      <p class="muted small">
        Keys let programs such as <code>curl</code> or scripts use Almanac as you (<code>Authorization: Bearer …</code>).
        Revoking a key stops it at once and ends the browser sessions signed in with it.
      </p>
      {created && <NewKey created={created} onDone={() => setCreated(null)} />}
      <form class="inline-form" onSubmit={create}>
        <label for="new-key-name">Name of a new key</label>
        <div class="inline-form-row">
          <input
            id="new-key-name"
            value={name}
            maxLength={100}
            placeholder="e.g. laptop scripts"
            autocomplete="off"
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
          <button type="submit" class="btn btn-primary" disabled={creating}>
            {creating ? "Creating…" : "Create key"}
          </button>
        </div>
      </form>
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      <h3 class="section-title" id="keys-list-title">
        Your keys
      </h3>
      {keys === null && !error && <p class="muted small">Loading…</p>}
      {keys?.length === 0 && <p class="muted small">You have no API keys.</p>}
      {keys && keys.length > 0 && (
        <ul class="key-list" aria-labelledby="keys-list-title">
          {keys.map((key) => (
            <KeyRow key={key.id} apiKey={key} onRevoke={() => setRevoking(key)} />
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this key?"
        message={
          revoking
            ? `Programs using “${keyLabel(revoking)}” (${revoking.prefix}…) will stop working at once. This cannot be undone.` +
              (revoking.current ? " This browser session was signed in with it: you will be signed out." : "")
            : ""
        }
        confirmLabel="Revoke"
        danger
        onConfirm={() => void revoke()}
        onCancel={() => setRevoking(null)}
        returnFocus={() => document.getElementById("new-key-name")}
      />
    </div>
  );
}

function keyLabel(key: ApiKey): string {
  return key.name || "Unnamed key";
}

function When({ iso, prefix }: { iso: string; prefix: string }) {
  return (
    <span>
      {prefix}{" "}
      <time dateTime={iso} title={new Date(iso).toLocaleString("en")}>
        {relativeTime(iso)}
      </time>
    </span>
  );
}

function KeyRow({ apiKey, onRevoke }: { apiKey: ApiKey; onRevoke: () => void }) {
  const revoked = apiKey.revoked_at !== null;
  return (
    <li class={`key-row ${revoked ? "revoked" : ""}`} data-key-id={apiKey.id}>
      <div class="key-main">
        <code class="key-prefix">{apiKey.prefix}…</code>
        <span class="key-name">{keyLabel(apiKey)}</span>
        {apiKey.current && <span class="badge badge-accent">This session</span>}
        {revoked && <span class="badge badge-muted">Revoked</span>}
      </div>
      <div class="key-meta">
        <When iso={apiKey.created_at} prefix="Created" />
        {apiKey.last_used_at ? <When iso={apiKey.last_used_at} prefix="· Last used" /> : <span>· Never used</span>}
        {revoked && apiKey.revoked_at && <When iso={apiKey.revoked_at} prefix="· Revoked" />}
      </div>
      {!revoked && (
        <button
          type="button"
          class="btn btn-small key-revoke"
          onClick={onRevoke}
          aria-label={`Revoke “${keyLabel(apiKey)}” (${apiKey.prefix}…)`}
        >
          Revoke
        </button>
      )}
    </li>
  );
}

/** The key just created: shown this once, with a copy button. */
function NewKey({ created, onDone }: { created: ApiKeyCreated; onDone: () => void }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, [created.id]);
  return (
    <div class="new-key" data-testid="new-key">
      <p class="new-key-title">
        <IconCheck /> <strong>New key “{keyLabel(created)}” created.</strong>
      </p>
      <p id="new-key-warning" class="new-key-warning">
        Copy it now: it will not be shown again.
      </p>
      <label for="new-key-value" class="sr-only">
        The new API key
      </label>
      <div class="inline-form-row">
        <input
          id="new-key-value"
          ref={field}
          class="new-key-value"
          readOnly
          value={created.api_key}
          spellcheck={false}
          aria-describedby="new-key-warning"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <button
          type="button"
          class="btn"
          onClick={async () => setCopied(await copyText(created.api_key))}
          aria-label="Copy the new key to the clipboard"
        >
          {copied ? <IconCheck /> : <IconCopy />} {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <p class="sr-only" role="status">
        {copied === true ? "The key was copied to the clipboard." : copied === false ? "Copying failed: select the key and copy it." : ""}
      </p>
      <button type="button" class="btn btn-small" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}
