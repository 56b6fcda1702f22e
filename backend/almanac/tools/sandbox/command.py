"""The bubblewrap command line of one run (pure), and the host facts it is built from.

What the program sees:

- `/usr` (and `/bin`, `/sbin`, `/lib*` as the host has them: symlinks into `/usr` or read-only
  binds), a handful of `/etc` files the dynamic loader needs, a fresh `/proc` of its own PID
  namespace and a minimal `/dev` — all read-only (so `/dev/shm` too);
- `/tmp`: a private tmpfs of a fixed size (the working directory, also `HOME`);
- `/workspace`: another (the host writes the caller's workspace into it, see `runfs.py`);
- `/code`: the program itself, read-only (bubblewrap copies it from a descriptor: no host folder
  has to be readable by the sandbox's user).

Nothing else of the host exists in there: not the repository, the data folder, the database,
`/root`, `/home`, `/var` or `/run`. Any of those that lie under a bound system folder are covered
(an empty read-only tmpfs over a folder, `/dev/null` over a file). The environment is cleared
(PATH, HOME, LANG, TMPDIR only); every namespace is new (user, PID, network with only its own
loopback, IPC, UTS, cgroup) and no further user namespace can be made inside (`--disable-userns`);
the program runs as uid/gid 1000 with no capabilities, in a new session, under the system-call
filter of `seccomp.py`, and dies with its parent.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
ROOT_ENTRIES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
# Where interpreters are looked for on the host; the same paths exist inside the sandbox.
INTERPRETERS = {"python": ("python3",), "javascript": ("node", "nodejs"), "bash": ("bash",)}
SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class HostLayout:
    """What of the host the sandbox shows: `/usr`, and how `/bin`, `/lib`, … look on this host."""

    symlinks: tuple[tuple[str, str], ...] = ()  # (target, /path): /bin -> usr/bin on merged-/usr hosts
    read_only: tuple[str, ...] = ("/usr",)  # bound read-only at the same path
    etc: tuple[str, ...] = ()  # /etc entries bound read-only


@dataclass(frozen=True)
class RunPaths:
    """What one run shows beyond the system folders."""

    program: str  # /code/<program> (read-only), its contents read by bubblewrap from `program_fd`
    program_fd: int
    # Host paths under a bound folder that must not show: folders get an empty read-only tmpfs over
    # them, files /dev/null.
    hidden_dirs: tuple[Path, ...] = field(default=())
    hidden_files: tuple[Path, ...] = field(default=())


def host_layout(root: Path = Path("/")) -> HostLayout:
    """How this host's root is laid out (merged /usr or not); reads the file system."""
    symlinks: list[tuple[str, str]] = []
    read_only = ["/usr"]
    for name in ROOT_ENTRIES:
        path = root / name
        if path.is_symlink():
            symlinks.append((os.readlink(path), f"/{name}"))
        elif path.is_dir():
            read_only.append(f"/{name}")
    etc = tuple(f"/etc/{name}" for name in ETC_FILES if (root / "etc" / name).exists())
    return HostLayout(tuple(symlinks), tuple(read_only), etc)


def find_interpreters(search_path: str = SEARCH_PATH) -> dict[str, str]:
    """Language → interpreter path, for the interpreters installed under the system folders."""
    found: dict[str, str] = {}
    for language, names in INTERPRETERS.items():
        for name in names:
            if path := shutil.which(name, path=search_path):
                found[language] = path
                break
    return found


def hidden_paths(protected: Sequence[Path], layout: HostLayout) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The protected host paths (data folder, repository, database…) that a system bind would
    expose, as (folders, files); reads the file system."""
    bound = [Path(p) for p in (*layout.read_only, *layout.etc)]
    folders: list[Path] = []
    files: list[Path] = []
    for path in protected:
        resolved = path.resolve()
        if any(resolved == b or b in resolved.parents for b in bound) and resolved.exists():
            (folders if resolved.is_dir() else files).append(resolved)
    return tuple(folders), tuple(files)


def bwrap_argv(
    bwrap: str,
    layout: HostLayout,
    paths: RunPaths,
    command: Sequence[str],
    *,
    prlimit: str,
    limits: Sequence[str],
    fs_bytes: int | None,
    workspace_bytes: int | None = None,
    info_fd: int | None = None,
    block_fd: int | None = None,
    seccomp_fd: int | None = None,
    disable_userns: bool = True,
) -> list[str]:
    """The full command line: bubblewrap, then `prlimit` setting the limits, then `command`.
    `fs_bytes` is the size of /tmp, and of /workspace unless `workspace_bytes` is given (room for
    the files copied in as well); None: tmpfs without a size, only when the operator allowed it.
    With `info_fd`, bubblewrap writes the sandbox's init PID there (JSON); with `block_fd`, it
    waits, set up, until a byte arrives there; `seccomp_fd` is the compiled system-call filter."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    argv += ["--cap-drop", "ALL", "--clearenv"]
    if disable_userns:
        argv.append("--disable-userns")
    for option, fd in (("--info-fd", info_fd), ("--block-fd", block_fd), ("--seccomp", seccomp_fd)):
        if fd is not None:
            argv += [option, str(fd)]
    for name, value in (("PATH", SANDBOX_PATH), ("HOME", "/tmp"), ("TMPDIR", "/tmp"), ("LANG", "C.UTF-8")):
        argv += ["--setenv", name, value]
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", "sandbox"]
    for path in layout.read_only:
        argv += ["--ro-bind", path, path]
    for target, path in layout.symlinks:
        argv += ["--symlink", target, path]
    for path in layout.etc:
        argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    sizes = {"/tmp": fs_bytes, "/workspace": workspace_bytes or fs_bytes}
    for mount, size in sizes.items():
        argv += [*(["--size", str(size)] if fs_bytes is not None else []), "--tmpfs", mount]
    argv += ["--perms", "0444", "--ro-bind-data", str(paths.program_fd), f"/code/{paths.program}"]
    for folder in paths.hidden_dirs:
        argv += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
    for file in paths.hidden_files:
        argv += ["--ro-bind", "/dev/null", str(file)]
    argv += ["--chdir", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/"]
    return [*argv, "--", prlimit, *limits, "--", *command]
