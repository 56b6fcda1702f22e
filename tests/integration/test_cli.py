"""The `almanac` command as a user runs it: serve on defaults, users, keys, credits, bad settings."""

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.support import clean_environment, wait_ready

ALMANAC = [sys.executable, "-m", "almanac.cli"]


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = clean_environment()
    environment.update(env)
    return subprocess.run(ALMANAC + args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_users_credits_and_keys(tmp_path: Path) -> None:
    created = run(["users", "create", "--email", "Dev@Example.com", "--plan", "pro"], tmp_path)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("alm_") and len(key) > 40
    assert "dev@example.com" in created.stdout and "plan pro" in created.stdout
    assert run(["users", "create", "--email", "dev@example.com"], tmp_path).returncode == 1
    granted = run(["credits", "grant", "--email", "dev@example.com", "--amount", "500", "--reason", "pack"], tmp_path)
    assert granted.returncode == 0 and "balance is now 650" in granted.stdout
    shown = run(["credits", "show", "--email", "dev@example.com"], tmp_path)
    assert "balance 650" in shown.stdout and "+500 pack" in shown.stdout and "allowance" in shown.stdout
    another = run(["keys", "create", "--email", "dev@example.com", "--name", "ci"], tmp_path)
    second = another.stdout.strip().splitlines()[-1]
    assert second.startswith("alm_")
    listed = run(["keys", "list", "--email", "dev@example.com"], tmp_path)
    assert listed.returncode == 0 and len(listed.stdout.strip().splitlines()) == 2
    assert second[:8] in listed.stdout and second not in listed.stdout and " ci " in listed.stdout
    revoked = run(["keys", "revoke", "--email", "dev@example.com", "--key", second[:8]], tmp_path)
    assert revoked.returncode == 0, revoked.stderr
    assert "REVOKED" in run(["keys", "list", "--email", "dev@example.com"], tmp_path).stdout
    again = run(["keys", "revoke", "--email", "dev@example.com", "--key", second[:8]], tmp_path)
    assert again.returncode == 1 and "no active key" in again.stderr
    missing = run(["credits", "show", "--email", "nobody@example.com"], tmp_path)
    assert missing.returncode == 1 and "no user with e-mail" in missing.stderr
    assert (tmp_path / "data" / "almanac.db").exists()
    assert key not in (tmp_path / "data" / "almanac.db").read_bytes().decode("latin-1")


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MAX_TURNS": "0"}, "MAX_TURNS"),
        ({"PORT": "http"}, "PORT"),
        ({"CHAT_PROVIDER": "gpt"}, "CHAT_PROVIDER"),
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
        ({"CHAT_PROVIDER": "anthropic"}, "ANTHROPIC_API_KEY"),
    ],
)
def test_invalid_settings_stop_startup_naming_the_variable(tmp_path: Path, env: dict[str, str], variable: str) -> None:
    result = run(["db", "upgrade"], tmp_path, **env)
    assert result.returncode == 2
    assert variable in result.stderr and "Traceback" not in result.stderr


def test_serve_on_embedded_defaults_and_restart(tmp_path: Path) -> None:
    port = free_port()

    (tmp_path / "docs" / "ops").mkdir(parents=True)
    (tmp_path / "docs" / "ops" / "backups.md").write_text("# Backups\n\nRun pg_dump nightly and keep 7 copies.")

    def start() -> subprocess.Popen[str]:
        environment = clean_environment()
        # The local doc index is built in the background on first start; keep it small here.
        environment.update(DOCS_INCLUDE_PACKAGES="false", DOCS_INCLUDE_STDLIB="false", EMBEDDINGS="none")
        environment.update(DOCS_PATHS=str(tmp_path / "docs"))  # the operator's own documentation folder
        return subprocess.Popen(
            [*ALMANAC, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def stop(process: subprocess.Popen[str]) -> str:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        return output

    first = start()
    try:
        wait_ready(first, f"http://127.0.0.1:{port}")
        key_file = tmp_path / "data" / "local-api-key"
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        assert oct((tmp_path / "data").stat().st_mode & 0o777) == "0o700"
        assert oct((tmp_path / "data" / "almanac.db").stat().st_mode & 0o777) == "0o600"
        link = (tmp_path / "data" / "local-sign-in-url").read_text().strip()
        assert link.startswith(f"http://127.0.0.1:{port}/#sign-in=")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as browser:
            token = link.split("#sign-in=")[1]
            assert browser.post("/api/auth/local", json={"token": token}).status_code == 200
            assert browser.get("/api/me").json()["email"] == "local@localhost"
        key = key_file.read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        reply = httpx.post(f"http://127.0.0.1:{port}/api/chat", json={"message": "hello"}, headers=headers, timeout=30)
        # The offline model cannot answer small talk: it says so, and saying so costs nothing.
        assert reply.status_code == 200 and reply.json()["stop_reason"] == "declined"
        assert reply.json()["credits_remaining"] == 50
        conversation = reply.json()["conversation_id"]
        deadline = time.monotonic() + 30
        while True:  # the background index build finishes within seconds for one file
            answer = httpx.post(
                f"http://127.0.0.1:{port}/api/chat",
                headers=headers,
                timeout=30,
                json={"message": "How do I keep backups in ops?"},
            ).json()
            if "pg_dump nightly" in answer.get("response", "") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert answer["tools_used"] == ["retrieve_documentation"] and "pg_dump nightly" in answer["response"]
        assert answer["stop_reason"] == "end_turn" and answer["credits_used"] > 0  # an answer is charged
    finally:
        log = stop(first)
    assert re.search(r"chat model\s+offline / almanac-offline", log) and "database" in log
    assert key not in log
    assert link in log  # printed on the terminal (stdout), like a notebook server's link

    second = start()
    try:
        wait_ready(second, f"http://127.0.0.1:{port}")
        detail = httpx.get(f"http://127.0.0.1:{port}/api/conversations/{conversation}", headers=headers, timeout=10)
        assert [item["id"] for item in detail.json()["full"]] == ["q1", "q1-r"]
        assert httpx.get(f"http://127.0.0.1:{port}/api/credits", headers=headers).json()["balance"] < 45
    finally:
        log = stop(second)
    assert "created the local user" not in log


def test_docs_index_builds_then_finds_nothing_to_do(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nHow to deploy.\n\n## Backups\n\nNightly.")
    env = {"DOCS_INCLUDE_PACKAGES": "false", "DOCS_INCLUDE_STDLIB": "false", "DOCS_PATHS": str(tmp_path / "docs")}
    built = run(["docs", "index", "--no-embeddings"], tmp_path, **env)
    assert built.returncode == 0, built.stderr
    assert "local documentation index built: 2 chunks" in built.stdout
    assert "BM25 index built" in built.stderr
    again = run(["docs", "index", "--no-embeddings"], tmp_path, **env)
    assert "up to date" in again.stdout


def test_docs_index_embeds_the_passages_only_for_a_whole_index_vector_search(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nHow to deploy.\n\n## Backups\n\nNightly.")
    env = {"DOCS_INCLUDE_PACKAGES": "false", "DOCS_INCLUDE_STDLIB": "false", "DOCS_PATHS": str(tmp_path / "docs")}
    reorder = run(["docs", "index"], tmp_path, EMBEDDINGS="local", **env)  # LOCAL_DENSE=reorder, the default
    assert reorder.returncode == 0, reorder.stderr
    assert "BM25 index built" in reorder.stderr and "embedding chunks" not in reorder.stderr
    fuse = run(["docs", "index", "--force"], tmp_path, EMBEDDINGS="local", LOCAL_DENSE="fuse", **env)
    assert fuse.returncode == 0, fuse.stderr
    assert "embedding chunks 2/2" in fuse.stderr
