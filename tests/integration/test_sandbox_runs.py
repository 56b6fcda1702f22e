"""code_execution on the real sandbox: the three languages, stdin, the workspace copied in and the
program's files saved back (links and over-limit folders not), a language without an interpreter,
and a sandbox that cannot be set up — or one that does not isolate — never running the program.
Skipped where bubblewrap cannot run, unless ALMANAC_REQUIRE_SANDBOX=1."""

import json
import logging
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pyseccomp
import pytest

from almanac.tools.assembly import BuiltinTools
from almanac.tools.base import ToolContext, ToolUnavailable
from almanac.tools.builtin.code_execution import CodeExecutionTool
from almanac.tools.builtin.confined import WorkspaceLimits
from almanac.tools.builtin.workspace import Workspaces
from almanac.tools.config import CodeExecutionConfig, ToolsConfig
from almanac.tools.registry import ToolRegistry
from almanac.tools.sandbox import Limits, Sandbox, SandboxConfig, SandboxUnavailable

REQUIRE = os.environ.get("ALMANAC_REQUIRE_SANDBOX", "") == "1"
BACKEND = Path(__file__).resolve().parents[2] / "backend"
LIMITS = Limits(timeout_s=5, memory_mb=256)
CONTEXT = ToolContext("user-1", "c1", 1, "q1", "q1-t1", "toolu_1")


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


@pytest.fixture
def workspaces(tmp_path: Path) -> Workspaces:
    return Workspaces(tmp_path / "workspaces", WorkspaceLimits(max_file_bytes=1000, max_total_bytes=3000, max_files=10))


async def test_each_language_runs_and_reads_stdin(sandbox: Sandbox) -> None:
    tool = CodeExecutionTool(sandbox, languages=("python", "javascript", "bash"))
    python = await tool.run({"language": "python", "code": "print(2**10)"}, CONTEXT)
    assert python.content.startswith("python · exit code 0 · ")
    assert "stdout:\n```\n1024\n```\nstderr: (empty)" in python.content and not python.is_error
    assert python.data is not None and python.data["exit_code"] == 0 and python.data["timed_out"] is False
    bash = await tool.run({"language": "bash", "code": 'read name; echo "hi $name"; id -u', "stdin": "ada\n"}, CONTEXT)
    assert "hi ada\n1000" in bash.content
    if "javascript" in sandbox.interpreters:
        js = await tool.run({"language": "javascript", "code": "console.log([1,2,3].map(x => x * 2))"}, CONTEXT)
        assert "[ 2, 4, 6 ]" in js.content
    failing = await tool.run({"language": "python", "code": "import sys\nprint('partial')\nsys.exit(3)"}, CONTEXT)
    assert failing.is_error and "exit code 3" in failing.content and "partial" in failing.content


async def test_the_workspace_is_copied_in_and_the_programs_files_saved_back(
    sandbox: Sandbox, workspaces: Workspaces, tmp_path: Path
) -> None:
    space = workspaces.of("user-1")
    space.write("notes.txt", b"three\none\ntwo\n")
    space.write("old.txt", b"remove me")
    (tmp_path / "secret.txt").write_text("outside")
    tool = CodeExecutionTool(sandbox, languages=("python",), workspaces=workspaces)
    code = textwrap.dedent(
        f"""
        import os
        lines = open("/workspace/notes.txt").read().split()
        os.makedirs("/workspace/out", exist_ok=True)
        open("/workspace/out/sorted.txt", "w").write("\\n".join(sorted(lines)))
        os.remove("/workspace/old.txt")
        os.symlink("{tmp_path / "secret.txt"}", "/workspace/link.txt")
        os.mkfifo("/workspace/fifo")
        print(sorted(os.listdir("/workspace")))
        """
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "['fifo', 'link.txt', 'notes.txt', 'out']" in result.content
    assert "[saved to the workspace: out/sorted.txt]" in result.content
    assert "[removed from the workspace: old.txt]" in result.content
    assert (
        "[not saved (links, special files, names that are not UTF-8, or conflicts): fifo, link.txt]" in result.content
    )
    assert space.read("out/sorted.txt", max_bytes=100)[0] == b"one\nthree\ntwo"
    assert sorted(e.path for e in space.entries()) == ["notes.txt", "out", "out/sorted.txt"]
    assert workspaces.of("user-2").entries() == []  # another user's runs see none of it


async def test_a_file_name_that_is_not_utf8_is_skipped_with_a_note_and_the_rest_saved(
    sandbox: Sandbox, workspaces: Workspaces
) -> None:
    tool = CodeExecutionTool(sandbox, languages=("python",), workspaces=workspaces)
    code = (
        "import os\nos.makedirs(b'/workspace/d\\xe9j\\xe0', exist_ok=True)\n"
        "open(b'/workspace/r\\xe9sum\\xe9.txt', 'wb').write(b'latin-1 name')\n"
        "open(b'/workspace/d\\xe9j\\xe0/inner.txt', 'wb').write(b'under a latin-1 folder')\n"
        "open('/workspace/ok.txt', 'w').write('fine')"
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "[saved to the workspace: ok.txt]" in result.content
    assert "names that are not UTF-8, or conflicts): d\\xe9j\\xe0/inner.txt, r\\xe9sum\\xe9.txt]" in result.content
    assert [e.path for e in workspaces.of("user-1").entries()] == ["ok.txt"]
    result.content.encode("utf-8")  # the note itself is text the model can be sent


async def test_a_program_that_breaks_the_workspace_limits_saves_nothing(
    sandbox: Sandbox, workspaces: Workspaces
) -> None:
    workspaces.of("user-1").write("keep.txt", b"kept")
    tool = CodeExecutionTool(sandbox, languages=("python",), workspaces=workspaces)
    code = (
        "for i in range(20):\n    open(f'/workspace/f{i}.txt', 'w').write('x')\n"
        "open('/workspace/keep.txt', 'w').write('changed')"
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "[/workspace was not saved: more than 10 files]" in result.content
    assert [e.path for e in workspaces.of("user-1").entries()] == ["keep.txt"]
    assert workspaces.of("user-1").read("keep.txt", max_bytes=10)[0] == b"kept"


async def test_a_full_tmp_refuses_writes_and_the_run_never_holds_more() -> None:
    """/tmp is a file system of `disk_mb`: writing more fails with ENOSPC (the kernel's limit)."""
    box = Sandbox(SandboxConfig(Limits(timeout_s=20, disk_mb=5, file_size_mb=4)))
    if await box.check() is not None:
        pytest.skip("no sandbox here")
    tool = CodeExecutionTool(box, languages=("python",))
    code = (
        "import os\nwritten = 0\ntry:\n    for i in range(1000):\n"
        "        open(f'/tmp/{i}', 'wb').write(b'x' * 1_000_000)\n        written += 1\n"
        "except OSError as exc:\n    print('refused after', written, 'MB:', exc.strerror)\n"
        "print(os.statvfs('/tmp').f_blocks * os.statvfs('/tmp').f_frsize)"
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "refused after 5 MB: No space left on device" in result.content
    assert f"\n{5 * 1024 * 1024}\n" in result.content  # the size the program sees is the limit


async def test_writing_too_much_to_tmp_and_workspace_together_stops_the_program() -> None:
    box = Sandbox(SandboxConfig(Limits(timeout_s=20, disk_mb=5, file_size_mb=4)))
    if await box.check() is not None:
        pytest.skip("no sandbox here")
    tool = CodeExecutionTool(box, languages=("python",))
    code = (
        "import time\nopen('/tmp/a', 'wb').write(b'x' * 3_000_000)\n"
        "open('/workspace/b', 'wb').write(b'x' * 3_000_000)\ntime.sleep(30)"
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "stopped: wrote more than 5 MiB or 2,000 files" in result.content
    assert result.data is not None and result.data["stopped"] == "disk" and result.data["timed_out"] is False


async def test_a_workspace_larger_than_the_disk_limit_still_fits_and_the_limit_counts_new_writes(
    tmp_path: Path,
) -> None:
    box = Sandbox(SandboxConfig(Limits(timeout_s=20, disk_mb=1)))
    if await box.check() is not None:
        pytest.skip("no sandbox here")
    spaces = Workspaces(tmp_path / "big", WorkspaceLimits(max_file_bytes=2_000_000, max_total_bytes=5_000_000))
    spaces.of("user-1").write("a.bin", b"a" * 1_500_000)
    spaces.of("user-1").write("b.bin", b"b" * 1_500_000)
    tool = CodeExecutionTool(box, languages=("python",), workspaces=spaces)
    code = (
        "import os\nprint(sorted((n, os.path.getsize('/workspace/' + n)) for n in os.listdir('/workspace')))\n"
        "open('/workspace/c.bin', 'wb').write(b'c' * 500_000)\n"
        "try:\n    open('/workspace/d.bin', 'wb').write(b'd' * 1_000_000)\n"
        "except OSError as exc:\n    print('refused', exc.strerror)"
    )
    result = await tool.run({"language": "python", "code": code}, CONTEXT)
    assert "[('a.bin', 1500000), ('b.bin', 1500000)]" in result.content
    assert "refused No space left on device" in result.content  # 1 MiB of new files, not more
    assert "[saved to the workspace: c.bin, d.bin]" in result.content  # d.bin as far as it got
    written = [len(spaces.of("user-1").read(name, max_bytes=2_000_000)[0]) for name in ("c.bin", "d.bin")]
    assert written[0] == 500_000 and written[0] + written[1] <= 1024 * 1024


async def test_a_language_without_an_interpreter_is_reported_and_free(sandbox: Sandbox) -> None:
    sandbox.interpreters.pop("javascript", None)
    tool = CodeExecutionTool(sandbox, languages=("python", "javascript"))
    result = await tool.run({"language": "javascript", "code": "console.log(1)"}, CONTEXT)
    assert (result.is_error, result.free) == (True, True)
    assert result.content == (
        "javascript cannot run here: no `node` or `nodejs` interpreter is installed on this server. "
        "Languages available: python."
    )


@pytest.fixture
def public_folder() -> Iterator[Path]:
    """A folder other users can read (pytest's own are private): the sandbox's host user runs from it."""
    folder = Path(tempfile.mkdtemp(prefix="almanac-test-"))
    folder.chmod(0o777)  # writable by anyone, so that even an unsandboxed program could leave its marker
    yield folder
    shutil.rmtree(folder)


def fake_bwrap(folder: Path, script: str, *, real_help: bool = True) -> str:
    """A stand-in for bubblewrap running `script`; `--help` lists the real one's options (unless not)."""
    path = folder / "bwrap"
    real = shutil.which("bwrap", path="/usr/bin:/bin")
    helping = f'[ "$1" = --help ] && exec {real} --help\n' if real_help and real else ""
    path.write_text("#!/bin/sh\n" + helping + script)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        (
            "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
            "No permissions to create new namespace",
        ),
        # A "sandbox" that runs the program without isolating it: the probe notices, nothing runs.
        ('while [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n', "did not run as its own user"),
    ],
)
async def test_a_sandbox_that_cannot_be_set_up_never_runs_the_program(
    public_folder: Path, caplog: pytest.LogCaptureFixture, script: str, problem: str
) -> None:
    if shutil.which("prlimit", path="/usr/bin:/bin") is None:
        pytest.skip("prlimit is not installed")
    bwrap = fake_bwrap(public_folder, script)
    marker = public_folder / "ran"
    config = ToolsConfig(code=CodeExecutionConfig(limits=LIMITS))
    tools = BuiltinTools(config)
    sandbox = Sandbox(SandboxConfig(LIMITS, bwrap=bwrap))
    tools.sandbox = sandbox
    tools.tools = [CodeExecutionTool(sandbox, languages=("bash",))]
    registry = ToolRegistry(tools.tools)
    with caplog.at_level(logging.WARNING, logger="almanac.tools"):
        await tools.start(registry)
    assert "code_execution" not in registry
    assert any(problem in reason for reason in tools.off())
    assert any("code_execution is off: the sandbox cannot be set up here" in r.getMessage() for r in caplog.records)
    with pytest.raises(ToolUnavailable, match=problem):
        await tools.tools[0].run({"language": "bash", "code": f"touch {marker}"}, CONTEXT)
    async with sandbox.run_dir("bash", f"touch {marker}") as run:
        with pytest.raises(SandboxUnavailable):
            await sandbox.execute(run, language="bash")
    assert not marker.exists()
    sandbox.close()


def readable_copy_of_almanac(folder: Path) -> Path:
    """Almanac's package and the filter's binding, copied into `folder` readable by every user: the
    repository itself may lie in a folder only its owner can enter (a clone under a private home)."""
    shutil.copytree(BACKEND / "almanac", folder / "almanac", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(pyseccomp.__file__, folder / "pyseccomp.py")
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def test_as_an_unprivileged_user_the_sandbox_runs_as_that_user_with_its_limits(public_folder: Path) -> None:
    """Almanac run as a normal user (as in the Docker image): the sandbox is that user's, the process
    limit and the file systems' sizes hold. Run here through setpriv as uid 65534 with the system
    Python (when we are root), from a copy of the code that user can read."""
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if os.geteuid() != 0 or python is None or shutil.which("setpriv") is None:
        pytest.skip("needs root (to become another user), setpriv and a system python3")
    code_folder = readable_copy_of_almanac(public_folder)
    script = textwrap.dedent(
        f"""
            import asyncio, json, os, sys
            sys.path.insert(0, {str(code_folder)!r})
            from almanac.tools.sandbox import Limits, Sandbox, SandboxConfig

            async def main():
                box = Sandbox(SandboxConfig(Limits(timeout_s=5, processes=8, disk_mb=7)))
                problem = await box.check()
                code = (
                    "import os\\nn = 0\\ntry:\\n    while True:\\n        os.fork() or os._exit(0)\\n"
                    "        n += 1\\nexcept OSError:\\n    print(n, os.getuid())\\n"
                    "print(os.statvfs('/tmp').f_blocks * os.statvfs('/tmp').f_frsize)"
                )
                result = None
                if problem is None:
                    async with box.run_dir("python", code) as run:
                        outcome = await box.execute(run, language="python")
                        result = outcome.stdout.decode()
                box.close()
                report = {{"problem": problem, "host_user": box.host_user, "euid": os.geteuid(), "out": result}}
                print(json.dumps(report))

            asyncio.run(main())
            """
    )
    done = subprocess.run(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", python, "-"],
        input=script,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if report["problem"] is not None and not REQUIRE:
        pytest.skip(f"no sandbox for an unprivileged user here: {report['problem']}")
    assert (report["euid"], report["host_user"], report["problem"]) == (65534, None, None)
    forks, uid, tmp_size = report["out"].split()
    assert int(forks) < 8 and uid == "1000" and int(tmp_size) == 7 * 1024 * 1024


def test_it_runs_on_uvloop_as_almanac_serve_does() -> None:
    """`almanac serve` runs on uvloop, whose subprocesses take fewer options than asyncio's."""
    uvloop = pytest.importorskip("uvloop")

    async def main() -> tuple[str | None, bytes, bool]:
        box = Sandbox(SandboxConfig(Limits(timeout_s=2)))
        try:
            problem = await box.check()
            if problem is not None:
                return problem, b"", False
            async with box.run_dir("python", "print(6 * 7)") as run:
                printed = (await box.execute(run, language="python")).stdout
            async with box.run_dir("bash", "sleep 60") as run:
                timed_out = (await box.execute(run, language="bash")).timed_out
            return None, printed, timed_out
        finally:
            box.close()

    problem, printed, timed_out = uvloop.run(main())
    if problem is not None:
        if REQUIRE:
            pytest.fail(problem)
        pytest.skip(problem)
    assert (printed, timed_out) == (b"42\n", True)
