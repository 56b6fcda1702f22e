"""The workspace file tools as the model meets them: results, refusals it can read (free of
charge, nothing done), and each user confined to their own folder."""

import os
from pathlib import Path

import pytest

from almanac.tools.base import ToolContext
from almanac.tools.builtin.confined import WorkspaceLimits
from almanac.tools.builtin.files import ListFilesTool, ReadFileTool, WriteFileTool
from almanac.tools.builtin.workspace import Workspaces


def context(user_id: str = "u1") -> ToolContext:
    return ToolContext(user_id, "c1", 1, "q1", "q1-t1", "toolu_1")


@pytest.fixture
def workspaces(tmp_path: Path) -> Workspaces:
    return Workspaces(tmp_path / "workspaces", WorkspaceLimits(max_file_bytes=1000, max_total_bytes=5000))


async def test_write_then_list_then_read(workspaces: Workspaces) -> None:
    written = await WriteFileTool(workspaces).run({"path": "notes.txt", "content": "hello ```world```"}, context())
    assert (written.content, written.is_error, written.free) == (
        "Wrote 17 bytes to notes.txt (now 17 bytes).",
        False,
        False,
    )
    appended = await WriteFileTool(workspaces).run({"path": "notes.txt", "content": "!", "append": True}, context())
    assert appended.content == "Appended 1 byte to notes.txt (now 18 bytes)."
    await WriteFileTool(workspaces).run({"path": "data/out.csv", "content": "a,b\n1,2\n"}, context())
    listed = await ListFilesTool(workspaces).run({}, context())
    assert listed.content == "2 files (26 bytes):\n- data/out.csv  8 bytes\n- notes.txt  18 bytes"
    assert (await ListFilesTool(workspaces).run({"folder": "data"}, context())).content.startswith("1 file (8 bytes)")
    read = await ReadFileTool(workspaces).run({"path": "notes.txt"}, context())
    assert read.content == "notes.txt (18 bytes):\n````\nhello ```world```!\n````"
    assert read.data == {"path": "notes.txt", "size": 18}


async def test_an_empty_workspace_and_a_missing_file_cost_nothing(workspaces: Workspaces) -> None:
    listed = await ListFilesTool(workspaces).run({}, context())
    assert (listed.content, listed.free) == ("There are no files in the workspace yet.", True)
    missing = await ReadFileTool(workspaces).run({"path": "nope.txt"}, context())
    assert (missing.is_error, missing.free) == (True, True)
    assert "nope.txt: no such file" in missing.content
    assert not workspaces.root.exists()  # looking leaves no folder behind


@pytest.mark.parametrize("path", ["../u2/secret.txt", "/etc/shadow", "~/.ssh/id_rsa", "a/../../u2/secret.txt"])
async def test_traversal_is_refused_and_free(workspaces: Workspaces, path: str) -> None:
    await WriteFileTool(workspaces).run({"path": "secret.txt", "content": "u2's secret"}, context("u2"))
    for tool, arguments in (
        (ReadFileTool(workspaces), {"path": path}),
        (WriteFileTool(workspaces), {"path": path, "content": "pwned"}),
    ):
        result = await tool.run(arguments, context("u1"))
        assert (result.is_error, result.free) == (True, True)
        assert result.content.startswith("Refused: ")
    assert (workspaces.root / "u2" / "secret.txt").read_text() == "u2's secret"
    assert not (workspaces.root / "u1").exists() or not any((workspaces.root / "u1").iterdir())


async def test_a_symlink_escape_is_refused_and_listed_as_a_link(workspaces: Workspaces, tmp_path: Path) -> None:
    (tmp_path / "app.db").write_text("users and keys")
    await WriteFileTool(workspaces).run({"path": "ok.txt", "content": "fine"}, context())
    os.symlink(tmp_path / "app.db", workspaces.root / "u1" / "db.txt")
    read = await ReadFileTool(workspaces).run({"path": "db.txt"}, context())
    assert read.is_error and "symbolic link" in read.content and "users and keys" not in read.content
    write = await WriteFileTool(workspaces).run({"path": "db.txt", "content": "overwrite"}, context())
    assert write.is_error and (tmp_path / "app.db").read_text() == "users and keys"
    listed = await ListFilesTool(workspaces).run({}, context())
    assert "- db.txt  (symbolic link, not followed)" in listed.content


async def test_a_binary_file_is_described_not_dumped(workspaces: Workspaces) -> None:
    workspaces.of("u1").write("image.png", b"\x89PNG\x00\x00\x01")
    read = await ReadFileTool(workspaces).run({"path": "image.png"}, context())
    assert read.content == "image.png is a binary file of 7 bytes; its content is not shown."


async def test_a_write_over_the_limit_is_refused_and_free(workspaces: Workspaces) -> None:
    result = await WriteFileTool(workspaces).run({"path": "big.txt", "content": "x" * 1001}, context())
    assert (result.is_error, result.free) == (True, True)
    assert "limit is 1,000" in result.content
    assert not (workspaces.root / "u1" / "big.txt").exists()
