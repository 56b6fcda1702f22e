"""Running untrusted code under bubblewrap: `Sandbox` (check, run folders, execute), its `Limits`,
and the `Outcome` of a run. See `command.py` for exactly what a sandboxed program can see."""

from almanac.tools.sandbox.limits import Limits
from almanac.tools.sandbox.process import Outcome
from almanac.tools.sandbox.rundir import RunDir
from almanac.tools.sandbox.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

__all__ = ["Limits", "Outcome", "RunDir", "Sandbox", "SandboxConfig", "SandboxUnavailable"]
