"""Reading upstream refusals (pure, table-driven, in the servers' own words)."""

import pytest

from almanac.gateway.refusals import (
    ContextRefusal,
    context_refusal,
    output_limit,
    prompt_too_long,
    refuses_mid_system,
    refuses_parameter,
)


@pytest.mark.parametrize(
    ("message", "fields", "expected"),
    [
        (  # OpenAI / vLLM, prompt and completion given
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (7000 in the "
            "messages, 2000 in the completion). Please reduce the length of the messages or completion.",
            None,
            ContextRefusal(limit=8192, prompt=7000, completion=2000),
        ),
        (  # OpenAI, the prompt alone
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130,000 tokens. "
            "Please reduce the length of the messages.",
            None,
            ContextRefusal(limit=128000, prompt=130000),
        ),
        (  # newer vLLM
            "'max_tokens' or 'max_completion_tokens' is too large: 64000. This model's maximum context length is 32768 "
            "tokens and your request has 1234 input tokens (64000 > 32768 - 1234).",
            None,
            ContextRefusal(limit=32768, prompt=1234, completion=64000),
        ),
        (  # llama.cpp's server
            "the request exceeds the available context size, try increasing it",
            {"type": "exceed_context_size_error", "n_prompt_tokens": 9100, "n_ctx": 8192},
            ContextRefusal(limit=8192, prompt=9100),
        ),
        (  # Anthropic
            "prompt is too long: 210000 tokens > 200000 maximum",
            None,
            ContextRefusal(limit=200000, prompt=210000),
        ),
        ("context_length_exceeded", None, ContextRefusal()),
        ("Unsupported parameter: 'reasoning_effort'", None, None),
        ("bad request", None, None),
    ],
    ids=[
        "openai-requested",
        "openai-resulted",
        "vllm-too-large",
        "llama-cpp",
        "anthropic",
        "code-only",
        "other",
        "none",
    ],
)
def test_context_refusals(message: str, fields: dict[str, object] | None, expected: ContextRefusal | None) -> None:
    assert context_refusal(message, fields) == expected


def test_room_is_what_the_window_leaves_beside_the_prompt() -> None:
    refusal = ContextRefusal(limit=8192, prompt=7000, completion=2000)
    assert refusal.prompt_fits and refusal.room() == 1192
    assert not ContextRefusal(limit=8192, prompt=9000).prompt_fits
    assert not ContextRefusal().prompt_fits and ContextRefusal().room() is None


def test_output_limits_are_read_from_openais_wording() -> None:
    message = (
        "max_tokens is too large: 64000. This model supports at most 16384 completion tokens, whereas you provided "
        "64000."
    )
    assert output_limit(message) == 16384
    assert output_limit("bad request") is None


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ("System message must be at the beginning.", True),
        ("Conversation roles must alternate user/assistant/user/assistant/...", True),
        ("System role not supported", True),
        ("Only one system message is allowed", True),
        ("Unexpected role 'system' after role 'user'", True),
        ("The system is overloaded", False),
        ("tools are not supported", False),
    ],
)
def test_mid_conversation_system_refusals(message: str, refused: bool) -> None:
    assert refuses_mid_system(message) is refused


@pytest.mark.parametrize(
    ("message", "name", "refused"),
    [
        ("Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort", True),
        ("Unrecognized request argument supplied: reasoning_effort", "reasoning_effort", True),
        ("response_format: extra fields not permitted", "response_format", True),
        ("Unsupported parameter: 'reasoning_effort'", "response_format", False),
        ("reasoning_effort must be one of low, medium, high", "reasoning_effort", False),
    ],
)
def test_parameter_refusals(message: str, name: str, refused: bool) -> None:
    assert refuses_parameter(message, name) is refused


def test_prompt_too_long_is_anthropics_wording_with_the_prompt_above_the_limit() -> None:
    error = prompt_too_long(9100, 8192)
    assert (error.status, error.error_type, error.message) == (
        400,
        "invalid_request_error",
        "prompt is too long: 9100 tokens > 8192 maximum",
    )
    assert prompt_too_long(100, 8192).message == "prompt is too long: 8193 tokens > 8192 maximum"  # a low estimate
