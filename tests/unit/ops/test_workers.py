"""`almanac serve --workers N`: how the flag is read (the processes themselves are run by
tests/integration/test_serve_workers.py)."""

from __future__ import annotations

import pytest

from almanac.cli import _parser
from almanac.config import Settings
from almanac.ops.workers import worker_count, worker_settings


def test_serve_takes_a_number_of_workers_and_defaults_to_one() -> None:
    assert _parser().parse_args(["serve", "--workers", "3"]).workers == 3
    assert _parser().parse_args(["serve"]).workers == 1


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5"])
def test_a_worker_count_is_a_whole_number_of_at_least_one(text: str) -> None:
    with pytest.raises(ValueError):
        worker_count(text)


def test_the_parser_refuses_a_bad_count_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--workers", "0"])
    assert "--workers must be at least 1" in capsys.readouterr().err


def test_only_the_first_worker_builds_the_documentation_index_by_itself() -> None:
    settings = Settings(docs_auto_index=True)
    assert worker_settings(settings, 0).docs_auto_index is True
    assert [worker_settings(settings, index).docs_auto_index for index in (1, 2)] == [False, False]
    assert worker_settings(settings, 1).port == settings.port  # nothing else changes
