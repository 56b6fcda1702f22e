"""`Sandbox`: runs a program under bubblewrap with the limits of `Limits`, or not at all.

It never runs anything unsandboxed: `check()` runs a probe through the full sandbox (bubblewrap
present, namespaces allowed, `prlimit` there, the probe sees only its own loopback and runs as the
sandbox user) and `execute()` refuses to start until that check has passed. When Almanac runs as
root, the sandbox runs as another host uid (`SandboxConfig.host_uid`), because the kernel ignores
the process limit for root and a root-owned user namespace would count as root.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

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
from almanac.tools.sandbox.limits import Limits, prlimit_args
from almanac.tools.sandbox.process import Outcome, run_tree
from almanac.tools.sandbox.rundir import RunDir, create_run_dir, hand_over, make_base, remove_run_dir, usage

log = logging.getLogger(__name__)

PROGRAM_FILES = {"python": "main.py", "javascript": "main.js", "bash": "main.sh"}
_PROBE = "echo almanac-sandbox-ok; id -u; cat /proc/net/dev"


class SandboxUnavailable(Exception):
    """The sandbox cannot be set up here; the message says why."""


@dataclass(frozen=True)
class SandboxConfig:
    limits: Limits = field(default_factory=Limits)
    host_uid: int = 65534  # the host uid sandboxes run as when Almanac runs as root
    runs_parent: Path | None = None  # where run folders are made (default: the system's temp folder)
    protected: tuple[Path, ...] = ()  # host paths never to show, should a system bind contain them
    bwrap: str | None = None  # the bubblewrap binary; None: `bwrap` on the system path


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
        self._base: Path | None = None
        self._checked: asyncio.Task[str | None] | None = None
        self._cleanup: weakref.finalize | None = None
        self.problem: str | None = None

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
            self._layout = await asyncio.to_thread(host_layout)
            self._base = await asyncio.to_thread(make_base, self.config.runs_parent)
            # Removed by close(), or when this object goes away or the process exits.
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._base, True)
            async with self.run_dir("bash", "") as run:
                outcome = await self._execute(run, [sh, "-c", _PROBE], language="bash", stdin=b"", watch=False)
        except OSError as exc:
            return f"the sandbox could not be started ({type(exc).__name__}: {exc})"
        return _probe_problem(outcome)

    @asynccontextmanager
    async def run_dir(self, language: str, code: str) -> AsyncIterator[RunDir]:
        """A run folder holding the program; removed when the block ends."""
        if self._base is None:
            raise SandboxUnavailable(self.problem or "the sandbox has not been checked")
        program = PROGRAM_FILES.get(language, "main")
        run = await asyncio.to_thread(create_run_dir, self._base, program_name=program, program=code.encode())
        try:
            yield run
        finally:
            await asyncio.to_thread(remove_run_dir, run)

    async def execute(self, run: RunDir, *, language: str, stdin: str = "") -> Outcome:
        """Run the program of `run` (made by `run_dir`) in `language`; needs a passed `check()`."""
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
        return await self._execute(run, command, language=language, stdin=stdin.encode(), watch=True)

    async def _execute(self, run: RunDir, command: list[str], *, language: str, stdin: bytes, watch: bool) -> Outcome:
        assert self._bwrap is not None and self._prlimit is not None and self._layout is not None
        await asyncio.to_thread(hand_over, run, self._user)
        folders, files = hidden_paths(self.config.protected, self._layout)
        paths = RunPaths(run.tmp, run.code, run.workspace, folders, files)
        info = os.pipe()  # bubblewrap reports the sandbox's init PID here: run_tree waits for it to end
        argv = bwrap_argv(
            self._bwrap,
            self._layout,
            paths,
            command,
            prlimit=self._prlimit,
            limits=prlimit_args(self.limits, language=language),
            info_fd=info[1],
        )
        limits = self.limits

        async def disk() -> str | None:
            seen = await asyncio.to_thread(usage, (run.tmp, run.workspace), max_entries=limits.disk_files)
            if seen.unreadable:
                return "disk"  # a folder hidden from the count: it cannot be measured, so it stops
            if seen.bytes > limits.disk_mb * 1024 * 1024 or seen.entries > limits.disk_files:
                return "disk"
            return None

        return await run_tree(
            [*self._launcher(), *argv],
            stdin=stdin,
            timeout_s=limits.timeout_s,
            output_bytes=limits.output_bytes,
            env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"},
            watcher=disk if watch else None,
            info=info,
        )

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
        """Remove this sandbox's run folders."""
        if self._cleanup is not None:
            self._cleanup()
        self._base = None


def _probe_problem(outcome: Outcome) -> str | None:
    """What the probe's output says is wrong, or None."""
    text = outcome.stdout.decode(errors="replace")
    lines = text.splitlines()
    if outcome.returncode != 0 or not lines or lines[0] != "almanac-sandbox-ok":
        detail = (outcome.stderr.decode(errors="replace").strip() or text.strip())[:300]
        return f"bubblewrap could not start a sandbox (exit {outcome.returncode}): {detail or 'no output'}"
    if len(lines) < 2 or lines[1].strip() != str(SANDBOX_UID):
        return "the sandbox did not run as its own user"
    interfaces = {line.split(":", 1)[0].strip() for line in lines[2:] if ":" in line}
    if interfaces - {"lo"}:
        return f"the sandbox can see network interfaces {sorted(interfaces - {'lo'})}"
    return None
