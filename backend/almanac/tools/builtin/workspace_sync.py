"""Copying a workspace into a sandbox run's `/workspace` folder, and saving back what the program
left there.

The sandbox never touches the workspace itself: it gets a copy. Afterwards the copy is read like
any untrusted folder (`read_tree`: no links followed, FIFOs and devices skipped, the workspace's
limits applied to the whole) and the differences are written back: changed and new files, and
files the program deleted. If the folder as a whole breaks a limit, nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from almanac.tools.builtin.confined import WorkspaceError, read_tree
from almanac.tools.builtin.workspace import Workspace

WorkspaceCopy = dict[str, bytes]  # what was copied in, by path


@dataclass(frozen=True)
class Saved:
    """What saving a run's /workspace changed."""

    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # links, special files, paths that could not be written
    problem: str | None = None  # why nothing was saved


def copy_in(workspace: Workspace, folder: Path) -> WorkspaceCopy:
    """Copy every file of `workspace` into `folder` (a new, empty folder of ours)."""
    files = workspace.tree().files
    for path, data in files.items():
        target = folder.joinpath(*path.split("/"))
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.write_bytes(data)
    return files


def save_back(workspace: Workspace, folder: Path, before: WorkspaceCopy) -> Saved:
    """Write the differences between `before` and what `folder` holds now into `workspace`."""
    try:
        tree = read_tree(folder, workspace.limits)
    except WorkspaceError as exc:
        return Saved(problem=str(exc))
    if tree.problem is not None:
        return Saved(problem=tree.problem)
    removed = tuple(path for path in before if path not in tree.files)
    changed = {path: data for path, data in tree.files.items() if before.get(path) != data}
    failed = workspace.apply(removed=removed, files=changed)
    return Saved(
        written=tuple(path for path in changed if path not in failed),
        removed=tuple(path for path in removed if path not in failed),
        skipped=tuple(tree.skipped) + tuple(failed),
    )
