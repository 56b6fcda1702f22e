/** What the signed-in shell knows about the account and the server, for any component below it. */

import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Credits, ServerConfig } from "../api/types";

export interface Account {
  credits: Credits | null;
  /** null until GET /api/config answered (or when it failed). */
  config: ServerConfig | null;
}

export const AccountContext = createContext<Account>({ credits: null, config: null });

export function useAccount(): Account {
  return useContext(AccountContext);
}
