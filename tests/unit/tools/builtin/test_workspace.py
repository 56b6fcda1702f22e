"""Workspace folders: every operation stays inside the caller's folder. Traversal (`..`, absolute
paths, `~`), symbolic links out of it (as the file, as a folder on the way, as the workspace
itself, swapped in while reading), FIFOs and devices are refused; the limits hold."""

import os
import threading
from pathlib import Path

import pytest

from almanac.tools.builtin.confined import WorkspaceError, WorkspaceLimits, read_tree, split_path
from almanac.tools.builtin.workspace import Workspace, Workspaces

SECRET = b"the database password is hunter2"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_bytes(SECRET)
    return folder


@pytest.fixture
def workspaces(tmp_path: Path) -> Workspaces:
    return Workspaces(
        tmp_path / "data" / "workspaces", WorkspaceLimits(max_file_bytes=100, max_total_bytes=250, max_files=5)
    )


@pytest.fixture
def space(workspaces: Workspaces) -> Workspace:
    workspace = workspaces.of("user-1")
    workspace.write("hello.txt", b"hi")
    return workspace


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside/secret.txt", "leaves the workspace"),
        ("notes/../../x", "leaves the workspace"),
        ("..", "leaves the workspace"),
        ("/etc/shadow", "absolute"),
        ("~/secret.txt", "absolute"),
        ("", "empty"),
        ("  ", "empty"),
        (".", "names the workspace itself"),
        ("a\x00b", "control character"),
        ("a\nb", "control character"),
        ("..\\outside", "backslash"),
        ("x" * 256, "longer than 255 bytes"),
        ("/".join(["d"] * 17), "deep"),
    ],
)
def test_paths_that_leave_the_workspace_or_cannot_exist_are_refused(path: str, why: str) -> None:
    with pytest.raises(WorkspaceError, match=why):
        split_path(path)


def test_harmless_spellings_are_normalised() -> None:
    assert split_path("./notes//today.md") == ("notes", "today.md")
    assert split_path("a..b/.hidden") == ("a..b", ".hidden")


def test_write_read_append_list_and_delete_stay_in_the_users_folder(space: Workspace, workspaces: Workspaces) -> None:
    assert space.write("notes/today.md", b"one") == 3
    assert space.write("notes/today.md", b" two", append=True) == 7
    assert space.read("notes/today.md", max_bytes=100) == (b"one two", 7)
    assert space.read("notes/today.md", max_bytes=3) == (b"one", 7)
    assert [(e.path, e.kind, e.size) for e in space.entries()] == [
        ("hello.txt", "file", 2),
        ("notes", "folder", 0),
        ("notes/today.md", "file", 7),
    ]
    assert (space.folder / "notes" / "today.md").read_bytes() == b"one two"
    assert space.folder == workspaces.root / "user-1"
    assert oct(space.folder.stat().st_mode & 0o777) == "0o700"
    assert oct(workspaces.root.stat().st_mode & 0o777) == "0o700"
    assert space.delete("notes/today.md") and not space.delete("notes/today.md")
    assert workspaces.of("user-2").entries() == []  # another user sees none of it
    with pytest.raises(WorkspaceError, match="no such file"):
        workspaces.of("user-2").read("hello.txt", max_bytes=10)


def test_a_user_id_that_is_not_a_plain_name_has_no_workspace(workspaces: Workspaces) -> None:
    for user_id in ("../user-1", "a/b", "", "."):
        with pytest.raises(WorkspaceError):
            workspaces.of(user_id)


def test_a_link_to_a_file_outside_is_never_followed(space: Workspace, outside: Path) -> None:
    os.symlink(outside / "secret.txt", space.folder / "link.txt")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        space.read("link.txt", max_bytes=100)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        space.write("link.txt", b"overwritten")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        space.write("link.txt", b"appended", append=True)
    assert not space.delete("link.txt")
    assert (outside / "secret.txt").read_bytes() == SECRET  # untouched
    assert ("link.txt", "link") in [(e.path, e.kind) for e in space.entries()]


def test_a_linked_folder_on_the_way_is_never_entered(space: Workspace, outside: Path) -> None:
    os.symlink(outside, space.folder / "docs")
    with pytest.raises(WorkspaceError, match="symbolic link or not a folder"):
        space.read("docs/secret.txt", max_bytes=100)
    with pytest.raises(WorkspaceError, match="symbolic link or not a folder"):
        space.write("docs/new.txt", b"x")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert [e.path for e in space.entries() if e.path.startswith("docs")] == ["docs"]  # listed, not walked


def test_a_workspace_folder_that_is_itself_a_link_is_refused(workspaces: Workspaces, outside: Path) -> None:
    workspaces.root.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, workspaces.root / "user-3")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        workspaces.of("user-3").read("secret.txt", max_bytes=100)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        workspaces.of("user-3").write("x.txt", b"x")


def test_a_fifo_is_refused_without_blocking(space: Workspace) -> None:
    os.mkfifo(space.folder / "pipe")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        space.read("pipe", max_bytes=10)
    with pytest.raises(WorkspaceError, match="not a regular file"):
        space.write("pipe", b"x")


def test_a_link_swapped_in_while_reading_is_never_followed(space: Workspace, outside: Path) -> None:
    """A folder on the path is replaced by a link to the outside, over and over, while reads run:
    each read either finds the real file or is refused; none ever returns the secret. (Whether any read
    lands while the real folder is in place is up to the thread scheduler; the same read once the swapping
    stops must find the file.)"""
    space.write("box/secret.txt", b"inside")
    real, parked, link = space.folder / "box", space.folder / "box-real", space.folder / "box-link"
    os.symlink(outside, link)
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(real, parked)
            os.rename(link, real)  # box -> outside
            os.rename(real, link)
            os.rename(parked, real)

    swapper = threading.Thread(target=swap)
    swapper.start()
    seen: set[bytes | str] = set()
    try:
        for _ in range(3000):
            try:
                seen.add(space.read("box/secret.txt", max_bytes=100)[0])
            except WorkspaceError as exc:
                seen.add(str(exc).split(":")[0])
    finally:
        stop.set()
        swapper.join()
    assert SECRET not in seen
    assert space.read("box/secret.txt", max_bytes=100)[0] == b"inside"


def test_limits_on_one_file_the_whole_workspace_and_the_number_of_files(space: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="would be 101 bytes; the limit is 100"):
        space.write("big.txt", b"x" * 101)
    space.write("a.txt", b"x" * 100)
    space.write("b.txt", b"x" * 100)
    with pytest.raises(WorkspaceError, match="would hold 252 bytes; the limit is 250"):
        space.write("c.txt", b"x" * 50)
    space.write("b.txt", b"x" * 10)  # replacing counts the new size only
    space.write("c.txt", b"1")
    space.write("d.txt", b"1")
    with pytest.raises(WorkspaceError, match="already holds 5 files"):
        space.write("e.txt", b"1")
    with pytest.raises(WorkspaceError, match="would be 101 bytes"):
        space.write("a.txt", b"x", append=True)
    assert space.totals() == (2 + 100 + 10 + 1 + 1, 5)


def test_reading_an_untrusted_folder_skips_links_and_special_files(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "from-a-program"
    (folder / "sub").mkdir(parents=True)
    (folder / "out.csv").write_bytes(b"a,b\n")
    (folder / "sub" / "deep.txt").write_bytes(b"deep")
    os.symlink(outside / "secret.txt", folder / "stolen.txt")
    os.symlink(outside, folder / "sub" / "escape")
    os.mkfifo(folder / "fifo")
    tree = read_tree(folder, WorkspaceLimits())
    assert tree.files == {"out.csv": b"a,b\n", "sub/deep.txt": b"deep"}
    assert sorted(tree.skipped) == ["fifo", "stolen.txt", "sub/escape"]
    assert tree.problem is None


def test_an_untrusted_folder_over_a_limit_is_taken_as_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "from-a-program"
    folder.mkdir()
    for index in range(3):
        (folder / f"{index}.txt").write_bytes(b"x" * 60)
    assert read_tree(folder, WorkspaceLimits(max_files=2)).problem == "more than 2 files"
    assert read_tree(folder, WorkspaceLimits(max_file_bytes=50)).problem == "0.txt is over 50 bytes"
    assert read_tree(folder, WorkspaceLimits(max_total_bytes=100)).problem == "the files add up to more than 100 bytes"
    assert read_tree(folder, WorkspaceLimits(max_total_bytes=100)).files == {}
