"""A server killed mid-answer (SIGKILL: no finish step runs) leaves nothing stuck: after a restart
its conversation is free within the lease, the unfinished query is marked interrupted and
refunded, and the next question on the same conversation is answered."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from tests.support import clean_environment, wait_ready

ALMANAC = [sys.executable, "-m", "almanac.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(folder: Path, port: int) -> subprocess.Popen[str]:
    environment = clean_environment()
    environment.update(
        CHAT_PROVIDER="offline",
        OFFLINE_TOKEN_DELAY_MS="30",  # a long answer takes many seconds: time to kill the server mid-way
        CONVERSATION_LEASE_S="2",
        MCP_ENABLED="false",
        DOCS_AUTO_INDEX="false",
        EMBEDDINGS="none",
    )
    return subprocess.Popen(
        [*ALMANAC, "serve", "--port", str(port)],
        cwd=folder,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def test_a_query_killed_with_its_server_is_settled_after_a_restart(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start(tmp_path, port)
    try:
        wait_ready(server, url)
        key = (tmp_path / "data" / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        conversation = ""
        words = 0
        with httpx.stream(
            "POST", f"{url}/api/chat/stream", json={"message": "give me a long tour"}, headers=headers, timeout=60
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    conversation = event.get("conversation_id", conversation)
                    words += event["type"] == "text_delta"
                if words >= 5:
                    os.killpg(server.pid, signal.SIGKILL)  # no shutdown, no finish step
                    break
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    assert conversation

    restarted = start(tmp_path, port)
    try:
        wait_ready(restarted, url)
        deadline = time.monotonic() + 60  # a guard against hanging, not a timing assertion
        while True:
            reply = httpx.post(
                f"{url}/api/chat",
                json={"message": "hello again", "conversation_id": conversation},
                headers=headers,
                timeout=60,
            )
            if reply.status_code != 409:
                break
            assert time.monotonic() < deadline, "the conversation stayed busy"
            time.sleep(0.5)
        assert reply.status_code == 200, reply.text
        assert reply.json()["query_id"] == "q2"
        interrupted = httpx.get(f"{url}/api/conversations/{conversation}/items/q1-r", headers=headers).json()
        assert interrupted["status"] == "interrupted" and "Interrupted" in interrupted["content"]
        credits = httpx.get(f"{url}/api/credits", headers=headers).json()
        # q1 was refunded in full; q2 (small talk the offline model declines) cost nothing
        assert reply.json()["stop_reason"] == "declined" and credits["balance"] == 50
    finally:
        os.killpg(restarted.pid, signal.SIGINT)
        restarted.wait(timeout=30)
