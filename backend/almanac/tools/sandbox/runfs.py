"""The host's hold on a run's writable file systems.

`/tmp` and `/workspace` are tmpfs mounts that bubblewrap makes inside the sandbox, each with a
size the kernel enforces (`--size`): whatever the program does — write, `fallocate`, keep unlinked
files open, map a sparse file — it cannot hold more than that. They exist only in the sandbox's
mount namespace, so the host takes a directory descriptor of each through
`/proc/<init>/root/…` while bubblewrap waits before starting the program (its block pipe). Those
descriptors keep the file systems alive after the namespace ends: the host writes the workspace
into `/workspace` before the program starts, measures both while it runs (`statvfs`: bytes and
inodes in use, unlinked files included) and reads `/workspace` back after every process of the
run is gone. Closing them frees the memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READY_TIMEOUT_S = 10.0


class NotReady(Exception):
    """The sandbox ended, or never finished setting up, before its file systems could be reached."""


@dataclass(frozen=True)
class FsUsage:
    bytes: int
    inodes: int
    capacity: int  # the size of the file system, as the kernel enforces it


class RunFiles:
    """Directory descriptors of the run's /tmp and /workspace (see the module docstring)."""

    def __init__(self, tmp: int, workspace: int) -> None:
        self.tmp, self.workspace = tmp, workspace

    def usage(self) -> FsUsage:
        """What both file systems hold now: bytes (allocated blocks) and inodes, and their size."""
        used = inodes = capacity = 0
        for fd in (self.tmp, self.workspace):
            info = os.fstatvfs(fd)
            used += (info.f_blocks - info.f_bfree) * info.f_frsize
            inodes += info.f_files - info.f_ffree
            capacity += info.f_blocks * info.f_frsize
        return FsUsage(used, inodes, capacity)

    def close(self) -> None:
        for fd in (self.tmp, self.workspace):
            with contextlib.suppress(OSError):
                os.close(fd)


def attach(pid: int) -> RunFiles:
    """Wait until the sandbox whose init is `pid` has its final root, then open its /tmp and
    /workspace. Raises `NotReady` if it ends first.

    bubblewrap's init starts in the host's root, moves to a root of its own holding `newroot/` (where
    it builds the sandbox's), then to that one, which has `/code` and no `newroot`."""
    host = os.stat("/")
    root = f"/proc/{pid}/root"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            seen = os.stat(root)
            if (seen.st_dev, seen.st_ino) != (host.st_dev, host.st_ino):
                if os.path.isdir(f"{root}/code") and not os.path.lexists(f"{root}/newroot"):
                    break
        except FileNotFoundError:
            pass
        except PermissionError as exc:
            raise NotReady(f"the sandbox's file systems cannot be reached ({exc.strerror})") from None
        if not os.path.exists(f"/proc/{pid}"):
            raise NotReady("the sandbox ended while it was being set up")
        if time.monotonic() > deadline:
            raise NotReady("the sandbox did not finish setting up")
        time.sleep(0.0005)
    tmp = os.open(f"{root}/tmp", _DIR_FLAGS)
    try:
        workspace = os.open(f"{root}/workspace", _DIR_FLAGS)
    except OSError:
        os.close(tmp)
        raise
    return RunFiles(tmp, workspace)


def write_files(folder: int, files: Mapping[str, bytes], owner: int | None) -> None:
    """Write `files` (workspace-relative paths, already checked) under the directory `folder`, as
    `owner` when given (Almanac as root: the file system, mounted in the sandbox's user namespace,
    can only hold files of the uid that namespace maps — `setfsuid` of this thread alone)."""
    with _file_system_user(owner):
        _write_files(folder, files)


@contextlib.contextmanager
def _file_system_user(owner: int | None) -> Iterator[None]:
    if owner is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.setfsgid(owner)
    libc.setfsuid(owner)
    try:
        if libc.setfsuid(-1) != owner:  # reports the current value
            raise OSError(errno.EPERM, "could not act as the sandbox's user")
        yield
    finally:
        libc.setfsuid(os.geteuid())
        libc.setfsgid(os.getegid())


def _write_files(folder: int, files: Mapping[str, bytes]) -> None:
    for path, data in files.items():
        parts = path.split("/")
        fd = os.dup(folder)
        try:
            for name in parts[:-1]:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            file = os.open(parts[-1], flags, 0o600, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(file, view) :]
            finally:
                os.close(file)
        finally:
            os.close(fd)
