import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ApiError, onUnauthorized } from "./api/client";
import type { Conversation, Credits, User } from "./api/types";
import { ChatStore } from "./chat/store";
import { ChatView } from "./components/ChatView";
import { ConfirmDialog } from "./components/ConfirmDialog";
import { Header } from "./components/Header";
import { SignIn } from "./components/SignIn";
import { Sidebar } from "./components/Sidebar";
import { clearDrafts } from "./lib/drafts";
import { navigate, useRoute } from "./lib/router";

const PAGE = 100;

type Auth = { state: "checking" } | { state: "signed_out"; notice: string | null } | { state: "signed_in"; user: User };

export function App() {
  const [auth, setAuth] = useState<Auth>({ state: "checking" });

  useEffect(() => {
    onUnauthorized(() =>
      setAuth((current) =>
        current.state === "signed_in" ? { state: "signed_out", notice: "Your session ended. Please sign in again." } : current,
      ),
    );
    api.me().then(
      (user) => setAuth({ state: "signed_in", user }),
      (error) =>
        setAuth({
          state: "signed_out",
          notice: error instanceof ApiError && error.status !== 401 ? error.message : null,
        }),
    );
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
    return <SignIn notice={auth.notice} onSignedIn={(user) => setAuth({ state: "signed_in", user })} />;
  }
  return (
    <Shell
      key={auth.user.id}
      user={auth.user}
      onSignedOut={() => setAuth({ state: "signed_out", notice: "You are signed out." })}
    />
  );
}

function Shell({ user, onSignedOut }: { user: User; onSignedOut: () => void }) {
  const route = useRoute();
  const [newKey, setNewKey] = useState(() => `new:${Date.now().toString(36)}`);
  const [conversations, setConversations] = useState<Conversation[] | null>(null);
  const [total, setTotal] = useState(0);
  const limit = useRef(PAGE);
  const [listError, setListError] = useState<string | null>(null);
  const [credits, setCredits] = useState<Credits | null>(null);
  const [drawer, setDrawer] = useState(false);
  const [deleting, setDeleting] = useState<Conversation | null>(null);
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

  const refreshCredits = useCallback(async () => {
    try {
      setCredits(await api.credits());
    } catch {
      /* keep the last known figures */
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

  const key = route.conversationId ?? newKey;
  currentKey.current = key;
  const current = conversations?.find((c) => c.id === store.resolve(key));
  const shown = store.get(key);
  const title =
    current?.title || shown.title || (shown.id ? (shown.turns[0]?.query ?? "").slice(0, 80) : "") || (route.conversationId ? "Conversation" : "New chat");

  useEffect(() => {
    document.title = route.conversationId ? `${title} · Almanac` : "Almanac";
  }, [title, route.conversationId]);

  function newChat() {
    const fresh = store.get(newKey);
    // Reuse the blank new chat; start another when the current one has begun.
    if (store.resolve(newKey) !== newKey || fresh.turns.length > 0) setNewKey(`new:${Date.now().toString(36)}`);
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
      if (store.resolve(key) === target.id) navigate(null, true);
    } catch (error) {
      setListError(error instanceof ApiError ? error.message : "Deleting failed.");
    }
  }

  async function signOut() {
    store.abortAll();
    try {
      await api.signOut();
    } catch {
      /* the cookie may already be gone */
    }
    clearDrafts();
    navigate(null, true);
    onSignedOut();
  }

  useEffect(() => {
    if (!drawer) return;
    const close = (event: KeyboardEvent) => event.key === "Escape" && setDrawer(false);
    document.addEventListener("keydown", close);
    return () => document.removeEventListener("keydown", close);
  }, [drawer]);

  return (
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
        onSignOut={signOut}
        onClose={() => setDrawer(false)}
      />
      <div class="main-col">
        <Header title={title} credits={credits} onMenu={() => setDrawer(!drawer)} menuOpen={drawer} />
        <ChatView store={store} storeKey={key} credits={credits} />
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
    </div>
  );
}
