"""Attempts to hold more disk or memory than a run is given, each by another route, against the real
sandbox: fallocate past the file size, unlinked files still open, writes through /proc/self/fd,
mmap'd sparse files, many small files, memfd, SysV and POSIX shared memory, a tmpfs in a nested
namespace, many processes each under the per-process limit — and the kernel interfaces a program
could use to get around the limits (io_uring, userfaultfd, keyrings, bpf, perf events, ptrace,
mount, unshare, setns). Each program reports what it managed to hold; the tests bound it.

Skipped where bubblewrap cannot run, unless ALMANAC_REQUIRE_SANDBOX=1 (then they fail).
"""

import os
import textwrap
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from almanac.tools.sandbox import Limits, Outcome, Sandbox, SandboxConfig

REQUIRE = os.environ.get("ALMANAC_REQUIRE_SANDBOX", "") == "1"
MIB = 1024 * 1024
LIMITS = Limits(timeout_s=15, memory_mb=256, processes=16, disk_mb=20, disk_files=500)


async def checked(config: SandboxConfig) -> Sandbox:
    box = Sandbox(config)
    problem = await box.check()
    if problem is not None:
        if REQUIRE:
            pytest.fail(f"the sandbox is required (ALMANAC_REQUIRE_SANDBOX=1) but {problem}")
        pytest.skip(f"no sandbox here: {problem}")
    return box


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    box = await checked(SandboxConfig(LIMITS))
    yield box
    box.close()


async def run(box: Sandbox, code: str, language: str = "python") -> Outcome:
    async with box.run_dir(language, textwrap.dedent(code)) as folder:
        return await box.execute(folder, language=language)


def report(outcome: Outcome) -> dict[str, str]:
    """`key value` lines the programs print."""
    lines = outcome.stdout.decode(errors="replace").splitlines()
    return dict(line.split(" ", 1) for line in lines if " " in line)


def mib(value: str) -> float:
    return int(value) / MIB


# --- disk -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["/tmp", "/workspace"])
async def test_fallocate_keep_size_cannot_reserve_more_than_the_disk_limit(sandbox: Sandbox, folder: str) -> None:
    outcome = await run(
        sandbox,
        f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long)
        fd = os.open("{folder}/big", os.O_RDWR | os.O_CREAT)
        result = libc.fallocate(fd, 1, 0, 4 << 30)  # FALLOC_FL_KEEP_SIZE, 4 GiB
        print("result", result, ctypes.get_errno())
        print("size", os.fstat(fd).st_size)
        print("held", os.fstat(fd).st_blocks * 512)
        """,
    )
    seen = report(outcome)
    assert seen["result"].split()[0] == "-1", out(outcome)
    assert mib(seen["held"]) <= LIMITS.disk_mb


async def test_unlinked_open_files_cannot_hold_more_than_the_disk_limit(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os
        held, files = 0, []
        block = b"x" * (1 << 20)
        for i in range(40):
            f = open(f"/tmp/u{i}", "wb")
            os.unlink(f"/tmp/u{i}")
            files.append(f)
            try:
                for _ in range(16):
                    f.write(block)
                    f.flush()
                    held += len(block)
            except OSError as exc:
                print("refused", exc.strerror)
                break
        print("held", held)
        """,
    )
    seen = report(outcome)
    assert seen["refused"] == "No space left on device"
    assert mib(seen["held"]) <= LIMITS.disk_mb


async def test_writes_through_proc_self_fd_of_an_unlinked_file_are_bounded(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os
        fd = os.open("/workspace/gone", os.O_RDWR | os.O_CREAT)
        os.unlink("/workspace/gone")
        held, kept = 0, []
        try:
            for i in range(64):
                again = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND)
                os.write(again, b"y" * (1 << 20))
                kept.append(again)
                held += 1 << 20
        except OSError as exc:
            print("refused", exc.strerror)
        print("held", os.fstat(fd).st_blocks * 512)
        """,
    )
    seen = report(outcome)
    assert "refused" in seen and mib(seen["held"]) <= LIMITS.file_size_mb


async def test_mapped_sparse_files_cannot_fill_memory_past_the_disk_limit(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import mmap, os, signal
        touched = 0
        for i in range(8):
            fd = os.open(f"/tmp/sparse{i}", os.O_RDWR | os.O_CREAT)
            try:
                os.ftruncate(fd, 15 << 20)  # sparse: nothing allocated yet
            except OSError as exc:
                print("refused", exc.strerror)
                break
            pid = os.fork()
            if pid == 0:
                view = mmap.mmap(fd, 15 << 20)
                for offset in range(0, 15 << 20, 4096):
                    view[offset] = 1  # each page allocated now, or SIGBUS when the file system is full
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            if os.WIFSIGNALED(status):
                print("signal", signal.Signals(os.WTERMSIG(status)).name)
                break
            touched += 15 << 20
        print("held", sum(os.stat(f"/tmp/{name}").st_blocks * 512 for name in os.listdir("/tmp")))
        """,
    )
    seen = report(outcome)
    assert seen.get("signal") == "SIGBUS", out(outcome)
    assert mib(seen["held"]) <= LIMITS.disk_mb


async def test_a_file_past_the_file_size_limit_is_refused(sandbox: Sandbox) -> None:
    limits = replace(LIMITS, file_size_mb=4)
    box = await checked(SandboxConfig(limits))
    outcome = await run(
        box,
        """
        import os
        with open("/tmp/one", "wb") as f:
            try:
                for _ in range(10):
                    f.write(b"z" * (1 << 20))
                    f.flush()
            except OSError as exc:
                print("refused", exc.errno)
        print("size", os.stat("/tmp/one").st_size)
        """,
    )
    seen = report(outcome)
    assert seen["refused"] == "27"  # EFBIG: the file-size limit, well before the file system is full
    assert int(seen["size"]) == 4 * MIB


async def test_a_flood_of_small_files_stops_the_program(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os, time
        for i in range(1_000_000):
            open(f"/tmp/{i}", "w").close()
        print("FINISHED")
        time.sleep(30)
        """,
    )
    assert outcome.stopped == "disk" and b"FINISHED" not in outcome.stdout


# --- memory ---------------------------------------------------------------------------------------


async def test_memfd_cannot_hold_memory(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import os
        held = 0
        try:
            for i in range(128):
                fd = os.memfd_create(f"m{i}")
                os.posix_fallocate(fd, 0, 16 << 20)
                held += 16 << 20
        except OSError as exc:
            print("refused", exc.strerror)
        print("held", held)
        """,
    )
    seen = report(outcome)
    assert seen["refused"] == "Operation not permitted" and seen["held"] == "0"


async def test_sysv_shared_memory_and_message_queues_are_refused(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmget.argtypes = (ctypes.c_int, ctypes.c_size_t, ctypes.c_int)
        print("shmget", libc.shmget(0, 512 << 20, 0o1600), ctypes.get_errno())  # IPC_PRIVATE | IPC_CREAT
        print("msgget", libc.msgget(0, 0o1600), ctypes.get_errno())
        print("semget", libc.semget(0, 1, 0o1600), ctypes.get_errno())
        """,
    )
    seen = report(outcome)
    assert (seen["shmget"], seen["msgget"], seen["semget"]) == ("-1 1", "-1 1", "-1 1")  # EPERM


async def test_posix_shared_memory_has_nowhere_to_live(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        """
        import ctypes, mmap, os
        try:
            fd = os.open("/dev/shm/almanac", os.O_RDWR | os.O_CREAT, 0o600)
            os.ftruncate(fd, 64 << 20)
            mmap.mmap(fd, 64 << 20)[:] = b"s" * (64 << 20)
            print("shm held")
        except OSError as exc:
            print("shm refused", exc.strerror)
        libc = ctypes.CDLL(None, use_errno=True)
        print("mq_open", libc.mq_open(b"/almanac", 0o100 | 0o2, 0o600, None), ctypes.get_errno())
        """,
    )
    seen = report(outcome)
    assert seen["shm"] == "refused Read-only file system"
    assert seen["mq_open"] == "-1 1"


async def test_a_tmpfs_in_a_nested_namespace_cannot_be_mounted(sandbox: Sandbox) -> None:
    outcome = await run(
        sandbox,
        "unshare -Urm sh -c 'mount -t tmpfs none /tmp && echo MOUNTED'\necho status $?",
        language="bash",
    )
    assert b"MOUNTED" not in outcome.stdout and report(outcome)["status"] != "0"


async def test_nested_user_namespaces_are_off_even_without_the_filter(sandbox: Sandbox) -> None:
    """--disable-userns on its own: the filter (which also refuses unshare) is taken away."""
    sandbox.features = replace(sandbox.features, seccomp=None)
    outcome = await run(sandbox, "unshare -Ur true; echo status $?", language="bash")
    assert report(outcome)["status"] != "0"
    assert b"No space left on device" in outcome.stderr  # the kernel's limit of 1 namespace, taken


async def test_many_processes_together_stay_within_the_runs_memory(sandbox: Sandbox) -> None:
    """Each process is under its own 256 MiB; together they would hold far more. The run's memory
    cgroup bounds them all (on hosts without one this bound does not exist: see the startup table)."""
    if sandbox.features.cgroups is None:
        if REQUIRE and os.geteuid() == 0:
            pytest.fail("as root this host should give each run a memory cgroup")
        pytest.skip("no memory cgroup per run on this host")
    outcome = await run(
        sandbox,
        """
        import os, time
        reader, writer = os.pipe()
        for _ in range(12):
            if os.fork() == 0:
                block = bytearray(200 << 20)  # zero-filled: every page touched
                os.write(writer, b"+")
                time.sleep(60)
                os._exit(0)
        os.close(writer)
        os.set_blocking(reader, False)
        held = dead = 0
        deadline = time.monotonic() + 8
        while held + dead < 12 and time.monotonic() < deadline:
            time.sleep(0.1)
            try:
                held += len(os.read(reader, 100))
            except BlockingIOError:
                pass
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                dead += 1
        print("held", held)
        print("killed", dead)
        """,
    )
    held = int(report(outcome)["held"]) * 200
    assert held <= LIMITS.memory_mb + LIMITS.disk_mb + 128, out(outcome)
    assert outcome.memory_exhausted


# --- kernel interfaces ------------------------------------------------------------------------------

SYSCALLS = {  # x86_64 and arm64 numbers, and arguments that would work unfiltered
    "io_uring_setup": ((425, 425), "8, ctypes.byref(ctypes.create_string_buffer(120))"),
    "userfaultfd": ((323, 282), "1"),  # UFFD_USER_MODE_ONLY
    "keyctl": ((250, 219), "0, -3, 0"),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": ((248, 217), 'b"user", b"almanac", b"x", 1, -3'),
    "bpf": ((321, 280), "0, None, 0"),
    "perf_event_open": ((298, 241), "ctypes.byref(ctypes.create_string_buffer(128)), 0, -1, -1, 0"),
    "ptrace": ((101, 117), "0, 0, 0, 0"),  # PTRACE_TRACEME
    "unshare": ((272, 97), "0x20000"),  # CLONE_NEWNS
    "setns": ((308, 268), "0, 0"),
    "mount": ((165, 40), 'b"none", b"/tmp", b"tmpfs", 0, None'),
    "memfd_secret": ((447, 447), "0"),
    "mmap_hugetlb": ((9, 222), "None, 2 << 20, 3, 0x40022, -1, 0"),  # MAP_HUGETLB | MAP_ANONYMOUS | PRIVATE
}


async def test_kernel_interfaces_that_bypass_the_limits_are_refused(sandbox: Sandbox) -> None:
    machine = os.uname().machine
    index = 0 if machine == "x86_64" else 1 if machine == "aarch64" else None
    if index is None:
        pytest.skip(f"system call numbers are listed for x86_64 and aarch64, not {machine}")
    calls = "\n".join(
        f'print("{name}", libc.syscall({numbers[index]}, {arguments}), ctypes.get_errno())'
        for name, (numbers, arguments) in SYSCALLS.items()
    )
    outcome = await run(sandbox, "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" + calls)
    seen = report(outcome)
    assert seen == {name: "-1 1" for name in SYSCALLS}, out(outcome)  # EPERM from the filter, for each


def out(outcome: Outcome) -> str:
    return outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")
