"""A memory and process cgroup per sandboxed run, where the host lets us make one.

The kernel charges to a memory cgroup everything its processes make the machine hold: their own
pages, but also tmpfs and shared-memory pages and kernel objects such as inodes. So the run's total
(all its processes together, its /tmp and /workspace file systems included) is bounded, which
per-process limits cannot do; the pids controller bounds its processes and threads whatever their
user. Which hierarchy is used:

- cgroup v2, delegated: a folder we may write in whose `cgroup.subtree_control` hands down the
  memory and pids controllers (the operator's `CODE_EXECUTION_CGROUP`, else our own cgroup when it
  already delegates them): runs get `<folder>/almanac-sandbox-<pid>-<random>/run-<random>`;
- cgroup v1, writable (typically as root): the same layout under our own cgroup of the `memory` and
  `pids` hierarchies;
- neither: no cgroup; `detect` says why, and the startup table shows it.

The sandbox's init process is moved into the run's groups before the program starts (bubblewrap
waits on its block pipe), so every process of the run is born inside them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Hierarchy:
    """Where per-run groups go: v2 has one folder for both controllers, v1 one per controller."""

    version: int  # 1 or 2
    memory: Path  # a folder of ours (almanac-sandbox-…) in which each run gets its own group
    pids: Path

    def describe(self) -> str:
        return f"cgroup v{self.version} ({self.memory})"

    def remove(self) -> None:
        """Remove our folders (the kernel refuses while a run's group is still in them)."""
        for folder in dict.fromkeys((self.memory, self.pids)):
            with contextlib.suppress(OSError):
                folder.rmdir()


@dataclass(frozen=True)
class Detected:
    hierarchy: Hierarchy | None
    problem: str | None  # why there is none


def own_cgroups(text: str) -> dict[str, str]:
    """Controller (or "" for the v2 hierarchy) → this process's cgroup path, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            found[controller] = parts[2]
    return found


def detect(
    configured: Path | None = None, *, root: Path = CGROUP_ROOT, proc: Path = Path("/proc/self/cgroup")
) -> Detected:
    """Find a hierarchy we can make per-run groups in (see the module docstring); makes our folder."""
    try:
        own = own_cgroups(proc.read_text())
    except OSError as exc:
        return Detected(None, f"cannot read {proc}: {exc.strerror}")
    if configured is not None:
        return _v2(configured, why=f"CODE_EXECUTION_CGROUP={configured}")
    problems: list[str] = []
    v2_mount = root if (root / "cgroup.controllers").exists() else root / "unified"
    if "" in own and (v2_mount / "cgroup.controllers").exists():
        found = _v2(v2_mount / own[""].lstrip("/"), why="our cgroup v2 group")
        if found.hierarchy is not None:
            return found
        problems.append(found.problem or "")
    if "memory" in own and "pids" in own and (root / "memory").is_dir():
        memory = root / "memory" / own["memory"].lstrip("/")
        pids = root / "pids" / own["pids"].lstrip("/")
        try:
            return Detected(Hierarchy(1, _make_base(memory), _make_base(pids)), None)
        except OSError as exc:
            problems.append(f"cgroup v1 memory/pids groups are not writable ({exc.strerror})")
    return Detected(None, "; ".join(problems) or "no memory cgroup hierarchy is mounted")


def _v2(folder: Path, *, why: str) -> Detected:
    try:
        delegated = set((folder / "cgroup.subtree_control").read_text().split())
    except OSError as exc:
        return Detected(None, f"{why} cannot be read ({exc.strerror})")
    if not {"memory", "pids"} <= delegated:
        return Detected(None, f"{why} does not delegate the memory and pids controllers to its children")
    try:
        base = _make_base(folder)
        (base / "cgroup.subtree_control").write_text("+memory +pids")
    except OSError as exc:
        return Detected(None, f"{why} is not writable ({exc.strerror})")
    return Detected(Hierarchy(2, base, base), None)


def _make_base(parent: Path) -> Path:
    sweep(parent)
    base = parent / f"almanac-sandbox-{os.getpid()}-{secrets.token_hex(4)}"
    base.mkdir()
    return base


def sweep(parent: Path) -> None:
    """Remove the groups of our processes that are gone (empty groups only; the kernel refuses others)."""
    for folder in parent.glob("almanac-sandbox-*-*"):
        pid = folder.name.split("-")[2]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        for run in folder.glob("run-*"):
            with contextlib.suppress(OSError):
                run.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()


class RunGroup:
    """One run's memory and pids groups."""

    def __init__(self, hierarchy: Hierarchy, *, memory_bytes: int, processes: int) -> None:
        name = f"run-{secrets.token_hex(6)}"
        self.hierarchy = hierarchy
        self.folders = tuple(dict.fromkeys((hierarchy.memory / name, hierarchy.pids / name)))
        for folder in self.folders:
            folder.mkdir()
        try:
            memory, pids = hierarchy.memory / name, hierarchy.pids / name
            if hierarchy.version == 2:
                _write(memory / "memory.max", memory_bytes)
                _write_if_there(memory / "memory.swap.max", 0)
                _write_if_there(memory / "memory.oom.group", 1)  # an OOM kill takes the whole run
            else:
                _write(memory / "memory.limit_in_bytes", memory_bytes)
                _write_if_there(memory / "memory.memsw.limit_in_bytes", memory_bytes)
            _write(pids / "pids.max", processes)
        except BaseException:
            self.remove()
            raise

    def add(self, pid: int) -> None:
        """Move a process (and so all it starts afterwards) into the run's groups."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", pid)

    def memory_exhausted(self) -> bool:
        """Whether the run hit its memory limit (allocations failed or the OOM killer ran)."""
        folder = self.hierarchy.memory / self.folders[0].name
        try:
            if self.hierarchy.version == 2:
                events = dict(line.split() for line in (folder / "memory.events").read_text().splitlines())
                return int(events.get("max", 0)) > 0 or int(events.get("oom_kill", 0)) > 0
            control = dict(line.split() for line in (folder / "memory.oom_control").read_text().splitlines())
            return int(control.get("oom_kill", 0)) > 0 or int((folder / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def remove(self) -> None:
        """Remove the groups (empty once the sandbox's PID namespace is gone; retried briefly)."""
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _write(path: Path, value: int) -> None:
    with open(path, "w") as file:
        file.write(str(value))


def _write_if_there(path: Path, value: int) -> None:
    if path.exists():
        _write(path, value)
