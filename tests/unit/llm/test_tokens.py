"""Token estimates are conservative (never fewer than one token per 4 characters, at least what a
real tokenizer counts on common text) and learn from what providers report."""

import inspect
import json

import pytest
from tests.fakes.tokens import count_text

from almanac.llm.tokens import DEFAULT_CONTEXT_TOKENS, TokenCounter, context_window, estimate_tokens, output_limit

SAMPLES = {
    "prose": "The quick brown fox jumps over the lazy dog while reading documentation. " * 50,
    "code": inspect.getsource(json.decoder),
    "json": json.dumps([{"id": n, "name": f"item-{n}", "tags": ["a", "b"], "price": n * 1.5} for n in range(200)]),
    "cjk": "日本語のテキストはトークンが多い。" * 50,
    "markdown": "# Title\n\n- item one\n- item two\n\n```python\nprint('hi')\n```\n" * 40,
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_the_estimate_is_never_below_one_token_per_four_characters(kind: str) -> None:
    text = SAMPLES[kind]
    assert estimate_tokens(text) >= len(text) / 4


@pytest.mark.parametrize("kind", ["prose", "code", "json", "cjk", "markdown"])
def test_the_estimate_is_at_least_what_a_real_tokenizer_counts(kind: str) -> None:
    text = SAMPLES[kind]
    assert estimate_tokens(text) >= count_text(text) * 0.95


def test_known_models_have_their_windows_and_others_a_safe_default() -> None:
    assert context_window("claude-haiku-4-5") == 200_000
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("llama3:8b") == 8_192
    assert context_window("llama3.1:8b") == 128_000
    assert context_window("qwen2.5-coder:7b") == 32_768
    assert context_window("my-own-finetune") == DEFAULT_CONTEXT_TOKENS == 32_000


def test_cut_keeps_the_longest_prefix_within_the_budget_at_a_break() -> None:
    counter = TokenCounter()
    text = SAMPLES["prose"]
    head = counter.cut(text, 100)
    assert counter.count(head) <= 100 and text.startswith(head)
    assert counter.count(counter.cut(text, 101)) > 90  # not needlessly short
    assert head.endswith(
        ("dog", "documentation.", "fox", "lazy", "the", "while", "over", "jumps", "brown", "quick", "reading")
    )
    assert counter.cut(text, 0) == "" and counter.cut("short", 50) == "short"


def test_reports_of_more_tokens_scale_later_estimates_up_never_down() -> None:
    counter = TokenCounter()
    before = counter.count(SAMPLES["prose"])
    counter.observe(estimated=1_000, actual=1_500)
    assert counter.count(SAMPLES["prose"]) >= before * 1.5
    scaled = counter.scale
    counter.observe(estimated=1_000, actual=500)
    assert counter.scale == scaled


def test_output_limits_of_known_models() -> None:
    assert output_limit("gpt-4o-mini") == 16_384
    assert output_limit("claude-sonnet-4-5") == 64_000
    assert output_limit("qwen2.5-coder:7b") == 32_768  # no output limit listed: up to its window
    assert output_limit("my-own-finetune") is None
