import { useEffect, useRef, useState } from "preact/hooks";
import type { Conversation, User } from "../api/types";
import { pathFor } from "../lib/router";
import { relativeTime } from "../lib/format";
import { IconEdit, IconPlus, IconSignOut, IconTrash, Logo } from "./icons";

interface Props {
  user: User;
  conversations: Conversation[] | null;
  /** How many conversations there are in all (the list may show only the newest). */
  total: number;
  onMore: () => void;
  error: string | null;
  currentId: string | null;
  open: boolean;
  onNew: () => void;
  /** Open the discussions page. */
  onDiscussions: () => void;
  onOpen: (id: string) => void;
  onRename: (id: string, title: string) => Promise<boolean>;
  onDelete: (conversation: Conversation) => void;
  onSignOut: () => void;
  onClose: () => void;
}

/** The conversation list (newest activity first) with new, rename and delete; the account below. */
export function Sidebar(props: Props) {
  const { conversations, currentId, open } = props;
  return (
    <>
      <div class={`scrim ${open ? "visible" : ""}`} onClick={props.onClose} aria-hidden="true" />
      <nav class={`sidebar ${open ? "open" : ""}`} aria-label="Conversations" id="sidebar">
        <div class="sidebar-top">
          <a
            class="brand"
            href="/"
            onClick={(e) => {
              e.preventDefault();
              props.onNew();
            }}
          >
            <Logo />
            <span>Almanac</span>
          </a>
          <button type="button" class="btn btn-new" onClick={props.onNew}>
            <IconPlus /> New chat
          </button>
          <a
            class="btn btn-new btn-ghost sidebar-discussions"
            href="/discussions"
            onClick={(e) => {
              e.preventDefault();
              props.onDiscussions();
            }}
          >
            Discussions
          </a>
        </div>
        <h2 class="sidebar-heading" id="conv-heading">
          Conversations
        </h2>
        {props.error && (
          <p class="sidebar-error" role="alert">
            {props.error}
          </p>
        )}
        {conversations === null && !props.error && <p class="muted small sidebar-empty">Loading…</p>}
        {conversations?.length === 0 && <p class="muted small sidebar-empty">No conversations yet. Ask something!</p>}
        <ul class="conv-list" aria-labelledby="conv-heading">
          {conversations?.map((c) => (
            <ConversationRow
              key={c.id}
              conversation={c}
              current={c.id === currentId}
              onOpen={props.onOpen}
              onRename={props.onRename}
              onDelete={props.onDelete}
            />
          ))}
          {conversations && conversations.length < props.total && (
            <li class="conv-more">
              <button type="button" class="btn btn-small btn-ghost" onClick={props.onMore}>
                Show older conversations ({props.total - conversations.length})
              </button>
            </li>
          )}
        </ul>
        <div class="sidebar-foot">
          <div class="account">
            <span class="avatar-sm" aria-hidden="true">
              {props.user.email.slice(0, 1).toUpperCase()}
            </span>
            <span class="account-text">
              <span class="account-email">{props.user.email}</span>
              <span class="muted small">{planName(props.user.plan)} plan</span>
            </span>
          </div>
          <button type="button" class="btn btn-ghost btn-icon" onClick={props.onSignOut} aria-label="Sign out" title="Sign out">
            <IconSignOut />
          </button>
        </div>
      </nav>
    </>
  );
}

export function planName(plan: string): string {
  return plan ? plan[0].toUpperCase() + plan.slice(1) : "";
}

interface RowProps {
  conversation: Conversation;
  current: boolean;
  onOpen: (id: string) => void;
  onRename: (id: string, title: string) => Promise<boolean>;
  onDelete: (conversation: Conversation) => void;
}

function ConversationRow({ conversation, current, onOpen, onRename, onDelete }: RowProps) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(conversation.title);
  const input = useRef<HTMLInputElement>(null);
  const title_ = conversation.title || "Untitled";

  useEffect(() => {
    if (editing) {
      input.current?.focus();
      input.current?.select();
    }
  }, [editing]);

  async function save() {
    const value = title.trim();
    if (!value || value === conversation.title) {
      setEditing(false);
      return;
    }
    if (await onRename(conversation.id, value)) setEditing(false);
  }

  if (editing) {
    return (
      <li class="conv-row editing">
        <form
          class="rename-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <label class="sr-only" for={`rename-${conversation.id}`}>
            New title
          </label>
          <input
            ref={input}
            id={`rename-${conversation.id}`}
            value={title}
            maxLength={200}
            onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") {
                e.preventDefault();
                setTitle(conversation.title);
                setEditing(false);
              }
            }}
          />
          <button type="submit" class="btn btn-small btn-primary">
            Save
          </button>
          <button
            type="button"
            class="btn btn-small"
            onClick={() => {
              setTitle(conversation.title);
              setEditing(false);
            }}
          >
            Cancel
          </button>
        </form>
      </li>
    );
  }

  return (
    <li class={`conv-row ${current ? "current" : ""}`}>
      <a
        href={pathFor(conversation.id)}
        class="conv-link"
        aria-current={current ? "page" : undefined}
        onClick={(e) => {
          if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
          e.preventDefault();
          onOpen(conversation.id);
        }}
      >
        <span class="conv-title">{title_}</span>
        <span class="conv-meta">
          {relativeTime(conversation.updated_at)} · {conversation.query_count} message{conversation.query_count === 1 ? "" : "s"}
        </span>
      </a>
      <span class="conv-actions">
        <button
          type="button"
          class="btn-icon btn-ghost"
          aria-label={`Rename “${title_}”`}
          title="Rename"
          onClick={() => {
            setTitle(conversation.title);
            setEditing(true);
          }}
        >
          <IconEdit />
        </button>
        <button
          type="button"
          class="btn-icon btn-ghost danger"
          aria-label={`Delete “${title_}”`}
          title="Delete"
          onClick={() => onDelete(conversation)}
        >
          <IconTrash />
        </button>
      </span>
    </li>
  );
}
