"""File operations confined to one folder, for folders whose contents nobody vouches for.

Every path is relative and checked first (`split_path`: no absolute paths, no `..`, no control
characters, bounded lengths and depth); every component is then opened from the folder's own
descriptor with `O_NOFOLLOW`, one level at a time (`openat`), so a symbolic link — there before the
call or swapped in during it — is refused rather than followed, and a FIFO or device is refused
without blocking on it. Files are replaced through a temporary file and a rename. `WorkspaceError`
messages are written for the model.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 16
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")


class WorkspaceError(Exception):
    """A refused or failed workspace operation; the message says why, for the model."""


@dataclass(frozen=True)
class WorkspaceLimits:
    max_file_bytes: int = 5 * 1024 * 1024
    max_total_bytes: int = 50 * 1024 * 1024
    max_files: int = 1_000


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str  # "file", "folder", "link" (never followed) or "other" (FIFO, socket, device)
    size: int


def split_path(path: str) -> tuple[str, ...]:
    """The components of a workspace-relative path, or `WorkspaceError` saying why it is refused."""
    if not path or not path.strip():
        raise WorkspaceError("the path is empty")
    if len(path) > MAX_PATH_CHARS:
        raise WorkspaceError(f"the path is longer than {MAX_PATH_CHARS} characters")
    if _CONTROL.search(path):
        raise WorkspaceError("the path contains a control character or a backslash")
    if path.startswith("/") or path.startswith("~"):
        raise WorkspaceError(f"{path!r} is absolute: paths are relative to the workspace, e.g. 'notes.txt'")
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    if ".." in parts:
        raise WorkspaceError(f"{path!r} leaves the workspace ('..' is not allowed)")
    if not parts:
        raise WorkspaceError(f"{path!r} names the workspace itself, not a file")
    if len(parts) > MAX_DEPTH:
        raise WorkspaceError(f"the path is more than {MAX_DEPTH} folders deep")
    if any(len(part.encode()) > MAX_NAME_BYTES for part in parts):
        raise WorkspaceError(f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
    return parts


@dataclass(frozen=True)
class Tree:
    """The regular files under a folder, read without following links."""

    files: dict[str, bytes]
    skipped: tuple[str, ...]  # links, FIFOs, devices, names a workspace cannot hold
    problem: str | None  # over a limit: the folder as a whole cannot be taken


def read_tree(folder: Path, limits: WorkspaceLimits) -> Tree:
    """The files under `folder` (which may hold anything, links included) within `limits`."""
    root = open_dir(str(folder), None, "the folder")
    try:
        return read_tree_at(root, limits)
    finally:
        os.close(root)


def shown_name(path: str) -> str:
    """A path as text that can always be printed: bytes that are not UTF-8 as `\\xNN` escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_tree_at(root: int, limits: WorkspaceLimits) -> Tree:
    """`read_tree` of the folder open as `root` (the caller closes it)."""
    entries: list[Entry] = []
    walk(root, "", entries, limits.max_files * 4 + 1, depth=0)
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    total = 0
    for entry in entries:
        if entry.kind == "folder":
            continue
        if entry.kind != "file" or shown_name(entry.path) != entry.path:  # a name that is not UTF-8
            skipped.append(shown_name(entry.path))
            continue
        try:
            parts = split_path(entry.path)
        except WorkspaceError:
            skipped.append(entry.path)
            continue
        if len(files) >= limits.max_files:
            return Tree({}, (), f"more than {limits.max_files:,} files")
        parent = descend(root, parts[:-1], create=False)
        try:
            fd = open_file(parts[-1], parent, entry.path, os.O_RDONLY | os.O_NONBLOCK)
        except WorkspaceError:
            skipped.append(entry.path)
            continue
        finally:
            os.close(parent)
        try:
            data = read_up_to(fd, limits.max_file_bytes + 1)
        finally:
            os.close(fd)
        total += len(data)
        if len(data) > limits.max_file_bytes:
            return Tree({}, (), f"{entry.path} is over {limits.max_file_bytes:,} bytes")
        if total > limits.max_total_bytes:
            return Tree({}, (), f"the files add up to more than {limits.max_total_bytes:,} bytes")
        files[entry.path] = data
    return Tree(files, tuple(skipped), None)


def descend(root: int, folders: tuple[str, ...], *, create: bool) -> int:
    """A new descriptor of `root/folders…`, each step opened with O_NOFOLLOW (made when `create`)."""
    fd = os.dup(root)
    try:
        for index, name in enumerate(folders):
            if create:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            child = open_dir(name, fd, "/".join(folders[: index + 1]))
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir(name: str, dir_fd: int | None, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise WorkspaceError(f"{shown}: no such folder") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise WorkspaceError(f"{shown} is a symbolic link or not a folder; links are not followed") from None
        raise WorkspaceError(f"{shown}: {exc.strerror}") from None


def open_file(name: str, dir_fd: int, shown: str, flags: int) -> int:
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise WorkspaceError(f"{shown}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkspaceError(f"{shown} is a symbolic link; links are not followed") from None
        if exc.errno == errno.EISDIR:
            raise WorkspaceError(f"{shown} is a folder") from None
        raise WorkspaceError(f"{shown}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkspaceError(f"{shown} is not a regular file")
    return fd


def existing_size(name: str, dir_fd: int, shown: str) -> int | None:
    """The size of an existing regular file, None if there is none; a link or folder is refused."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise WorkspaceError(f"{shown} is a symbolic link; links are not followed")
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{shown} exists and is not a regular file")
    return info.st_size


def replace_file(name: str, dir_fd: int, data: bytes) -> None:
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        os.unlink(temporary, dir_fd=dir_fd)
        raise
    os.close(fd)
    os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_up_to(fd: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def walk(dir_fd: int, prefix: str, found: list[Entry], limit: int, *, depth: int) -> None:
    with os.scandir(dir_fd) as listing:
        children = sorted(listing, key=lambda entry: entry.name)
    for entry in children:
        if len(found) >= limit:
            return
        path = f"{prefix}{entry.name}"
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            found.append(Entry(path, "link", 0))
        elif stat.S_ISREG(info.st_mode):
            found.append(Entry(path, "file", info.st_size))
        elif stat.S_ISDIR(info.st_mode):
            found.append(Entry(path, "folder", 0))
            if depth < MAX_DEPTH:
                try:
                    child = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    walk(child, f"{path}/", found, limit, depth=depth + 1)
                finally:
                    os.close(child)
        else:
            found.append(Entry(path, "other", 0))
