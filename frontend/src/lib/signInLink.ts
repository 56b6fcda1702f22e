/**
 * The local sign-in link that `almanac serve` prints: `http://127.0.0.1:8000/#sign-in=<token>`.
 * The token works once. It travels in the fragment (never sent to a server in a request line or
 * a Referer), and the page removes it from the address bar before doing anything else with it, so
 * it does not stay in the history or get shared by copying the URL.
 */

const MARKER = "#sign-in=";
/** The server issues 43 URL-safe characters; it accepts 20 to 200. */
const TOKEN = /^[A-Za-z0-9_-]{20,200}$/;

/** The token in a location hash (`#sign-in=…`), or null when the hash is not a sign-in link. */
export function tokenFromHash(hash: string): string | null {
  if (!hash.startsWith(MARKER)) return null;
  const raw = hash.slice(MARKER.length);
  let token: string;
  try {
    token = decodeURIComponent(raw).trim();
  } catch {
    token = raw.trim();
  }
  return token === "" ? null : token;
}

/**
 * The token in what a user pasted: the whole link, its `#sign-in=…` part, or the bare token.
 * Null when it is none of these (so the form can say so without asking the server).
 */
export function tokenFromInput(text: string): string | null {
  const value = text.trim();
  if (value === "") return null;
  const at = value.indexOf(MARKER);
  const token = at >= 0 ? tokenFromHash(value.slice(at)) : value;
  return token !== null && TOKEN.test(token) ? token : null;
}

/**
 * If the address bar holds a sign-in link, remove the fragment from it at once (replacing the
 * history entry, so Back does not bring it back) and return the token; else null.
 */
export function takeSignInToken(loc: Location = location, hist: History = history): string | null {
  if (!loc.hash.startsWith(MARKER)) return null;
  const token = tokenFromHash(loc.hash);
  hist.replaceState(hist.state, "", `${loc.pathname}${loc.search}`);
  return token;
}
