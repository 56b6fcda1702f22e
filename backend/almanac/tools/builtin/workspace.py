"""Per-user workspace folders: `<root>/<user_id>/`, created 0700; every operation stays inside it
(see `confined.py` for how paths are checked and opened). Limits: a largest file, a total size and
a number of files per workspace. Errors are `WorkspaceError`s whose message is meant for the model.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from almanac.tools.builtin.confined import (
    Entry,
    Tree,
    WorkspaceError,
    WorkspaceLimits,
    descend,
    existing_size,
    open_dir,
    open_file,
    read_tree,
    read_up_to,
    replace_file,
    split_path,
    walk,
    write_all,
)

_USER_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Workspaces:
    """The workspaces of every user under one root folder, with one lock per user."""

    def __init__(self, root: Path, limits: WorkspaceLimits | None = None) -> None:
        self.root = root
        self.limits = limits or WorkspaceLimits()
        self._locks: dict[str, asyncio.Lock] = {}

    def of(self, user_id: str) -> Workspace:
        """The caller's workspace (created on first use)."""
        if not _USER_ID.match(user_id):
            raise WorkspaceError("this user has no workspace")
        return Workspace(self.root / user_id, self.limits)

    def lock(self, user_id: str) -> asyncio.Lock:
        """Held while a user's workspace changes (writes, saving a program's files)."""
        return self._locks.setdefault(user_id, asyncio.Lock())


class Workspace:
    """One user's folder; every method is blocking (call it in a thread)."""

    def __init__(self, folder: Path, limits: WorkspaceLimits) -> None:
        self.folder = folder
        self.limits = limits

    @contextmanager
    def _root(self, *, create: bool = False) -> Iterator[int]:
        """The workspace folder's descriptor; made (0700) only for writes, so reads leave no trace."""
        if create:
            self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                self.folder.mkdir(mode=0o700)
            except FileExistsError:
                pass
        fd = open_dir(str(self.folder), None, "the workspace")
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def _parent(self, parts: tuple[str, ...], *, create: bool) -> Iterator[int]:
        """A descriptor of the folder holding `parts[-1]`, reached without following links."""
        with self._root(create=create) as root:
            fd = descend(root, parts[:-1], create=create)
            try:
                yield fd
            finally:
                os.close(fd)

    def read(self, path: str, *, max_bytes: int) -> tuple[bytes, int]:
        """Up to `max_bytes` of a regular file, and its whole size."""
        parts = split_path(path)
        if not self.folder.exists():
            raise WorkspaceError(f"{path}: no such file (the workspace is empty)")
        with self._parent(parts, create=False) as parent:
            fd = open_file(parts[-1], parent, path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                size = os.fstat(fd).st_size
                return read_up_to(fd, max_bytes), size
            finally:
                os.close(fd)

    def write(self, path: str, data: bytes, *, append: bool = False) -> int:
        """Create or replace (or append to) a file; returns its new size. Limits are checked first."""
        parts = split_path(path)
        with self._parent(parts, create=True) as parent:
            name = parts[-1]
            current = existing_size(name, parent, path)
            new_size = (current or 0) + len(data) if append else len(data)
            if new_size > self.limits.max_file_bytes:
                raise WorkspaceError(f"{path} would be {new_size:,} bytes; the limit is {self.limits.max_file_bytes:,}")
            total, files = self.totals()
            total_after = total - (current or 0) + new_size
            if total_after > self.limits.max_total_bytes:
                raise WorkspaceError(
                    f"the workspace would hold {total_after:,} bytes; the limit is {self.limits.max_total_bytes:,}"
                )
            if current is None and files + 1 > self.limits.max_files:
                raise WorkspaceError(f"the workspace already holds {files:,} files (the limit)")
            if append and current is not None:
                fd = open_file(name, parent, path, os.O_WRONLY | os.O_APPEND)
                try:
                    write_all(fd, data)
                finally:
                    os.close(fd)
            else:
                replace_file(name, parent, data)
            return new_size

    def delete(self, path: str) -> bool:
        """Remove a file (never a folder, never through a link); False if it did not exist."""
        parts = split_path(path)
        try:
            with self._parent(parts, create=False) as parent:
                if existing_size(parts[-1], parent, path) is None:
                    return False
                os.unlink(parts[-1], dir_fd=parent)
                return True
        except WorkspaceError:
            return False

    def entries(self, *, limit: int = 10_000) -> list[Entry]:
        """Everything in the workspace (links listed, never followed), sorted by path."""
        found: list[Entry] = []
        if not self.folder.exists():
            return found
        with self._root() as root:
            walk(root, "", found, limit, depth=0)
        return sorted(found, key=lambda entry: entry.path)

    def totals(self) -> tuple[int, int]:
        """(bytes, files) of the regular files in the workspace."""
        files = [e for e in self.entries(limit=self.limits.max_files * 4) if e.kind == "file"]
        return sum(e.size for e in files), len(files)

    def tree(self) -> Tree:
        """Every regular file's content, by path (see `read_tree`)."""
        if not self.folder.exists():
            return Tree({}, (), None)
        with self._root():  # refuses a workspace folder that is a link
            return read_tree(self.folder, self.limits)

    def apply(self, *, removed: tuple[str, ...], files: dict[str, bytes]) -> list[str]:
        """Delete `removed`, then write `files` (no limit checks: the caller checked the whole);
        returns the paths that could not be changed."""
        failed = []
        for path in removed:
            if not self.delete(path):
                failed.append(path)
        for path, data in files.items():
            try:
                parts = split_path(path)
                with self._parent(parts, create=True) as parent:
                    existing_size(parts[-1], parent, path)  # refuses a link or a folder in the way
                    replace_file(parts[-1], parent, data)
            except (WorkspaceError, OSError):
                failed.append(path)
        return failed
