import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api/client";
import type { ToolInfo } from "../api/types";
import { credits as creditsText } from "../lib/format";
import { Modal } from "./Modal";

interface Props {
  open: boolean;
  onClose: () => void;
}

/** The tools a chat can use right now (GET /api/tools), with what a call costs. */
export function ToolsDialog({ open, onClose }: Props) {
  return (
    <Modal open={open} title="Tools a chat can use" onClose={onClose} class="tools-dialog">
      <ToolList />
    </Modal>
  );
}

function price(tool: ToolInfo): string {
  if (tool.credits === 0) return "free";
  const each = `${creditsText(tool.credits)}${tool.billing === "documentation" ? " once per question" : " a call"}`;
  return each;
}

function ToolList() {
  const [tools, setTools] = useState<ToolInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.tools().then(
      (list) => setTools(list.data),
      (e) => setError(e instanceof ApiError ? e.message : "The tools could not be loaded."),
    );
  }, []);
  return (
    <div class="modal-body">
      <p class="muted small">The model calls these by itself when a question needs them; each call shows as a card.</p>
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      {tools === null && !error && <p class="muted small">Loading…</p>}
      {tools?.length === 0 && <p class="muted">No tools: answers come from the model alone.</p>}
      <ul class="tool-list" data-testid="tool-list">
        {tools?.map((tool) => (
          <li key={tool.name}>
            <div class="tool-list-head">
              <code>{tool.name}</code>
              <span class="muted small">
                {tool.source === "builtin" ? "built in" : `MCP server ${tool.source}`} · {price(tool)}
              </span>
            </div>
            <p class="small">{firstSentence(tool.description)}</p>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A tool's description up to its first sentence (they can run long). */
export function firstSentence(text: string, max = 220): string {
  const line = text.trim().split(/\n\s*\n/)[0].replace(/\s+/g, " ");
  const end = line.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? line.slice(0, end + 1) : line;
  return sentence.length > max ? `${sentence.slice(0, max - 1)}…` : sentence;
}
