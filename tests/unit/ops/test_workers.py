"""`almanac serve --workers N`: how the flag is read (the processes themselves are run by
tests/integration/test_serve_workers.py)."""

from __future__ import annotations

import pytest

from almanac.cli import _parser
from almanac.ops.workers import worker_count


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
