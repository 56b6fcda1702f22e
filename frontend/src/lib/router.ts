/** Client-side routes: `/` (a new conversation) and `/c/{id}` (a conversation). */

import { useEffect, useState } from "preact/hooks";

export interface Route {
  conversationId: string | null;
}

export function parseRoute(pathname: string): Route {
  const match = /^\/c\/([^/]+)\/?$/.exec(pathname);
  return { conversationId: match ? decodeURIComponent(match[1]) : null };
}

export function pathFor(conversationId: string | null): string {
  return conversationId ? `/c/${encodeURIComponent(conversationId)}` : "/";
}

const listeners = new Set<() => void>();

/** Go to a conversation (or `/`); `replace` rewrites the current history entry. */
export function navigate(conversationId: string | null, replace = false): void {
  const path = pathFor(conversationId);
  if (location.pathname !== path) {
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
  }
  for (const listener of listeners) listener();
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname));
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return route;
}
