"""`code_execution`: a short Python, JavaScript or bash program, run in the bubblewrap sandbox.

The program sees no network and none of the server's files (see `tools/sandbox/command.py`); its
working folder `/tmp` starts empty and is thrown away. With workspaces on, `/workspace` holds a copy
of the caller's workspace, and what the program leaves there is saved back when it ends (regular
files only, within the workspace's limits — or nothing, with the reason in the result). If the
sandbox cannot be set up the call fails as unavailable (not charged): code never runs without it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.tools.base import ToolContext, ToolOutput, ToolUnavailable
from almanac.tools.builtin.code_output import describe_outcome
from almanac.tools.builtin.confined import WorkspaceError
from almanac.tools.builtin.workspace import Workspaces
from almanac.tools.builtin.workspace_sync import WorkspaceCopy, copy_in, save_back
from almanac.tools.sandbox import Sandbox, SandboxUnavailable
from almanac.tools.sandbox.command import INTERPRETERS

MAX_CODE_CHARS = 100_000
MAX_STDIN_CHARS = 100_000
# Beyond the program's own limit: making the run folder, copying the workspace in and out.
SETUP_ALLOWANCE_S = 20.0


class CodeExecutionTool:
    name = "code_execution"
    billing = BillingCategory.TOOL
    source = "builtin"
    output_schema: Mapping[str, Any] | None = None

    def __init__(self, sandbox: Sandbox, *, languages: tuple[str, ...], workspaces: Workspaces | None = None) -> None:
        self._sandbox = sandbox
        self._languages = languages
        self._workspaces = workspaces
        limits = sandbox.limits
        self.timeout_s = limits.timeout_s + SETUP_ALLOWANCE_S
        workspace = " /workspace: the user's files (changes are saved)." if workspaces is not None else ""
        self.description = (
            f"Run a short program in a sandbox; returns exit code, stdout, stderr. No network, no package installs; "
            f"cwd /tmp is empty.{workspace} Limits: {limits.timeout_s:g} s, {limits.memory_mb} MiB, "
            f"{limits.output_bytes // 1024} KiB output."
        )
        self.input_schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {
                "language": {"type": "string", "enum": list(languages)},
                "code": {"type": "string", "minLength": 1, "maxLength": MAX_CODE_CHARS},
                "stdin": {"type": "string", "maxLength": MAX_STDIN_CHARS},
            },
            "required": ["language", "code"],
            "additionalProperties": False,
        }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        language = str(arguments["language"])
        if language not in self._sandbox.interpreters:
            names = " or ".join(f"`{name}`" for name in INTERPRETERS.get(language, (language,)))
            available = ", ".join(sorted(set(self._sandbox.interpreters) & set(self._languages))) or "none"
            return ToolOutput(
                f"{language} cannot run here: no {names} interpreter is installed on this server. "
                f"Languages available: {available}.",
                is_error=True,
                free=True,
            )
        try:
            async with self._sandbox.run_dir(language, str(arguments["code"])) as run:
                if self._workspaces is None:
                    context.report(f"running {language} in the sandbox")
                    outcome = await self._sandbox.execute(run, language=language, stdin=str(arguments.get("stdin", "")))
                    saved = None
                else:
                    async with self._workspaces.lock(context.user_id):
                        workspace = self._workspaces.of(context.user_id)
                        before: WorkspaceCopy = await asyncio.to_thread(copy_in, workspace)
                        context.report(f"running {language} in the sandbox")
                        outcome = await self._sandbox.execute(
                            run, language=language, stdin=str(arguments.get("stdin", "")), workspace=before
                        )
                        folder = run.files.workspace if run.files is not None else None
                        saved = await asyncio.to_thread(save_back, workspace, folder, before)
        except SandboxUnavailable as exc:
            raise ToolUnavailable(f"the code sandbox cannot run here: {exc}") from None
        except WorkspaceError as exc:  # the workspace could not be copied in (e.g. its folder is a link)
            return ToolOutput(f"Refused: {exc}.", is_error=True, free=True)
        text, failed = describe_outcome(language, outcome, self._sandbox.limits, saved)
        code = outcome.returncode
        return ToolOutput(
            text,
            is_error=failed,
            data={
                "language": language,
                "exit_code": code,
                "signal": _signal_name(code),
                "timed_out": outcome.timed_out,
                "stopped": outcome.stopped,
                "duration_ms": round(outcome.duration_s * 1000),
                "stdout_truncated": outcome.stdout_size > len(outcome.stdout),
                "stderr_truncated": outcome.stderr_size > len(outcome.stderr),
            },
        )


def _signal_name(code: int | None) -> str | None:
    number = -code if code is not None and code < 0 else code - 128 if code is not None and code > 128 else None
    if number is None:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return None
