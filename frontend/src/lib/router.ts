/** Client-side routes: `/` (a new conversation), `/c/{id}` (a conversation), the pages
 * `/billing`, `/usage`, `/admin` and `/admin/users/{id}`, and `/discussions[/{id}]`. */

import { useEffect, useState } from "preact/hooks";

export type Page = "billing" | "usage" | "admin";

export interface Route {
  conversationId: string | null;
  /** A page instead of a conversation. */
  page?: Page;
  /** /admin/users/{id}: the user the Admin page shows. */
  adminUserId?: string;
  /** /discussions (`id` null) or /discussions/{id}: discussions between models. */
  discussions?: { id: string | null };
}

export function parseRoute(pathname: string): Route {
  const match = /^\/c\/([^/]+)\/?$/.exec(pathname);
  if (match) return { conversationId: decodeURIComponent(match[1]) };
  const page = /^\/(billing|usage|admin)\/?$/.exec(pathname);
  if (page) return { conversationId: null, page: page[1] as Page };
  const user = /^\/admin\/users\/([^/]+)\/?$/.exec(pathname);
  if (user) return { conversationId: null, page: "admin", adminUserId: decodeURIComponent(user[1]) };
  const discussion = /^\/discussions(?:\/([^/]+))?\/?$/.exec(pathname);
  if (discussion) return { conversationId: null, discussions: { id: discussion[1] ? decodeURIComponent(discussion[1]) : null } };
  return { conversationId: null };
}

/** Go to a page's path (`/billing`, `/admin/users/{id}`…); `replace` rewrites the current history entry. */
export function navigatePath(path: string, replace = false): void {
  if (location.pathname + location.search !== path) {
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
  }
  for (const listener of listeners) listener();
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
