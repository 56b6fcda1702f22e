"""The host folders of one sandboxed run: created private, measured while the run goes on, and
removed afterwards whatever the program did to them.

Layout: a base folder per process, `<temp>/almanac-sandbox-<pid>-<random>/` (those of our
processes that were killed before removing theirs are swept when the next one is made), holding one
`run-<random>/` per run (0711: others may pass through, never list) with `tmp/` (→ /tmp),
`workspace/` (→ /workspace) and `code/` (→ /code, the program). When Almanac runs as root the
sandbox runs as another host uid (`owner`), which is given `tmp/` and `workspace/`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunDir:
    """One run's folders on the host."""

    root: Path

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def code(self) -> Path:
        return self.root / "code"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"


def make_base(parent: Path | None = None) -> Path:
    """A fresh folder for this process's runs (0711), under `parent` or the system's temp folder;
    the folders of processes of ours that died without removing theirs are removed first."""
    parent = parent or Path(tempfile.gettempdir())
    sweep_bases(parent)
    base = Path(tempfile.mkdtemp(prefix=f"almanac-sandbox-{os.getpid()}-", dir=parent))
    base.chmod(0o711)
    return base


def sweep_bases(parent: Path) -> list[Path]:
    """Remove the run folders of our own processes that are gone (killed before they could)."""
    removed = []
    for folder in parent.glob("almanac-sandbox-*-*"):
        pid = folder.name.split("-")[2]
        try:
            if not pid.isdigit() or folder.lstat().st_uid != os.geteuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def create_run_dir(base: Path, *, program_name: str, program: bytes) -> RunDir:
    """A new run folder holding the program (read-only to the sandbox) and empty tmp/ and workspace/."""
    run = RunDir(Path(tempfile.mkdtemp(prefix="run-", dir=base)))
    run.root.chmod(0o711)
    for folder in (run.tmp, run.workspace):
        folder.mkdir(mode=0o700)
    run.code.mkdir(mode=0o755)
    program_file = run.code / program_name
    program_file.write_bytes(program)
    program_file.chmod(0o644)
    return run


def hand_over(run: RunDir, owner: int | None) -> None:
    """Give tmp/ and workspace/ (and all they hold) to the sandbox's host uid, when it is another."""
    if owner is None:
        return
    for folder in (run.tmp, run.workspace):
        for path in (folder, *folder.rglob("*")):
            os.chown(path, owner, owner, follow_symlinks=False)


@dataclass(frozen=True)
class Usage:
    """What a run has written so far."""

    bytes: int
    entries: int
    unreadable: bool  # a folder could not be listed (a program hiding files from the count)


def usage(folders: tuple[Path, ...], *, max_entries: int) -> Usage:
    """Sizes and entries under `folders`, never following links; stops counting past `max_entries`."""
    total = entries = 0
    pending = list(folders)
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    entries += 1
                    if entries > max_entries:
                        return Usage(total, entries, False)
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:  # deleted while we looked
                        continue
                    total += info.st_size
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(Path(entry.path))
        except FileNotFoundError:
            continue
        except OSError:
            return Usage(total, entries, True)
    return Usage(total, entries, False)


def remove_run_dir(run: RunDir) -> None:
    """Delete the run's folders, also ones the program made unreadable (chmod 000)."""

    def allow_and_retry(function: object, path: str, _: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    shutil.rmtree(run.root, onerror=allow_and_retry)
