/**
 * Whether the browser is signed in, and the ways in: an existing session cookie, or the one-time
 * local sign-in link (its token, taken from the address bar by lib/signInLink.ts). API-key
 * sign-in lives in the sign-in form itself.
 */

import { ACCOUNT_DISABLED, api, ApiError } from "../api/client";
import type { User } from "../api/types";

export type Auth =
  | { state: "checking" }
  /** `notice`: why the user is here (signed out, session ended); `linkError`: a sign-in link failed. */
  | { state: "signed_out"; notice: string | null; linkError: string | null }
  | { state: "signed_in"; user: User };

export const SIGNED_OUT = "You are signed out.";
export const SESSION_ENDED = "Your session ended (it expired, was signed out elsewhere, or its API key was revoked). Please sign in again.";
export const KEY_REVOKED = "Your session ended (its API key was revoked).";
export const ACCOUNT_DISABLED_NOTICE =
  "Your account is disabled, so you cannot sign in. Ask the operator of this server to enable it again.";

/** Why a session ended, from the 401's code. */
export function sessionEndedNotice(code: string): string {
  return code === ACCOUNT_DISABLED ? ACCOUNT_DISABLED_NOTICE : SESSION_ENDED;
}
export const LINK_REFUSED =
  "This sign-in link was already used or is not valid. Open the newest link from data/local-sign-in-url, or sign in with an API key.";
export const LINK_UNAVAILABLE = "This server does not offer sign-in links (it is not a local run). Sign in with an API key.";

export function signedOut(notice: string | null = null, linkError: string | null = null): Auth {
  return { state: "signed_out", notice, linkError };
}

/** What to tell the user when redeeming a sign-in link failed. */
export function linkErrorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === ACCOUNT_DISABLED) return ACCOUNT_DISABLED_NOTICE;
    if (error.code === "local_login_unavailable") return LINK_UNAVAILABLE;
    if (error.status === 403 || error.status === 422) return LINK_REFUSED;
    return error.message;
  }
  return "Sign-in failed.";
}

/** Redeem a sign-in link's token: signed in, or signed out with the reason the link failed. */
export async function redeemLink(token: string): Promise<Auth> {
  try {
    return { state: "signed_in", user: await api.signInLocal(token) };
  } catch (error) {
    return signedOut(null, linkErrorMessage(error));
  }
}

/**
 * The state to start in. An existing session wins (a sign-in link in the URL is then left unused:
 * it still works later); without one, the link's token (if any) is redeemed.
 */
export async function resume(token: string | null): Promise<Auth> {
  try {
    return { state: "signed_in", user: await api.me() };
  } catch (error) {
    if (token !== null) return redeemLink(token);
    if (error instanceof ApiError && error.code === ACCOUNT_DISABLED) return signedOut(ACCOUNT_DISABLED_NOTICE);
    const notice = error instanceof ApiError && error.status !== 401 ? error.message : null;
    return signedOut(notice);
  }
}
