"""The workspace file tools: `read_file`, `write_file` and `list_files`, each confined to the
caller's own workspace folder (see `workspace.py` and `confined.py`). A refused or failed
operation (a path outside the workspace, a link, a missing file, a limit) is an error the model
reads, and costs nothing: nothing was done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.tools.base import ToolContext, ToolOutput
from almanac.tools.builtin.confined import WorkspaceError
from almanac.tools.builtin.text import fenced
from almanac.tools.builtin.workspace import Workspaces

MAX_READ_BYTES = 100_000
MAX_LISTED = 500
_PATH = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1024,
    "description": "Relative to the workspace, e.g. 'notes.txt'.",
}


class _WorkspaceTool:
    billing = BillingCategory.TOOL
    source = "builtin"
    output_schema: Mapping[str, Any] | None = None

    def __init__(self, workspaces: Workspaces) -> None:
        self._workspaces = workspaces


def _refused(exc: WorkspaceError) -> ToolOutput:
    return ToolOutput(f"Refused: {exc}.", is_error=True, free=True)


class ReadFileTool(_WorkspaceTool):
    name = "read_file"
    description = f"Read a text file (up to {MAX_READ_BYTES:,} bytes) from the user's private workspace."
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {"path": _PATH},
        "required": ["path"],
        "additionalProperties": False,
    }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        path = str(arguments["path"])
        try:
            workspace = self._workspaces.of(context.user_id)
            data, size = await asyncio.to_thread(workspace.read, path, max_bytes=MAX_READ_BYTES)
        except WorkspaceError as exc:
            return _refused(exc)
        if b"\x00" in data[:8192]:
            return ToolOutput(f"{path} is a binary file of {size:,} bytes; its content is not shown.")
        text = data.decode("utf-8", errors="replace")
        cut = f"\n[cut at {len(data):,} of {size:,} bytes]" if size > len(data) else ""
        return ToolOutput(f"{path} ({size:,} bytes):\n{fenced(text)}{cut}", data={"path": path, "size": size})


class WriteFileTool(_WorkspaceTool):
    name = "write_file"
    description = (
        "Create or replace a text file in the user's private workspace (append=true appends); folders are created."
    )
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": _PATH,
            "content": {"type": "string", "maxLength": 10_000_000},
            "append": {"type": "boolean"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        path = str(arguments["path"])
        data = str(arguments["content"]).encode()
        append = bool(arguments.get("append", False))
        try:
            workspace = self._workspaces.of(context.user_id)
            async with self._workspaces.lock(context.user_id):
                size = await asyncio.to_thread(workspace.write, path, data, append=append)
        except WorkspaceError as exc:
            return _refused(exc)
        verb = "Appended" if append else "Wrote"
        text = f"{verb} {len(data):,} byte{'s' if len(data) != 1 else ''} to {path} (now {size:,} bytes)."
        return ToolOutput(text, data={"path": path, "size": size})


class ListFilesTool(_WorkspaceTool):
    name = "list_files"
    description = "List the files (and sizes) in the user's private workspace, optionally under one folder."
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {"folder": {**_PATH, "description": "Only under this folder."}},
        "additionalProperties": False,
    }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        folder = str(arguments.get("folder") or "").strip("/")
        try:
            workspace = self._workspaces.of(context.user_id)
            entries = await asyncio.to_thread(workspace.entries)
        except WorkspaceError as exc:
            return _refused(exc)
        if folder:
            entries = [e for e in entries if e.path.startswith(folder + "/")]
        files = [e for e in entries if e.kind != "folder"]
        if not files:
            where = f"under {folder}/" if folder else "in the workspace"
            return ToolOutput(f"There are no files {where} yet.", free=True)
        lines = [f"{len(files):,} file{'s' if len(files) != 1 else ''} ({sum(e.size for e in files):,} bytes):"]
        for entry in files[:MAX_LISTED]:
            if entry.kind == "file":
                lines.append(f"- {entry.path}  {entry.size:,} bytes")
            else:
                kind = "symbolic link, not followed" if entry.kind == "link" else "not a regular file"
                lines.append(f"- {entry.path}  ({kind})")
        if len(files) > MAX_LISTED:
            lines.append(f"[{len(files) - MAX_LISTED:,} more not listed]")
        return ToolOutput("\n".join(lines), data={"files": [e.path for e in files[:MAX_LISTED]]})
