"""How a sandboxed run reads to the model: status, fenced output cut with a note, what was saved."""

import pytest

from almanac.tools.builtin.code_output import describe_outcome
from almanac.tools.builtin.workspace_sync import Saved
from almanac.tools.sandbox import Limits, Outcome

LIMITS = Limits(timeout_s=10, output_bytes=8)


def outcome(**changes: object) -> Outcome:
    values: dict[str, object] = {
        "returncode": 0,
        "stdout": b"1024\n",
        "stderr": b"",
        "stdout_size": 5,
        "stderr_size": 0,
        "timed_out": False,
        "stopped": None,
        "duration_s": 0.05,
    }
    values.update(changes)
    return Outcome(**values)  # type: ignore[arg-type]


def test_a_clean_run() -> None:
    text, failed = describe_outcome("python", outcome(), LIMITS, None)
    assert text == "python · exit code 0 · 0.05 s\nstdout:\n```\n1024\n```\nstderr: (empty)"
    assert not failed


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ({"returncode": 1}, "exit code 1"),
        ({"returncode": 137}, "exit code 137 (killed (SIGKILL): the memory, CPU-time or process limit"),
        ({"returncode": 152}, "exit code 152 (stopped by the CPU-time limit (SIGXCPU))"),
        ({"returncode": -9, "timed_out": True}, "timed out after 10 s: the program and all its processes were killed"),
        ({"returncode": -9, "stopped": "output"}, "stopped: more than 8 bytes of output"),
        (
            {"returncode": 137, "memory_exhausted": True},
            "exit code 137: the run reached its memory limit (512 MiB for its processes plus its files in /tmp "
            "and /workspace)",
        ),
        ({"returncode": -9, "stopped": "disk"}, "stopped: wrote more than 100 MiB or 2,000 files"),
        ({"returncode": None}, "ended without an exit status"),
    ],
)
def test_failures_say_what_stopped_the_program(changes: dict[str, object], status: str) -> None:
    text, failed = describe_outcome("bash", outcome(**changes), LIMITS, None)
    assert text.startswith(f"bash · {status}")
    assert failed


def test_output_over_the_limit_is_cut_with_a_note_and_fences_survive_backticks() -> None:
    cut = outcome(
        stdout=b"x" * 8, stdout_size=100_000_000, stderr=b"```", stderr_size=3, stopped="output", returncode=-9
    )
    text, _ = describe_outcome("python", cut, LIMITS, None)
    assert "[stdout cut at 8 bytes of 100,000,000+ written; the program was stopped]" in text
    assert "stderr:\n````\n```\n````" in text


def test_what_was_saved_to_the_workspace_is_listed() -> None:
    saved = Saved(written=("out.csv",), removed=("old.txt",), skipped=("link",))
    text, _ = describe_outcome("python", outcome(), LIMITS, saved)
    assert text.endswith(
        "[saved to the workspace: out.csv]\n[removed from the workspace: old.txt]\n"
        "[not saved (links, special files, names that are not UTF-8, or conflicts): link]"
    )
    text, _ = describe_outcome("python", outcome(), LIMITS, Saved(problem="more than 1,000 files"))
    assert text.endswith("[/workspace was not saved: more than 1,000 files]")
