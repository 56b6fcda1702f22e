/** Inline SVG icons (decorative: hidden from screen readers; buttons carry their own labels). */

import type { JSX } from "preact";

function Icon({ children, size = 18, class: cls }: { children: JSX.Element | JSX.Element[]; size?: number; class?: string }) {
  return (
    <svg
      class={`icon ${cls ?? ""}`}
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      {children}
    </svg>
  );
}

export const IconPlus = () => <Icon><path d="M12 5v14M5 12h14" /></Icon>;
export const IconMenu = () => <Icon><path d="M4 6h16M4 12h16M4 18h16" /></Icon>;
export const IconClose = () => <Icon><path d="M6 6l12 12M18 6L6 18" /></Icon>;
export const IconSend = () => <Icon><path d="M5 12h14M13 6l6 6-6 6" /></Icon>;
export const IconStop = () => <Icon><rect x="6" y="6" width="12" height="12" rx="2" fill="currentColor" /></Icon>;
export const IconEdit = () => <Icon size={16}><path d="M4 20h4L19 9l-4-4L4 16v4z" /><path d="M14 6l4 4" /></Icon>;
export const IconTrash = () => <Icon size={16}><path d="M4 7h16M10 11v6M14 11v6M6 7l1 12a2 2 0 002 2h6a2 2 0 002-2l1-12M9 7V4h6v3" /></Icon>;
export const IconCopy = () => <Icon size={16}><rect x="9" y="9" width="11" height="11" rx="2" /><path d="M5 15V5a2 2 0 012-2h10" /></Icon>;
export const IconCheck = () => <Icon size={16}><path d="M5 12l5 5 9-10" /></Icon>;
export const IconAlert = () => <Icon size={16}><path d="M12 8v5M12 16.5v.5" /><circle cx="12" cy="12" r="9" /></Icon>;
export const IconChevron = () => <Icon size={16} class="chevron"><path d="M9 6l6 6-6 6" /></Icon>;
export const IconTool = () => <Icon size={16}><path d="M14.7 6.3a4 4 0 00-5.4 5.4L4 17l3 3 5.3-5.3a4 4 0 005.4-5.4l-2.5 2.5-2.5-.5-.5-2.5 2.5-2.5z" /></Icon>;
export const IconBook = () => <Icon size={16}><path d="M4 19V5a2 2 0 012-2h13v16H6a2 2 0 00-2 2zm0 0a2 2 0 002 2h13" /></Icon>;
export const IconCoins = () => <Icon size={16}><ellipse cx="12" cy="6" rx="7" ry="3" /><path d="M5 6v6c0 1.7 3.1 3 7 3s7-1.3 7-3V6M5 12v6c0 1.7 3.1 3 7 3s7-1.3 7-3v-6" /></Icon>;
export const IconRetry = () => <Icon size={16}><path d="M4 12a8 8 0 0114-5.3L20 9M20 4v5h-5M20 12a8 8 0 01-14 5.3L4 15M4 20v-5h5" /></Icon>;
export const IconSignOut = () => <Icon size={16}><path d="M15 4h3a2 2 0 012 2v12a2 2 0 01-2 2h-3M10 17l-5-5 5-5M5 12h11" /></Icon>;

export function Logo({ size = 28 }: { size?: number }) {
  return (
    <svg class="logo" width={size} height={size} viewBox="0 0 32 32" aria-hidden="true" focusable="false">
      <rect width="32" height="32" rx="8" class="logo-bg" />
      <path
        d="M9 23V10.5c0-1 .8-1.5 1.7-1.5H21c.6 0 1 .4 1 1V23H11.2c-.9 0-1.4.4-1.4 1s.5 1 1.4 1H22"
        fill="none"
        class="logo-fg"
        stroke-width="2"
        stroke-linecap="round"
        stroke-linejoin="round"
      />
    </svg>
  );
}
