"""Docker counts as usable only when `docker info` answers (real commands on a controlled PATH)."""

from pathlib import Path

import pytest

from almanac.mcp_client.docker import docker_problem


def fake_docker(folder: Path, script: str) -> None:
    docker = folder / "docker"
    docker.write_text("#!/bin/sh\n" + script)
    docker.chmod(0o755)


async def test_no_docker_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert await docker_problem() == "the docker command is not installed"


async def test_a_daemon_that_does_not_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_docker(tmp_path, 'echo "Cannot connect to the Docker daemon. Is it running?" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert await docker_problem() == "Cannot connect to the Docker daemon. Is it running?"


async def test_a_hanging_docker_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_docker(tmp_path, "exec sleep 30\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert await docker_problem(timeout_s=0.3) == "`docker info` did not answer within 0.3 s"


async def test_a_working_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_docker(tmp_path, 'echo "28.2.2"\n')
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert await docker_problem() is None
