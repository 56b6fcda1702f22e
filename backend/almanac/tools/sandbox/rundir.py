"""One sandboxed run as the host holds it: its program (handed to bubblewrap through a descriptor,
so no host path has to be readable by the sandbox's user) and, while the run's `run_dir` block
lasts, the host's hold on its file systems (`runfs.py`)."""

from __future__ import annotations

import os

from almanac.tools.sandbox.runfs import RunFiles


class RunDir:
    """See the module docstring; `files` is set by `Sandbox.execute`."""

    def __init__(self, program_name: str, program: bytes) -> None:
        self.program_name = program_name
        self.program = program
        self.files: RunFiles | None = None

    def program_fd(self) -> int:
        """A new descriptor holding the program, at its start (the caller closes it)."""
        fd = os.memfd_create(f"almanac-{self.program_name}", os.MFD_CLOEXEC)
        try:
            view = memoryview(self.program)
            while view:
                view = view[os.write(fd, view) :]
            os.lseek(fd, 0, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def close(self) -> None:
        """Let go of the run's file systems (their memory is freed)."""
        if self.files is not None:
            self.files.close()
            self.files = None
