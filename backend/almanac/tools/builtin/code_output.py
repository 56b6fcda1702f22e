"""How a sandboxed run reads to the model (pure): a status line, stdout and stderr in fences (each
cut with a note when it was over the limit), and what was saved to the workspace."""

from __future__ import annotations

import signal

from almanac.tools.builtin.text import fenced
from almanac.tools.builtin.workspace_sync import Saved
from almanac.tools.sandbox import Limits, Outcome

_LIMIT_SIGNALS = {
    signal.SIGKILL: "killed (SIGKILL): the memory, CPU-time or process limit, or the program itself",
    signal.SIGXCPU: "stopped by the CPU-time limit (SIGXCPU)",
    signal.SIGXFSZ: "stopped by the file-size limit (SIGXFSZ)",
    signal.SIGSEGV: "crashed (SIGSEGV)",
    signal.SIGABRT: "aborted (SIGABRT), e.g. out of memory",
    signal.SIGTRAP: "aborted (SIGTRAP), e.g. node could not reserve memory",
}


def describe_outcome(language: str, outcome: Outcome, limits: Limits, saved: Saved | None) -> tuple[str, bool]:
    """(the result text, whether the run failed: a non-zero exit, a signal, a timeout or a stop)."""
    status, failed = _status(outcome, limits)
    lines = [f"{language} · {status} · {outcome.duration_s:.2f} s"]
    streams = (("stdout", outcome.stdout, outcome.stdout_size), ("stderr", outcome.stderr, outcome.stderr_size))
    for name, kept, size in streams:
        if not size:
            lines.append(f"{name}: (empty)")
            continue
        lines.append(f"{name}:")
        lines.append(fenced(kept.decode("utf-8", errors="replace")))
        if size > len(kept):
            stopped = "; the program was stopped" if outcome.stopped == "output" else ""
            lines.append(f"[{name} cut at {len(kept):,} bytes of {size:,}+ written{stopped}]")
    if saved is not None:
        lines += _saved(saved)
    return "\n".join(lines), failed


def _status(outcome: Outcome, limits: Limits) -> tuple[str, bool]:
    code = outcome.returncode
    if outcome.timed_out:
        return f"timed out after {limits.timeout_s:g} s: the program and all its processes were killed", True
    if outcome.stopped == "output":
        return f"stopped: more than {limits.output_bytes:,} bytes of output", True
    if outcome.stopped == "disk":
        return f"stopped: wrote more than {limits.disk_mb} MiB or {limits.disk_files:,} files", True
    if outcome.memory_exhausted and code != 0:
        return (
            f"exit code {code}: the run reached its memory limit ({limits.memory_mb} MiB for its processes "
            f"plus its files in /tmp and /workspace)",
            True,
        )
    if code is None:
        return "ended without an exit status", True
    if code == 0:
        return "exit code 0", False
    if code > 128 and _known_signal(code - 128):
        number = signal.Signals(code - 128)
        meaning = _LIMIT_SIGNALS.get(number, f"killed by {number.name}")
        return f"exit code {code} ({meaning})", True
    if code < 0 and _known_signal(-code):
        return f"killed by {signal.Signals(-code).name}", True
    return f"exit code {code}", True


def _known_signal(number: int) -> bool:
    return number in {s.value for s in signal.Signals}


def _saved(saved: Saved) -> list[str]:
    if saved.problem is not None:
        return [f"[/workspace was not saved: {saved.problem}]"]
    lines = []
    if saved.written:
        lines.append("[saved to the workspace: " + ", ".join(saved.written[:20]) + _more(saved.written) + "]")
    if saved.removed:
        lines.append("[removed from the workspace: " + ", ".join(saved.removed[:20]) + _more(saved.removed) + "]")
    if saved.skipped:
        lines.append(
            "[not saved (links, special files, names that are not UTF-8, or conflicts): "
            + ", ".join(saved.skipped[:20])
            + _more(saved.skipped)
            + "]"
        )
    return lines


def _more(paths: tuple[str, ...]) -> str:
    return f" and {len(paths) - 20} more" if len(paths) > 20 else ""
