import { Modal } from "./Modal";

interface Props {
  open: boolean;
  onClose: () => void;
}

/** The heading of the README section that explains connecting a real model (kept in step by hand). */
export const README_SECTION = "Connect a real model";

/** How to connect a real model instead of the built-in offline one: the few settings it takes. */
export function ConnectModelDialog({ open, onClose }: Props) {
  return (
    <Modal open={open} title="Connect a real model" onClose={onClose} class="connect-dialog">
      <div class="modal-body connect-model" data-testid="connect-model">
        <p>
          Almanac is answering with its built-in <strong>offline model</strong>: it finds passages in the local
          documentation index and quotes them, but cannot write answers of its own. To get real answers, set one of these
          in the server's environment (or its <code>.env</code> file) and restart it:
        </p>
        <h3>Anthropic</h3>
        <pre class="settings-snippet" tabIndex={0}>
          <code>ANTHROPIC_API_KEY=sk-ant-…</code>
        </pre>
        <p class="muted small">
          Uses <code>claude-haiku-4-5</code> unless <code>ANTHROPIC_MODEL</code> names another.
        </p>
        <h3>An OpenAI-compatible server (OpenAI, Ollama, llama.cpp, vLLM…)</h3>
        <pre class="settings-snippet" tabIndex={0}>
          <code>
            {"OPENAI_BASE_URL=http://localhost:11434/v1   # Ollama; llama.cpp: http://localhost:8080/v1\n"}
            {"OPENAI_API_KEY=…                            # if the server needs one\n"}
            {"OPENAI_MODEL=qwen2.5:7b                     # the server's name for the model"}
          </code>
        </pre>
        <p>
          Then restart (<code>make serve</code>). The README's section “{README_SECTION}” has the details.
        </p>
      </div>
    </Modal>
  );
}
