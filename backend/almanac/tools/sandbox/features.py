"""What this host offers the sandbox (bubblewrap's options, libseccomp, a cgroup hierarchy), whether
that is enough to run, and how it reads in the startup table."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from almanac.tools.sandbox import seccomp
from almanac.tools.sandbox.cgroups import Hierarchy, detect
from almanac.tools.sandbox.limits import MIB, Limits


@dataclass(frozen=True)
class Features:
    """What this host's bubblewrap, libseccomp and cgroups offer."""

    size: bool = False  # --size (a tmpfs the kernel bounds)
    disable_userns: bool = False
    seccomp: bytes | None = None  # the compiled filter
    cgroups: Hierarchy | None = None
    missing: tuple[str, ...] = ()  # what is not there, and why


def detect_features(bwrap: str, cgroups: bool, cgroup: Path | None) -> Features:
    """Ask bubblewrap which options it knows, compile the filter, find a cgroup hierarchy (unless
    `cgroups` is off; `cgroup`: a delegated v2 folder to use)."""
    usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False, timeout=10).stdout
    missing = []
    size, disable_userns = "--size" in usage, "--disable-userns" in usage
    if not size:
        missing.append("disk: bubblewrap has no --size (0.8 or newer needed): /tmp and /workspace are not bounded")
    if not disable_userns:
        missing.append("bubblewrap has no --disable-userns (0.8 or newer): only the filter stops nested namespaces")
    compiled = seccomp.compiled()
    if isinstance(compiled, str):
        missing.append(compiled)
    hierarchy = None
    if cgroups:
        found = detect(cgroup)
        hierarchy = found.hierarchy
        if hierarchy is None:
            missing.append(f"cgroups: {found.problem}")
    else:
        missing.append("cgroups: turned off (CODE_EXECUTION_CGROUPS=false)")
    return Features(size, disable_userns, compiled if isinstance(compiled, bytes) else None, hierarchy, tuple(missing))


def unenforced(features: Features) -> str | None:
    """Why the sandbox must not run when its limits are required, or None."""
    if not features.size:
        return (
            "the disk limit cannot be enforced: this bubblewrap has no --size (0.8 or newer needed); "
            "set CODE_EXECUTION_REQUIRE_LIMITS=false to run without it"
        )
    if features.seccomp is None:
        return (
            "the system-call filter cannot be loaded (libseccomp.so.2 or pyseccomp is missing: apt-get install "
            "libseccomp2); set CODE_EXECUTION_REQUIRE_LIMITS=false to run without it"
        )
    return None


def describe(features: Features, limits: Limits, cgroup_bytes: int, node_cgroup_bytes: int) -> list[str]:
    """One line per protection in force, then one per protection that is not, with why."""
    active = [
        f"per process: {limits.memory_mb} MiB address space, {limits.cpu_s} s CPU, "
        f"{limits.file_size_mb} MiB files, {limits.processes} processes",
    ]
    if features.size:
        active.append(
            f"/tmp and /workspace: tmpfs of {limits.disk_mb} MiB each, /workspace plus its copied-in files "
            "(kernel-enforced), "
            f"stopped past {limits.disk_mb} MiB or {limits.disk_files:,} files together"
        )
    else:
        active.append(f"/tmp and /workspace: unbounded tmpfs, stopped past {limits.disk_mb} MiB (watched)")
    if features.seccomp is not None:
        active.append(f"system-call filter ({len(seccomp.DENIED)} calls refused, namespace flags of clone)")
    if features.disable_userns:
        active.append("no nested user namespaces")
    if features.cgroups is not None:
        active.append(
            f"{features.cgroups.describe()}: {cgroup_bytes // MIB} MiB (node {node_cgroup_bytes // MIB} MiB) "
            f"and {limits.processes} processes per run"
        )
    return active + [f"not active: {why}" for why in features.missing]
