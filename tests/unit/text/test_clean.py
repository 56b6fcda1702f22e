"""Cleaning text for storage and JSON: NUL and lone surrogates become U+FFFD, nothing else changes."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from almanac.text.clean import REPLACEMENT, clean_json, clean_text, is_clean


@pytest.mark.parametrize(
    ("dirty", "clean"),
    [
        ("plain", "plain"),
        ("a\x00b", f"a{REPLACEMENT}b"),
        ("\ud800", REPLACEMENT),
        ("é\udfffx\x00", f"é{REPLACEMENT}x{REPLACEMENT}"),
        ("emoji 😀 stays", "emoji 😀 stays"),
        ("tabs\tand\nnewlines", "tabs\tand\nnewlines"),
    ],
)
def test_nul_and_lone_surrogates_become_the_replacement_character(dirty: str, clean: str) -> None:
    assert clean_text(dirty) == clean


def test_clean_text_is_returned_as_it_is() -> None:
    text = "nothing to do here " * 100
    assert clean_text(text) is text


@given(st.text(alphabet=st.characters(codec=None)))
def test_any_text_becomes_encodable_and_storable(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises
    assert "\x00" not in cleaned and is_clean(cleaned) and len(cleaned) == len(text)


def test_json_values_are_cleaned_everywhere_keys_included() -> None:
    value = {"k\x00": ["\ud800", {"deep": "ok"}, 3, None, True], "n": 1.5}
    cleaned = clean_json(value)
    assert cleaned == {f"k{REPLACEMENT}": [REPLACEMENT, {"deep": "ok"}, 3, None, True], "n": 1.5}
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")
