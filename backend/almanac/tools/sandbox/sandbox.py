"""`Sandbox`: runs a program under bubblewrap with the limits of `Limits`, or not at all.

It never runs anything unsandboxed: `check()` runs a probe through the full sandbox (bubblewrap
present, namespaces allowed, `prlimit` there, the probe sees only its own loopback and runs as the
sandbox user, its file systems have the size asked for, it sits in its cgroup when there is one)
and `execute()` refuses to start until that check has passed. When Almanac runs as root, the
sandbox runs as another host uid (`SandboxConfig.host_uid`), because the kernel ignores the process
limit for root and a root-owned user namespace would count as root.

What bounds a run (`protections()` lists what is active on this host): per process, the limits of
`limits.py`; /tmp and /workspace are tmpfs mounts of `disk_mb` each, sizes the kernel enforces,
watched together against `disk_mb` and `disk_files`; the system-call filter of `seccomp.py`
(no memfd, SysV or POSIX IPC, namespaces, mounts, io_uring, userfaultfd, bpf, ptrace, …); no nested
user namespaces; and, where the host lets us make one, a memory and pids cgroup per run
(`cgroups.py`) bounding all its processes and files together. Without bubblewrap's `--size` or
without libseccomp the sandbox refuses to start unless `SandboxConfig.require_limits` is off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from almanac.tools.sandbox.cgroups import RunGroup
from almanac.tools.sandbox.command import (
    SANDBOX_PATH,
    SANDBOX_UID,
    SEARCH_PATH,
    HostLayout,
    RunPaths,
    bwrap_argv,
    find_interpreters,
    hidden_paths,
    host_layout,
)
from almanac.tools.sandbox.features import Features, describe, detect_features, unenforced
from almanac.tools.sandbox.limits import MIB, Limits, prlimit_args
from almanac.tools.sandbox.process import Outcome, run_tree
from almanac.tools.sandbox.rundir import RunDir
from almanac.tools.sandbox.runfs import FsUsage, NotReady, attach, write_files

log = logging.getLogger(__name__)

PROGRAM_FILES = {"python": "main.py", "javascript": "main.js", "bash": "main.sh"}
_PROBE = "echo almanac-sandbox-ok; id -u; cat /proc/self/cgroup; echo almanac-net; cat /proc/net/dev"
# bubblewrap's own environment (the program's is cleared and set by bubblewrap: see command.py).
LAUNCH_ENV = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"}
# Memory a run's cgroup allows beyond its programs' and file systems' own: bubblewrap's init, prlimit.
CGROUP_SLACK_MB = 32
NODE_EXTRA_MB = 128
PAGE = os.sysconf("SC_PAGE_SIZE")


class SandboxUnavailable(Exception):
    """The sandbox cannot be set up here; the message says why."""


@dataclass(frozen=True)
class SandboxConfig:
    limits: Limits = field(default_factory=Limits)
    host_uid: int = 65534  # the host uid sandboxes run as when Almanac runs as root
    protected: tuple[Path, ...] = ()  # host paths never to show, should a system bind contain them
    bwrap: str | None = None  # the bubblewrap binary; None: `bwrap` on the system path
    # Refuse to run unless the kernel enforces the disk limit (bubblewrap's --size) and the
    # system-call filter loads (libseccomp). Off: run with whatever of those the host has.
    require_limits: bool = True
    cgroups: bool = True  # use a memory and pids cgroup per run where the host lets us make one
    cgroup: Path | None = None  # a delegated cgroup v2 folder to make them in (default: found)


class Sandbox:
    """See the module docstring."""

    def __init__(self, config: SandboxConfig, *, euid: int | None = None) -> None:
        self.config = config
        self.limits = config.limits
        self._user = config.host_uid if (os.geteuid() if euid is None else euid) == 0 else None
        self._bwrap = config.bwrap or shutil.which("bwrap", path=SEARCH_PATH)
        self._prlimit = shutil.which("prlimit", path=SEARCH_PATH)
        self._setpriv = shutil.which("setpriv", path=SEARCH_PATH)
        self.interpreters: dict[str, str] = find_interpreters()
        self._layout: HostLayout | None = None
        self._checked: asyncio.Task[str | None] | None = None
        self.problem: str | None = None
        self.features = Features()

    @property
    def installed(self) -> bool:
        """Whether bubblewrap is on this host at all (no I/O beyond a PATH lookup)."""
        return self._bwrap is not None

    @property
    def host_user(self) -> int | None:
        """The host uid runs use, when not Almanac's own."""
        return self._user

    async def check(self) -> str | None:
        """Why the sandbox cannot run here, or None; the probe runs once and is remembered."""
        if self._checked is None:
            self._checked = asyncio.create_task(self._probe())
        self.problem = await asyncio.shield(self._checked)
        return self.problem

    async def _probe(self) -> str | None:
        if self._bwrap is None:
            return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
        if self._prlimit is None:
            return "prlimit (util-linux) is not installed"
        if self._user == 0:
            return "the sandbox's host uid must not be 0 (root)"
        if self._user is not None and self._setpriv is None:
            return "setpriv (util-linux) is needed to run the sandbox as another user than root"
        sh = shutil.which("sh", path=SEARCH_PATH)
        if sh is None:
            return "no /bin/sh to probe the sandbox with"
        try:
            config = self.config
            self.features = await asyncio.to_thread(detect_features, self._bwrap, config.cgroups, config.cgroup)
            if config.require_limits and (problem := unenforced(self.features)):
                return problem
            self._layout = await asyncio.to_thread(host_layout)
            problem = await self._probe_run(sh)
            if problem is not None and self.features.cgroups is not None:
                # Our cgroups could not hold the sandbox (e.g. not ours to move processes into):
                # without them, per-process limits and the file systems' sizes still hold.
                why = f"cgroups: {self.features.cgroups.describe()} could not be used ({problem})"
                self.features = replace(self.features, cgroups=None, missing=(*self.features.missing, why))
                problem = await self._probe_run(sh)
        except OSError as exc:
            return f"the sandbox could not be started ({type(exc).__name__}: {exc})"
        except SandboxUnavailable as exc:
            return str(exc)
        return problem

    async def _probe_run(self, sh: str) -> str | None:
        async with self.run_dir("bash", "") as run:
            try:
                outcome = await self._execute(run, [sh, "-c", _PROBE], language="bash", stdin=b"", watch=False)
            except (SandboxUnavailable, OSError) as exc:
                return str(exc)
            capacity = run.files.usage().capacity if run.files is not None else 0
        problem = _probe_problem(outcome, cgroup=self.features.cgroups is not None)
        if problem is None and self.features.size and capacity != 2 * self._fs_bytes():
            problem = f"the sandbox's /tmp and /workspace do not have the size asked for ({capacity} bytes)"
        return problem

    def protections(self) -> list[str]:
        """What bounds a run on this host (after a passed check), for the startup table."""
        return describe(self.features, self.limits, self._cgroup_bytes(), self._cgroup_bytes("javascript"))

    def _fs_bytes(self) -> int:
        return self.limits.disk_mb * MIB

    def _cgroup_bytes(self, language: str = "python") -> int:
        """All a run may hold: its programs' memory, its files, and what the interpreter needs besides
        (node's heap limit is `memory_mb`; its code and young generation come on top)."""
        extra = NODE_EXTRA_MB if language == "javascript" else 0
        return (self.limits.memory_mb + self.limits.disk_mb + CGROUP_SLACK_MB + extra) * MIB

    @asynccontextmanager
    async def run_dir(self, language: str, code: str) -> AsyncIterator[RunDir]:
        """A run of the program `code`; its file systems are let go when the block ends."""
        if self._layout is None:
            raise SandboxUnavailable(self.problem or "the sandbox has not been checked")
        run = RunDir(PROGRAM_FILES.get(language, "main"), code.encode())
        try:
            yield run
        finally:
            run.close()

    async def execute(
        self, run: RunDir, *, language: str, stdin: str = "", workspace: dict[str, bytes] | None = None
    ) -> Outcome:
        """Run the program of `run` (made by `run_dir`) in `language`, with `workspace` (checked
        relative paths → contents) in /workspace; needs a passed `check()`. Until the `run_dir`
        block ends, `run.files.workspace` is a descriptor of /workspace as the program left it."""
        if await self.check() is not None:
            raise SandboxUnavailable(self.problem or "")
        interpreter = self.interpreters.get(language)
        if interpreter is None:
            raise SandboxUnavailable(f"no interpreter for {language} is installed on this server")
        program = f"/code/{PROGRAM_FILES[language]}"
        if language == "javascript":
            command = [interpreter, f"--max-old-space-size={self.limits.memory_mb}", program]
        else:
            command = [interpreter, program]
        return await self._execute(
            run, command, language=language, stdin=stdin.encode(), watch=True, workspace=workspace or {}
        )

    async def _execute(
        self,
        run: RunDir,
        command: list[str],
        *,
        language: str,
        stdin: bytes,
        watch: bool,
        workspace: dict[str, bytes] | None = None,
    ) -> Outcome:
        assert self._bwrap is not None and self._prlimit is not None and self._layout is not None
        folders, files = hidden_paths(self.config.protected, self._layout)
        limits, hierarchy, owner = self.limits, self.features.cgroups, self._user
        cgroup_bytes = self._cgroup_bytes(language)
        group = (
            await asyncio.to_thread(RunGroup, hierarchy, memory_bytes=cgroup_bytes, processes=limits.processes)
            if hierarchy is not None
            else None
        )
        info, block = os.pipe(), os.pipe()  # bubblewrap reports its init's PID, then waits for a byte
        filter_fd = _pipe_with(self.features.seccomp) if self.features.seccomp is not None else None
        program_fd = run.program_fd()
        argv = bwrap_argv(
            self._bwrap,
            self._layout,
            RunPaths(run.program_name, program_fd, folders, files),
            command,
            prlimit=self._prlimit,
            limits=prlimit_args(self.limits, language=language),
            fs_bytes=self._fs_bytes() if self.features.size else None,
            workspace_bytes=self._fs_bytes() + _room_for(workspace or {}),
            info_fd=info[1],
            block_fd=block[0],
            seccomp_fd=filter_fd,
            disable_userns=self.features.disable_userns,
        )

        seeded = FsUsage(0, 0, 0)  # what the copied-in workspace takes: the run's own use comes on top

        def prepare(pid: int) -> None:
            nonlocal seeded
            if group is not None:
                group.add(pid)
            run.files = attach(pid)
            if workspace:
                write_files(run.files.workspace, workspace, owner)
            seeded = run.files.usage()

        async def on_start(pid: int) -> None:
            await asyncio.to_thread(prepare, pid)

        async def disk() -> str | None:
            if run.files is None:
                return None
            used = await asyncio.to_thread(run.files.usage)
            written, made = used.bytes - seeded.bytes, used.inodes - seeded.inodes
            return "disk" if written > limits.disk_mb * MIB or made > limits.disk_files else None

        try:
            outcome = await run_tree(
                [*self._launcher(), *argv],
                stdin=stdin,
                timeout_s=limits.timeout_s,
                output_bytes=limits.output_bytes,
                env=dict(LAUNCH_ENV),
                watcher=disk if watch else None,
                info=info,
                block=block,
                on_start=on_start,
                pass_fds=(program_fd, *((filter_fd,) if filter_fd is not None else ())),
            )
        except (NotReady, OSError) as exc:
            raise SandboxUnavailable(f"the sandbox could not be set up for this run ({exc})") from None
        finally:
            if group is not None:
                exhausted = await asyncio.to_thread(group.memory_exhausted)
                await asyncio.to_thread(group.remove)
        return replace(outcome, memory_exhausted=exhausted) if group is not None else outcome

    def _launcher(self) -> list[str]:
        """`setpriv` before bubblewrap: it becomes the sandbox's host user (when Almanac is root) and
        is killed should Almanac die."""
        if self._setpriv is None:
            return []
        launcher = [self._setpriv, "--pdeathsig", "KILL"]
        if self._user is not None:
            launcher += ["--reuid", str(self._user), "--regid", str(self._user), "--clear-groups"]
        return [*launcher, "--"]

    def close(self) -> None:
        """Remove this sandbox's cgroup folders (runs leave nothing else on the host)."""
        if self.features.cgroups is not None:
            self.features.cgroups.remove()


def _room_for(files: dict[str, bytes]) -> int:
    """What `files` take on a tmpfs: whole pages (folders take none)."""
    return sum(-(-len(data) // PAGE) for data in files.values()) * PAGE


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe holding `data` (small enough for the pipe's buffer), write end closed."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


def _probe_problem(outcome: Outcome, *, cgroup: bool) -> str | None:
    """What the probe's output says is wrong, or None."""
    text = outcome.stdout.decode(errors="replace")
    lines = text.splitlines()
    if outcome.returncode != 0 or not lines or lines[0] != "almanac-sandbox-ok" or "almanac-net" not in lines:
        detail = (outcome.stderr.decode(errors="replace").strip() or text.strip())[:300]
        return f"bubblewrap could not start a sandbox (exit {outcome.returncode}): {detail or 'no output'}"
    if len(lines) < 2 or lines[1].strip() != str(SANDBOX_UID):
        return "the sandbox did not run as its own user"
    split = lines.index("almanac-net")
    if cgroup and not any("run-" in line for line in lines[2:split] if ":memory:" in line or line.startswith("0::")):
        return "the sandbox did not run in its cgroup"
    interfaces = {line.split(":", 1)[0].strip() for line in lines[split + 1 :] if ":" in line}
    if interfaces - {"lo"}:
        return f"the sandbox can see network interfaces {sorted(interfaces - {'lo'})}"
    return None
