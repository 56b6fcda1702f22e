import type { ComponentChildren, RefObject } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import { IconClose } from "./icons";

/**
 * Open or close a native <dialog> as a modal (the browser traps focus, makes the rest of the page
 * inert and turns Escape into a `cancel` event). Where showModal is missing (jsdom), it just opens.
 */
export function syncDialog(dialog: HTMLDialogElement, open: boolean): void {
  if (open && !dialog.open) {
    if (typeof dialog.showModal === "function") dialog.showModal();
    else dialog.setAttribute("open", "");
  } else if (!open && dialog.open) {
    if (typeof dialog.close === "function") dialog.close();
    else dialog.removeAttribute("open");
  }
}

/**
 * Show `ref`'s dialog as a modal while `open` is true. On opening, remember what had focus; on
 * closing, give focus back to it — or, when that element is gone (e.g. a menu item), to
 * `fallback()` — after the dialog has closed (while it is open the rest of the page is inert).
 */
export function useModal(ref: RefObject<HTMLDialogElement>, open: boolean, fallback?: () => HTMLElement | null): void {
  const opener = useRef<HTMLElement | null>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      syncDialog(dialog, true);
    } else if (!open && dialog.open) {
      syncDialog(dialog, false);
      const target = opener.current?.isConnected ? opener.current : (fallback?.() ?? null);
      target?.focus();
      opener.current = null;
    }
  }, [open]);
}

interface Props {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  class?: string;
  /** Where focus goes on close when the element that opened the dialog is gone. */
  returnFocus?: () => HTMLElement | null;
}

/** A modal dialog with a title and a Close button; its content exists only while it is open. */
export function Modal({ open, title, onClose, children, class: cls = "", returnFocus }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useModal(ref, open, returnFocus);
  return (
    <dialog
      ref={ref}
      class={`modal ${cls}`}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open && (
        <>
          <div class="modal-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" class="btn-icon btn-ghost" aria-label="Close" title="Close" onClick={onClose}>
              <IconClose />
            </button>
          </div>
          {children}
        </>
      )}
    </dialog>
  );
}
