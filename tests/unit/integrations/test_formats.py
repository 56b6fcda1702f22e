"""What counts as a GitHub token, and how it is shown to its owner."""

import pytest

from almanac.integrations.formats import FORMATS, MalformedToken

GITHUB = FORMATS["github"]
CLASSIC = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"  # 40 characters
FINE_GRAINED = "github_pat_" + "11ABCDEFG0" * 8 + "xy"


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        (CLASSIC, CLASSIC),
        (f"  {CLASSIC}\n", CLASSIC),
        (FINE_GRAINED, FINE_GRAINED),
        ("gho_" + "x" * 36, "gho_" + "x" * 36),
        ("ghu_" + "Y" * 36, "ghu_" + "Y" * 36),
        ("0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ],
)
def test_valid_tokens_are_accepted(raw: str, stored: str) -> None:
    assert GITHUB.normalise(raw) == stored


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("glpat-" + "x" * 30, "letters, digits and underscores"),
        ("Bearer " + CLASSIC, "letters, digits and underscores"),
        ("ghp_abc$" + "x" * 32, "letters, digits and underscores"),
        ("ghs_" + "x" * 36, "must start with ghp_"),
        ("ghr_" + "x" * 36, "must start with ghp_"),
        ("sk_" + "x" * 40, "must start with ghp_"),
        ("ghp_short", "too short"),
        ("ghp_" + "x" * 300, "too long"),
    ],
)
def test_malformed_tokens_name_the_problem_and_never_the_token(raw: str, problem: str) -> None:
    with pytest.raises(MalformedToken, match=problem) as error:
        GITHUB.normalise(raw)
    if raw.strip():
        assert raw.strip() not in str(error.value)


def test_the_mask_shows_the_kind_and_the_last_four_characters() -> None:
    assert GITHUB.mask(CLASSIC) == "ghp_…G7h8"
    assert GITHUB.mask(FINE_GRAINED) == f"github_pat_…{FINE_GRAINED[-4:]}"
    assert GITHUB.mask("0123456789abcdef0123456789abcdef01234567") == "…4567"
