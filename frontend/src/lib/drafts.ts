/** Unsent input per conversation, kept across reloads (localStorage; never credentials). */

const PREFIX = "almanac:draft:";

export function loadDraft(key: string): string {
  try {
    return localStorage.getItem(PREFIX + key) ?? "";
  } catch {
    return "";
  }
}

export function saveDraft(key: string, text: string): void {
  try {
    if (text.trim() === "") localStorage.removeItem(PREFIX + key);
    else localStorage.setItem(PREFIX + key, text);
  } catch {
    /* storage full or disabled: drafts are a convenience */
  }
}

/** Remove every draft (on sign-out). */
export function clearDrafts(): void {
  try {
    for (const key of Object.keys(localStorage)) if (key.startsWith(PREFIX)) localStorage.removeItem(key);
  } catch {
    /* ignore */
  }
}
