import type { ComponentChildren } from "preact";
import { navigatePath } from "../lib/router";

/** A link inside the app: followed without reloading the page (a new tab still works). */
export function Link({ href, children, class: cls }: { href: string; children: ComponentChildren; class?: string }) {
  return (
    <a
      href={href}
      class={cls}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigatePath(href);
      }}
    >
      {children}
    </a>
  );
}
