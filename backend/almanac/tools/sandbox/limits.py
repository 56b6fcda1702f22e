"""The resource limits of one sandboxed run (pure).

Limits on the process itself (CPU time, address space, processes, file size, open files, no core
dumps) are set inside the sandbox by `prlimit` right before the interpreter starts, so they apply to
the program and everything it starts, and `RLIMIT_NPROC` counts the processes of the sandbox's own
user namespace only. Wall-clock time, output size and disk use are watched from outside by the
runner, which stops the whole process tree when one is exceeded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIB = 1024 * 1024
# V8 reserves address space far beyond its heap (its code range alone needs ~128 MiB): node gets
# this much more address space than MEMORY_MB, and MEMORY_MB as its heap limit.
NODE_EXTRA_ADDRESS_SPACE_MB = 1024


@dataclass(frozen=True)
class Limits:
    """What one run may use."""

    timeout_s: float = 10.0  # wall clock, the whole tree is killed at this point
    memory_mb: int = 512  # address space per process (RLIMIT_AS)
    processes: int = 32  # processes and threads in the sandbox (RLIMIT_NPROC)
    file_size_mb: int = 16  # largest file the program may write (RLIMIT_FSIZE)
    open_files: int = 256  # RLIMIT_NOFILE
    output_bytes: int = 64 * 1024  # kept per stream (stdout, stderr); more stops the program
    disk_mb: int = 100  # everything written under /tmp and /workspace together
    disk_files: int = 2_000  # files and folders under /tmp and /workspace together

    @property
    def cpu_s(self) -> int:
        """CPU seconds per process: the wall-clock limit, rounded up, plus one."""
        return math.ceil(self.timeout_s) + 1

    def address_space_mb(self, language: str) -> int:
        """RLIMIT_AS for an interpreter (node reserves far more address space than it uses)."""
        return self.memory_mb + NODE_EXTRA_ADDRESS_SPACE_MB if language == "javascript" else self.memory_mb


def prlimit_args(limits: Limits, *, language: str) -> list[str]:
    """`prlimit` options setting every per-process limit (soft = hard, so none can be raised)."""
    return [
        f"--cpu={limits.cpu_s}",
        f"--as={limits.address_space_mb(language) * MIB}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_size_mb * MIB}",
        f"--nofile={limits.open_files}",
        "--core=0",
    ]
