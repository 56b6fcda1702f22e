"""Each protection of the sandbox's command line, tried by a program that would get through
without it: the environment bubblewrap itself was started with, the session (and so the terminal)
of the server, the read-only program in /code, and the output kept past its limit when the
program's writes straddle it. Skipped where bubblewrap cannot run, unless ALMANAC_REQUIRE_SANDBOX=1.
"""

import os
import textwrap
from collections.abc import AsyncIterator

import pytest

from almanac.tools.sandbox import Limits, Outcome, Sandbox, SandboxConfig
from almanac.tools.sandbox import sandbox as sandbox_module

REQUIRE = os.environ.get("ALMANAC_REQUIRE_SANDBOX", "") == "1"
LIMITS = Limits(timeout_s=5, memory_mb=256, output_bytes=10_000)


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    box = Sandbox(SandboxConfig(LIMITS))
    problem = await box.check()
    if problem is not None:
        if REQUIRE:
            pytest.fail(f"the sandbox is required (ALMANAC_REQUIRE_SANDBOX=1) but {problem}")
        pytest.skip(f"no sandbox here: {problem}")
    yield box
    box.close()


async def run(box: Sandbox, code: str, language: str = "python") -> Outcome:
    async with box.run_dir(language, textwrap.dedent(code)) as folder:
        return await box.execute(folder, language=language)


def text(outcome: Outcome) -> str:
    return outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")


async def test_what_bubblewrap_was_started_with_does_not_reach_the_program(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sandbox_module.LAUNCH_ENV, "ALMANAC_LEAK", "sk-live-should-not-be-seen")
    outcome = await run(sandbox, "import os\nprint(sorted(os.environ))\nprint(os.environ.get('ALMANAC_LEAK'))")
    assert text(outcome) == "['HOME', 'LANG', 'PATH', 'PWD', 'TMPDIR']\nNone\n"


async def test_the_program_has_a_session_of_its_own_and_cannot_push_terminal_input(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import fcntl, os, termios
        print("session", os.getsid(0))  # the sandbox's init leads it; outside the sandbox it would be 0
        try:
            fcntl.ioctl(0, termios.TIOCSTI, b"x")
            print("tiocsti sent")
        except OSError as exc:
            print("tiocsti refused", exc.errno)
        try:
            os.open("/dev/tty", os.O_RDWR)
            print("tty opened")
        except OSError as exc:
            print("tty refused", exc.errno)
        """,
    )
    lines = outcome.stdout.decode().splitlines()
    assert lines == ["session 1", "tiocsti refused 1", "tty refused 6"]  # EPERM, ENXIO


async def test_the_program_in_code_cannot_be_changed(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os
        for attempt in (
            lambda: os.chmod("/code/main.py", 0o666),
            lambda: open("/code/main.py", "a").write("pwned"),
            lambda: open("/code/new.py", "w").write("pwned"),
            lambda: os.rename("/code/main.py", "/code/old.py"),
        ):
            try:
                attempt()
                print("changed")
            except OSError as exc:
                print("refused", exc.errno)
        print(open("/code/main.py").read().endswith("pwned"), os.listdir("/code"))
        """,
    )
    lines = outcome.stdout.decode().splitlines()
    assert lines[0] == "refused 30" and lines[2:4] == ["refused 30"] * 2  # EROFS
    assert lines[1] in ("refused 13", "refused 30")  # read-only to all (EACCES comes first)
    assert lines[4] == "False ['main.py']"


async def test_output_written_in_odd_chunks_is_cut_exactly_at_the_limit(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os
        for i in range(40):
            os.write(1, bytes([65 + i % 26]) * 7_001)  # chunks that straddle the limit
        """,
    )
    expected = b"".join(bytes([65 + i % 26]) * 7_001 for i in range(40))[: LIMITS.output_bytes]
    assert outcome.stdout == expected and outcome.stdout_size > LIMITS.output_bytes
    assert outcome.stopped == "output"
