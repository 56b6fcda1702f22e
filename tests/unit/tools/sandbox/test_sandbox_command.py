"""The bubblewrap command line and the limits it carries: what the sandbox shows of the host, and
what it does not (pure; the real sandbox is exercised in tests/integration/test_sandbox_*.py)."""

import os
from pathlib import Path

from almanac.tools.sandbox.command import (
    HostLayout,
    RunPaths,
    bwrap_argv,
    hidden_paths,
    host_layout,
)
from almanac.tools.sandbox.limits import MIB, Limits, prlimit_args

LAYOUT = HostLayout(
    symlinks=(("usr/bin", "/bin"), ("usr/lib", "/lib")),
    read_only=("/usr",),
    etc=("/etc/ld.so.cache",),
)
PATHS = RunPaths("main.py", 7)


def argv(paths: RunPaths = PATHS) -> list[str]:
    return bwrap_argv(
        "/usr/bin/bwrap",
        LAYOUT,
        paths,
        ["/usr/bin/python3", "/code/main.py"],
        prlimit="/usr/bin/prlimit",
        limits=["--nproc=32"],
        fs_bytes=100 * MIB,
    )


def pairs(arguments: list[str], option: str) -> list[tuple[str, str]]:
    return [(arguments[i + 1], arguments[i + 2]) for i, a in enumerate(arguments) if a == option]


def test_every_namespace_is_new_and_the_environment_is_cleared() -> None:
    arguments = argv()
    assert arguments[0] == "/usr/bin/bwrap"
    for option in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"):
        assert option in arguments
    assert "--share-net" not in arguments
    assert pairs(arguments, "--setenv") == [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/tmp"),
        ("TMPDIR", "/tmp"),
        ("LANG", "C.UTF-8"),
    ]
    assert arguments[arguments.index("--uid") + 1] == "1000" and arguments[arguments.index("--gid") + 1] == "1000"
    assert arguments[arguments.index("--cap-drop") + 1] == "ALL"


def test_only_system_folders_are_shown_read_only_and_only_the_run_folders_are_writable() -> None:
    arguments = argv()
    assert pairs(arguments, "--ro-bind") == [("/usr", "/usr"), ("/etc/ld.so.cache", "/etc/ld.so.cache")]
    assert pairs(arguments, "--ro-bind-data") == [("7", "/code/main.py")]  # the program, from a descriptor
    assert pairs(arguments, "--bind") == []
    # /tmp and /workspace are file systems of their own, of a size the kernel enforces
    assert [arguments[i - 2 : i + 2] for i, a in enumerate(arguments) if a == "--tmpfs"] == [
        ["--size", str(100 * MIB), "--tmpfs", "/tmp"],
        ["--size", str(100 * MIB), "--tmpfs", "/workspace"],
    ]
    assert pairs(arguments, "--symlink") == [("usr/bin", "/bin"), ("usr/lib", "/lib")]
    assert "--dev-bind" not in arguments and "/root" not in arguments and "/home" not in arguments


def test_the_root_and_dev_are_remounted_read_only_after_every_mount() -> None:
    arguments = argv()
    separator = arguments.index("--")
    assert arguments[separator - 4 : separator] == ["--remount-ro", "/dev", "--remount-ro", "/"]
    mounts = [i for i, a in enumerate(arguments) if a in ("--bind", "--ro-bind", "--tmpfs", "--proc", "--dev")]
    assert max(mounts) < separator - 4


def test_prlimit_runs_inside_the_sandbox_before_the_program() -> None:
    arguments = argv()
    first = arguments.index("--")
    assert arguments[first + 1 : first + 3] == ["/usr/bin/prlimit", "--nproc=32"]
    assert arguments[arguments.index("--", first + 1) + 1 :] == ["/usr/bin/python3", "/code/main.py"]


def test_protected_host_paths_under_a_bound_folder_are_covered(tmp_path: Path) -> None:
    inside = tmp_path / "usr" / "srv" / "data"
    inside.mkdir(parents=True)
    database = tmp_path / "usr" / "srv" / "app.db"
    database.write_text("")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    layout = HostLayout(read_only=(str(tmp_path / "usr"),))
    folders, files = hidden_paths([inside, database, outside, tmp_path / "usr" / "missing"], layout)
    assert (folders, files) == ((inside,), (database,))
    arguments = bwrap_argv(
        "bwrap", layout, RunPaths("main.py", 7, folders, files), ["x"], prlimit="p", limits=[], fs_bytes=None
    )
    assert pairs(arguments, "--tmpfs")[2:] == [(str(inside), "--remount-ro")]
    assert "--size" not in arguments
    assert (str(inside), "--tmpfs") not in pairs(arguments, "--remount-ro")
    assert ("/dev/null", str(database)) in pairs(arguments, "--ro-bind")


def test_the_host_layout_follows_merged_usr_links(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    os.symlink("usr/bin", tmp_path / "bin")
    (tmp_path / "lib64").mkdir()  # a real folder on a non-merged host
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "ld.so.cache").write_text("")
    layout = host_layout(tmp_path)
    assert layout.symlinks == (("usr/bin", "/bin"),)
    assert layout.read_only == ("/usr", "/lib64")
    assert layout.etc == ("/etc/ld.so.cache",)


def test_limits_set_soft_and_hard_together_and_node_gets_room_for_its_reservations() -> None:
    limits = Limits(timeout_s=2.5, memory_mb=256, processes=8, file_size_mb=4, open_files=64)
    assert prlimit_args(limits, language="python") == [
        "--cpu=4",
        f"--as={256 * MIB}",
        "--nproc=8",
        f"--fsize={4 * MIB}",
        "--nofile=64",
        "--core=0",
    ]
    assert f"--as={(256 + 1024) * MIB}" in prlimit_args(limits, language="javascript")
