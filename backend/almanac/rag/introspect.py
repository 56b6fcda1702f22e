"""What introspection sees of modules, for the local index: the APIs that reading source with `ast` misses —
modules implemented in C (`math`, `itertools`, `time`, `sys`), names built at run time (`hashlib.md5`), the
builtins and their methods (`str.split`, `isinstance`), and names a package re-exports from another package
(`fastapi.middleware.gzip.GZipMiddleware`, defined by Starlette).

Safety policy — importing code runs it, so it never happens in the server's process:
- modules are imported by `introspect_child.py` in a separate interpreter started with `-I` (isolated: no
  user site-packages, no PYTHON* variables, no current folder on `sys.path`) and `-B` (no bytecode written),
  in an empty temporary folder that is also its HOME, with a minimal environment, its own process group
  (killed with it), and sockets disabled before any import;
- each module has a time limit (`timeout_s`): a module that hangs (or crashes the interpreter) is skipped
  and the child restarted for the rest; a module whose import fails is skipped;
- only what `__doc__`, attributes and `inspect.signature` say is kept; counts are logged.
The caller (`local_docs.py`) decides which modules are worth it (see there) and merges the answer with
what `ast` saw: the `ast` passage wins, introspection only fills gaps.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
CHILD = Path(__file__).with_name("introspect_child.py")
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_WORKERS = 2


@dataclass(frozen=True)
class Member:
    """A function, or a method of a class, as introspection sees it."""

    name: str
    signature: str | None
    doc: str


@dataclass(frozen=True)
class Entry:
    """A public class or function of a module: where it is defined (`owner`), signature, doc, methods."""

    name: str
    kind: str  # "class" or "function"
    owner: str
    signature: str | None
    doc: str
    methods: tuple[Member, ...] = ()


@dataclass(frozen=True)
class ModuleInfo:
    """A module as introspection sees it: its docstring and public classes and functions."""

    doc: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Request:
    module: str
    names: tuple[str, ...] | None = None  # only these names; None: the module's `__all__`, else its own API


@dataclass
class Report:
    """What a run did, for the log and the benchmark."""

    described: int = 0
    failed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    seconds: float = 0.0


def introspect(
    requests: Sequence[Request],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    workers: int = DEFAULT_WORKERS,
    python: str = sys.executable,
    extra_path: Sequence[Path] = (),
) -> tuple[dict[str, ModuleInfo], Report]:
    """Each requested module's entries (modules that failed or timed out are absent), and a report.
    Up to `workers` children run at once, each on whole top-level packages (so a package is imported
    once); `extra_path` is put on the children's `sys.path` (for tests' synthetic packages)."""
    started = time.monotonic()
    report = Report()
    found: dict[str, ModuleInfo] = {}
    groups: dict[str, list[Request]] = {}
    for request in requests:
        groups.setdefault(request.module.split(".")[0], []).append(request)
    shares: list[list[Request]] = [[] for _ in range(max(1, workers))]
    for group in sorted(groups.values(), key=len, reverse=True):  # the biggest packages spread first
        min(shares, key=len).extend(group)
    with tempfile.TemporaryDirectory(prefix="almanac-introspect-") as folder:
        lock = threading.Lock()

        def work(share: list[Request]) -> None:
            pending = share
            while pending:
                own: dict[str, ModuleInfo] = {}
                part = Report()
                done = _run(pending, folder, timeout_s, python, extra_path, own, part)
                pending = pending[done:]
                with lock:
                    found.update(own)
                    report.described += part.described
                    report.failed += part.failed
                    report.timed_out += part.timed_out

        threads = [threading.Thread(target=work, args=(share,)) for share in shares if share]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    report.seconds = time.monotonic() - started
    log.info(
        "introspection: %d modules described, %d failed to import, %d timed out, in %.1f s",
        report.described,
        len(report.failed),
        len(report.timed_out),
        report.seconds,
    )
    return found, report


def _run(
    requests: Sequence[Request],
    folder: str,
    timeout_s: float,
    python: str,
    extra_path: Sequence[Path],
    found: dict[str, ModuleInfo],
    report: Report,
) -> int:
    """Run one child over `requests` until it finishes, hangs or dies; how many requests were dealt with."""
    lines = "".join(
        json.dumps({"module": r.module, "names": list(r.names) if r.names else r.names}) + "\n" for r in requests
    )
    env = {"PATH": os.environ.get("PATH", ""), "HOME": folder, "NO_PROXY": "*"}
    bootstrap = (
        f"import sys; sys.path[:0] = {[str(p) for p in extra_path]!r}; sys.argv = [{str(CHILD)!r}]; "
        f"exec(compile(open({str(CHILD)!r}).read(), {str(CHILD)!r}, 'exec'))"
    )
    with tempfile.TemporaryFile() as stdin:
        stdin.write(lines.encode())
        stdin.seek(0)
        child = subprocess.Popen(
            [python, "-I", "-B", "-c", bootstrap],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=folder,
            env=env,
            start_new_session=True,
        )
    assert child.stdout is not None
    done, buffer = 0, b""
    try:
        while done < len(requests):
            ready, _, _ = select.select([child.stdout], [], [], timeout_s)
            if not ready:
                report.timed_out.append(requests[done].module)
                return done + 1
            data = os.read(child.stdout.fileno(), 1 << 16)
            if not data:  # the child died (a crash in an extension module): skip the module it was on
                report.failed.append(requests[done].module)
                return done + 1
            buffer += data
            while b"\n" in buffer and done < len(requests):
                line, buffer = buffer.split(b"\n", 1)
                _take(json.loads(line), found, report)
                done += 1
        return done
    finally:
        try:  # the child leads its own process group: whatever its imports started goes with it
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
        child.stdout.close()


def _take(answer: dict[str, Any], found: dict[str, ModuleInfo], report: Report) -> None:
    module = str(answer["module"])
    if not answer.get("ok"):
        report.failed.append(module)
        return
    report.described += 1
    entries = []
    for raw in answer.get("entries") or []:
        methods = tuple(Member(m["name"], m.get("signature"), m.get("doc") or "") for m in raw.get("methods") or [])
        entries.append(
            Entry(raw["name"], raw["kind"], raw["owner"], raw.get("signature"), raw.get("doc") or "", methods)
        )
    found[module] = ModuleInfo(str(answer.get("doc") or ""), tuple(entries))
