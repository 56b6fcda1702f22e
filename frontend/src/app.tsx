import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ApiError, onUnauthorized } from "./api/client";
import type { Conversation, Credits, ServerConfig, Strategy, User } from "./api/types";
import { ChatStore } from "./chat/store";
import { ChatView } from "./components/ChatView";
import type { MenuItem } from "./components/AccountMenu";
import { ConfirmDialog } from "./components/ConfirmDialog";
import { GithubDialog } from "./components/GithubDialog";
import { Header } from "./components/Header";
import { KeysDialog } from "./components/KeysDialog";
import { OperationsPage, pageTitle } from "./components/OperationsPage";
import { DiscussionsPage } from "./discussions/DiscussionsPage";
import { SignIn } from "./components/SignIn";
import { Sidebar } from "./components/Sidebar";
import { AccountContext } from "./lib/account";
import { nextRenewal } from "./lib/credits";
import { clearDrafts } from "./lib/drafts";
import { navigate, navigatePath, useRoute } from "./lib/router";
import { KEY_REVOKED, resume, sessionEndedNotice, SIGNED_OUT, signedOut, type Auth } from "./lib/session";
import { takeSignInToken } from "./lib/signInLink";

const PAGE = 100;

interface AppProps {
  /** The token of a local sign-in link the page was opened with (already removed from the URL). */
  signInToken: string | null;
}

export function App({ signInToken }: AppProps) {
  const [auth, setAuth] = useState<Auth>({ state: "checking" });
  const authNow = useRef<Auth>(auth);
  authNow.current = auth;

  useEffect(() => {
    onUnauthorized((code) => setAuth((now) => (now.state === "signed_in" ? signedOut(sessionEndedNotice(code)) : now)));
    void resume(signInToken).then(setAuth);
    // A sign-in link opened in this tab later (pasted into the address bar) only changes the hash.
    const onHash = () => {
      const token = takeSignInToken();
      if (token === null || authNow.current.state === "signed_in") return;
      setAuth({ state: "checking" });
      void resume(token).then(setAuth);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  if (auth.state === "checking") {
    return (
      <div class="boot" aria-busy="true">
        <span class="spinner" />
        <span class="sr-only">Loading Almanac…</span>
      </div>
    );
  }
  if (auth.state === "signed_out") {
    return (
      <SignIn
        notice={auth.notice}
        linkError={auth.linkError}
        onSignedIn={(user) => setAuth({ state: "signed_in", user })}
      />
    );
  }
  return (
    <Shell key={auth.user.id} user={auth.user} onSignedOut={(notice) => setAuth(signedOut(notice))} />
  );
}

function Shell({ user, onSignedOut }: { user: User; onSignedOut: (notice: string) => void }) {
  const route = useRoute();
  const [newKey, setNewKey] = useState(() => `new:${Date.now().toString(36)}`);
  const [conversations, setConversations] = useState<Conversation[] | null>(null);
  const [total, setTotal] = useState(0);
  const limit = useRef(PAGE);
  const [listError, setListError] = useState<string | null>(null);
  const [credits, setCredits] = useState<Credits | null>(null);
  const [drawer, setDrawer] = useState(false);
  const [deleting, setDeleting] = useState<Conversation | null>(null);
  const [dialog, setDialog] = useState<"keys" | "github" | null>(null);
  const [config, setConfig] = useState<ServerConfig | null>(null);
  const [github, setGithub] = useState(true); // hidden if the GitHub route turns out to be missing
  const [newStrategy, setNewStrategy] = useState<Strategy | null>(null); // a new chat's choice
  const accountButton = useRef<HTMLButtonElement>(null);
  const currentKey = useRef<string>("");

  const refreshList = useCallback(async () => {
    try {
      const list = await api.conversations(limit.current);
      setConversations(list.data);
      setTotal(list.count);
      setListError(null);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) setListError("The conversation list could not be loaded.");
    }
  }, []);

  const refreshCredits = useCallback(async (): Promise<Credits | null> => {
    try {
      const now = await api.credits();
      setCredits(now);
      return now;
    } catch {
      return null; /* keep the last known figures */
    }
  }, []);

  const store = useMemo(
    () =>
      new ChatStore({
        conversationStarted: (localKey, id) => {
          if (currentKey.current === localKey) navigate(id, true);
          void refreshList();
        },
        answerEnded: (_id, end) => {
          if (end) setCredits((c) => (c ? { ...c, balance: end.credits_remaining } : c));
          void refreshCredits();
          void refreshList();
        },
      }),
    [refreshList, refreshCredits],
  );

  useEffect(() => {
    void refreshList();
    void refreshCredits();
  }, [refreshList, refreshCredits]);

  // Leaving the shell (signed out, session ended): no stream keeps running for it.
  useEffect(() => () => store.abortAll(), [store]);

  // What the server offers (offline model, payments, GitHub tools, strategies).
  useEffect(() => {
    api.config().then(setConfig, () => setConfig(null));
  }, []);

  // Credits come back (a new UTC day, an operator's grant): look again when the tab is seen again,
  // and when the allowance renews.
  useEffect(() => {
    const look = () => document.visibilityState === "visible" && void refreshCredits();
    window.addEventListener("focus", look);
    document.addEventListener("visibilitychange", look);
    return () => {
      window.removeEventListener("focus", look);
      document.removeEventListener("visibilitychange", look);
    };
  }, [refreshCredits]);
  useEffect(() => {
    if (!credits) return;
    const wait = nextRenewal(credits, new Date()).at.getTime() - Date.now() + 5_000;
    if (wait > 2 ** 31 - 1) return;
    const timer = window.setTimeout(() => void refreshCredits(), Math.max(1_000, wait));
    return () => window.clearTimeout(timer);
  }, [credits?.period, refreshCredits]);

  const accountItems: MenuItem[] = [
    { label: "API keys", onSelect: () => setDialog("keys") },
    ...(github && config?.github_tools ? [{ label: "GitHub token", onSelect: () => setDialog("github") }] : []),
    { label: "Billing", onSelect: () => navigatePath("/billing") },
    { label: "Usage", onSelect: () => navigatePath("/usage") },
    ...(user.role === "admin" ? [{ label: "Admin", onSelect: () => navigatePath("/admin") }] : []),
    { label: "Sign out", onSelect: () => void signOut() },
  ];

  const key = route.conversationId ?? newKey;
  currentKey.current = key;
  const current = conversations?.find((c) => c.id === store.resolve(key));
  const shown = store.get(key);
  const title = route.discussions
    ? "Discussions"
    : route.page
    ? pageTitle(route.page)
    : current?.title || shown.title || (shown.id ? (shown.turns[0]?.query ?? "").slice(0, 80) : "") || (route.conversationId ? "Conversation" : "New chat");

  useEffect(() => {
    document.title = route.conversationId || route.page || route.discussions ? `${title} · Almanac` : "Almanac";
  }, [title, route.conversationId, route.page, route.discussions]);

  function newChat() {
    const fresh = store.get(newKey);
    // Reuse the blank new chat; start another when the current one has begun.
    if (store.resolve(newKey) !== newKey || fresh.turns.length > 0) {
      setNewKey(`new:${Date.now().toString(36)}`);
      setNewStrategy(null);
    }
    navigate(null);
    setDrawer(false);
  }

  async function rename(id: string, newTitle: string): Promise<boolean> {
    try {
      const updated = await api.rename(id, newTitle);
      setConversations((list) => list?.map((c) => (c.id === id ? updated : c)) ?? null);
      store.setTitle(id, updated.title);
      return true;
    } catch (error) {
      setListError(error instanceof ApiError ? error.message : "Renaming failed.");
      return false;
    }
  }

  async function confirmDelete() {
    const target = deleting;
    setDeleting(null);
    if (!target) return;
    try {
      await api.remove(target.id);
      store.forget(target.id);
      setConversations((list) => list?.filter((c) => c.id !== target.id) ?? null);
      setTotal((count) => Math.max(0, count - 1));
      if (store.resolve(key) === target.id) navigate(null, true);
      void refreshList(); // the list and its count as the server has them now
    } catch (error) {
      setListError(error instanceof ApiError ? error.message : "Deleting failed.");
    }
  }

  /** How the open conversation is answered: its own choice, else the user's, else the server's. */
  const conversationId = store.resolve(key);
  const fresh = conversationId.startsWith("new:");
  // The open conversation's own record (loaded with it, so it is right even when the conversation is
  // not among the listed ones), else the list's copy until it has loaded.
  const stored = fresh ? undefined : shown.strategy !== undefined ? shown.strategy : current?.strategy;
  const strategy: Strategy =
    (fresh ? newStrategy : stored) ?? user.default_strategy ?? config?.strategies.default ?? "direct";

  async function changeStrategy(next: Strategy) {
    if (fresh) {
      setNewStrategy(next);
      return;
    }
    try {
      const updated = await api.setStrategy(conversationId, next);
      store.setStrategy(updated.id, updated.strategy ?? null);
      setConversations((list) => list?.map((c) => (c.id === updated.id ? updated : c)) ?? null);
    } catch (error) {
      setListError(error instanceof ApiError ? error.message : "The strategy could not be changed.");
    }
  }

  function leave() {
    store.abortAll();
    clearDrafts();
    navigate(null, true);
  }

  /** Sign out: end the session on the server, then show the sign-in screen. */
  async function signOut() {
    leave();
    try {
      await api.signOut();
    } catch {
      /* the cookie may already be gone */
    }
    onSignedOut(SIGNED_OUT);
  }

  /** The session already ended (its key was revoked): say so at once, then clear the dead cookie. */
  function sessionEnded(notice: string) {
    leave();
    onSignedOut(notice);
    api.signOut().catch(() => undefined);
  }

  useEffect(() => {
    if (!drawer) return;
    const close = (event: KeyboardEvent) => event.key === "Escape" && setDrawer(false);
    document.addEventListener("keydown", close);
    return () => document.removeEventListener("keydown", close);
  }, [drawer]);

  return (
    <AccountContext.Provider value={{ credits, config }}>
    <div class="shell">
      <a class="skip-link" href="#composer-input">
        Skip to the message box
      </a>
      <Sidebar
        user={user}
        conversations={conversations}
        error={listError}
        currentId={store.resolve(key)}
        open={drawer}
        onNew={newChat}
        onDiscussions={() => {
          navigatePath("/discussions");
          setDrawer(false);
        }}
        onOpen={(id) => {
          navigate(id);
          setDrawer(false);
        }}
        total={total}
        onMore={() => {
          limit.current += PAGE;
          void refreshList();
        }}
        onRename={rename}
        onDelete={setDeleting}
        onSignOut={() => void signOut()}
        onClose={() => setDrawer(false)}
      />
      <div class="main-col">
        <Header
          title={title}
          credits={credits}
          onMenu={() => setDrawer(!drawer)}
          menuOpen={drawer}
          user={user}
          accountItems={accountItems}
          accountButton={accountButton}
        />
        {route.discussions ? (
          <DiscussionsPage discussionId={route.discussions.id} onCreditsChanged={() => void refreshCredits()} />
        ) : route.page ? (
          <OperationsPage route={route} user={user} credits={credits} refreshCredits={refreshCredits} />
        ) : (
          <ChatView store={store} storeKey={key} strategy={strategy} onStrategy={(next) => void changeStrategy(next)} />
        )}
      </div>
      <ConfirmDialog
        open={deleting !== null}
        title="Delete this conversation?"
        message={`“${deleting?.title ?? ""}” and its whole history will be deleted. This cannot be undone.`}
        confirmLabel="Delete"
        danger
        onConfirm={confirmDelete}
        onCancel={() => setDeleting(null)}
      />
      <KeysDialog
        open={dialog === "keys"}
        onClose={() => setDialog(null)}
        onSessionEnded={() => sessionEnded(KEY_REVOKED)}
        returnFocus={() => accountButton.current}
      />
      {github && (
        <GithubDialog
          open={dialog === "github"}
          onClose={() => setDialog(null)}
          onUnavailable={() => setGithub(false)}
          returnFocus={() => accountButton.current}
        />
      )}
    </div>
    </AccountContext.Provider>
  );
}
