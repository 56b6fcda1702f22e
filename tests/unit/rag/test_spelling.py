"""A question's misspelt words are read as the documentation's words; everything else stays as written."""

import pytest

from almanac.rag.spelling import MIN_USES, RATIO, Spelled, Speller, word_frequencies

# how many passages use each word: the documentation's everyday words, and a few rare ones
USES = {
    "convert": 400,
    "datetime": 900,
    "parse": 300,
    "value": 2000,
    "router": 60,
    "field": 500,
    "fixed": 200,
    "timeout": 700,
    "timezone": 150,
    "pyhton": 1,  # a misspelling some docstring has…
    "python": 50,  # …and the word, not used far more (RATIO)
    "side": 300,
    "routers": 1,
    "aside": 1,
}
SPELLER = Speller(USES, known={"aside"})


@pytest.mark.parametrize(
    ("question", "read"),
    [
        (
            "how to conver a string to a datetiem",
            "how to convert a string to a datetime",
        ),  # a letter dropped, two swapped
        ("pasre an ISO date", "parse an ISO date"),  # swapped
        ("validate a vlaue against a type", "validate a value against a type"),
        ("set a timeoutt on a request", "set a timeout on a request"),  # doubled
        ("Pyhton: Convrt a timestamp", "Pyhton: convert a timestamp"),  # a word some passage spells so stays
        ("the timzeone of a date", "the timezone of a date"),  # two edits in a long word
    ],
)
def test_a_misspelt_word_is_read_as_the_most_used_close_word(question: str, read: str) -> None:
    assert SPELLER.correct(question).text == read


def test_each_change_is_told_as_written_and_as_read() -> None:
    assert SPELLER.correct("conver the vlaue").changes == (("conver", "convert"), ("vlaue", "value"))


@pytest.mark.parametrize(
    "question",
    [
        "convert a value",  # words the documentation uses
        "list the routers",  # another form of a used word: BM25 stems it anyway
        "set it aside",  # an English word, however rare in the documentation (and close to `side`)
        "call `convrt` or json.convrt or convrt_all or convrtValue",  # names written as code
        "the key 'vlaue' in the dict",  # a quoted value
        "a fiexd",  # `field` or `fixed`, both used far more: a guess either way
        "conv",  # too short to tell
        "frobnicate a widget",  # nothing close
    ],
)
def test_what_is_no_misspelling_stays_as_written(question: str) -> None:
    assert SPELLER.correct(question) == Spelled(question)


def test_a_correction_must_be_far_more_used_than_the_word_it_replaces() -> None:
    barely = {"convert": MIN_USES - 1, "value": RATIO - 1}
    speller = Speller(barely)
    assert speller.correct("conver a vlaue").changes == ()


def test_word_frequencies_count_passages_not_occurrences() -> None:
    counts = word_frequencies(["Convert convert CONVERT", "convert a value", "x"])
    assert counts["convert"] == 2 and counts["value"] == 1 and "x" not in counts
