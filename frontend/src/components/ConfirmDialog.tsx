import { useId, useRef } from "preact/hooks";
import { useModal } from "./Modal";

interface Props {
  open: boolean;
  title: string;
  message: string;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  /** Where focus goes on close when the element that opened the dialog is gone. */
  returnFocus?: () => HTMLElement | null;
}

/** A modal confirmation (native <dialog>: focus is trapped, Escape cancels). */
export function ConfirmDialog({ open, title, message, confirmLabel, danger, onConfirm, onCancel, returnFocus }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useModal(ref, open, returnFocus);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-message`}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id={`${id}-title`}>{title}</h2>
      <p id={`${id}-message`}>{message}</p>
      <div class="dialog-actions">
        <button type="button" class="btn" onClick={onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class={`btn ${danger ? "btn-danger" : "btn-primary"}`} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
