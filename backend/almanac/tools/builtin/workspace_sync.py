"""What of a workspace goes into a sandbox run's `/workspace`, and saving back what the program
left there.

The sandbox never touches the workspace itself: it gets a copy, written by the sandbox into the
run's own bounded file system (`tools/sandbox/runfs.py`). Afterwards that file system is read like
any untrusted folder (`read_tree_at`: no links followed, FIFOs and devices skipped, names that are
not UTF-8 skipped and shown escaped, the workspace's limits applied to the whole, so no more than
they allow is ever read) and the differences are written back: changed and new files, and files the
program deleted. If the folder as a whole breaks a limit, nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass

from almanac.tools.builtin.confined import WorkspaceError, read_tree_at
from almanac.tools.builtin.workspace import Workspace

WorkspaceCopy = dict[str, bytes]  # what was copied in, by path


@dataclass(frozen=True)
class Saved:
    """What saving a run's /workspace changed."""

    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # links, special files, paths that could not be written
    problem: str | None = None  # why nothing was saved


def copy_in(workspace: Workspace) -> WorkspaceCopy:
    """Every file of `workspace`, by its (checked) relative path: what the run's /workspace starts with."""
    return workspace.tree().files


def save_back(workspace: Workspace, folder: int | None, before: WorkspaceCopy) -> Saved:
    """Write the differences between `before` and what the folder open as `folder` holds now into
    `workspace` (None: the run never got its /workspace, nothing is saved)."""
    if folder is None:
        return Saved(problem="the run ended before its /workspace was set up")
    try:
        tree = read_tree_at(folder, workspace.limits)
    except (WorkspaceError, OSError) as exc:
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
