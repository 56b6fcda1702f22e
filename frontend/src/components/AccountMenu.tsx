import type { RefObject } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { User } from "../api/types";
import { planName } from "./Sidebar";

export interface MenuItem {
  label: string;
  onSelect: () => void;
}

interface Props {
  user: User;
  items: MenuItem[];
  /** The menu button (dialogs opened from the menu give focus back to it). */
  buttonRef: RefObject<HTMLButtonElement>;
}

/**
 * The account button in the header and its menu (ARIA menu button: Enter, Space or ArrowDown
 * open it on the first item, ArrowUp on the last; arrows, Home and End move; Escape closes it and
 * returns to the button; Tab or a click elsewhere closes it).
 */
export function AccountMenu({ user, items, buttonRef }: Props) {
  const [open, setOpen] = useState(false);
  const [focusIndex, setFocusIndex] = useState(0);
  const wrap = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLUListElement>(null);

  useEffect(() => {
    if (!open) return;
    list.current?.querySelectorAll<HTMLElement>("[role=menuitem]")[focusIndex]?.focus();
  }, [open, focusIndex]);

  useEffect(() => {
    if (!open) return;
    const away = (event: Event) => {
      if (!wrap.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", away);
    return () => document.removeEventListener("pointerdown", away);
  }, [open]);

  function show(index: number) {
    setFocusIndex((index + items.length) % items.length);
    setOpen(true);
  }

  function close(refocus: boolean) {
    setOpen(false);
    if (refocus) buttonRef.current?.focus();
  }

  function onButtonKey(event: KeyboardEvent) {
    if (event.key === "ArrowDown" || event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      show(0);
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      show(items.length - 1);
    }
  }

  function onMenuKey(event: KeyboardEvent) {
    const moves: Record<string, number> = { ArrowDown: focusIndex + 1, ArrowUp: focusIndex - 1, Home: 0, End: items.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      show(moves[event.key]);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close(true);
    } else if (event.key === "Tab") {
      close(false);
    }
  }

  function select(item: MenuItem) {
    close(true);
    item.onSelect();
  }

  return (
    <div class="account-menu" ref={wrap}>
      <button
        ref={buttonRef}
        type="button"
        class="account-button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? "account-menu-list" : undefined}
        aria-label={`Account: ${user.email}`}
        title={user.email}
        onClick={() => (open ? close(false) : show(0))}
        onKeyDown={onButtonKey}
      >
        <span aria-hidden="true">{user.email.slice(0, 1).toUpperCase()}</span>
      </button>
      {open && (
        <div class="account-popup">
          <p class="account-popup-who">
            <span class="account-popup-email">{user.email}</span>
            <span class="muted small">{planName(user.plan)} plan</span>
          </p>
          <ul class="menu" role="menu" id="account-menu-list" aria-label="Account" ref={list} onKeyDown={onMenuKey}>
            {items.map((item, index) => (
              <li role="none" key={item.label}>
                <button
                  type="button"
                  role="menuitem"
                  tabIndex={index === focusIndex ? 0 : -1}
                  onClick={() => select(item)}
                >
                  {item.label}
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
