"""The gateway on a real `almanac serve` process, with the official anthropic SDK over real HTTP and
a fake OpenAI-compatible upstream: create, stream a tool call, count tokens, an error, and the
startup table's tier mapping and boost status."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.support import clean_environment, wait_ready

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, FakeOpenAI, subprocess.Popen[str]]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as upstream:
        port = free_port()
        environment = clean_environment("BOOST_")
        environment.update(
            OPENAI_BASE_URL=upstream.url + "/v1",
            CHAT_PROVIDER="offline",
            BIG_MODEL="big-upstream",
            SMALL_MODEL="small-upstream",
            MCP_ENABLED="false",
            DOCS_AUTO_INDEX="false",
            EMBEDDINGS="none",
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(process, url)
            key = (tmp_path / "data" / "local-api-key").read_text().strip()
            yield url, key, fake, process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=30)


def test_the_sdk_against_a_real_server(served: tuple[str, str, FakeOpenAI, subprocess.Popen[str]]) -> None:
    url, key, fake, process = served
    fake.enqueue(
        Reply(text="Hello over HTTP", prompt_tokens=12, completion_tokens=4),
        Reply(text="Checking.", tool_calls=[("call_1", "get_weather", {"city": "Oslo"})], chunk_delay_s=0.005),
    )
    client = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
    message = client.messages.create(
        model="claude-opus-4-6", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text.strip() == "Hello over HTTP"  # type: ignore[union-attr]
    assert fake.requests[0]["body"]["model"] == "big-upstream"
    with client.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=50,
        messages=[{"role": "user", "content": "weather in Oslo?"}],
        tools=[WEATHER],  # type: ignore[list-item]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.stop_reason == "tool_use" and final.content[1].input == {"city": "Oslo"}  # type: ignore[union-attr]
    assert fake.requests[1]["body"]["model"] == "small-upstream"
    assert (
        client.messages.count_tokens(
            model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}]
        ).input_tokens
        > 0
    )
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(api_key="alm_wrong_key_0000000000000000", base_url=url, max_retries=0).messages.create(
            model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=30)
    assert "gateway tiers" in output and "BIG_MODEL → openai / big-upstream" in output
    assert "boost" in output and "not configured" in output
