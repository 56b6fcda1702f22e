"""A question's misspelt words, read as the documentation's: "conver a string to datetiem" → "convert … datetime".

BM25 matches words exactly (after stemming), so one typo loses the word: on the 180 questions of
`bench/doc_questions.jsonl`, one letter swapped, dropped or doubled in one word took the answer out of the six for
one question in nine. `Speller` knows how many passages of the index use each word (`word_frequencies`) and reads a
word of the question that almost no passage uses (at most `RARE` of them) as the most used word at the smallest
edit distance (Damerau–Levenshtein, `rapidfuzz`: one edit for a word under eight letters, two from eight) — if that
word is far more used (at least `MIN_USES` passages and `RATIO` times as many) and no other word as close is nearly
as used ("fiexd": `field` or `fixed`, `AMBIGUOUS`). A word the documentation uses is
never changed, nor an English word (`known`: the local embedding model's vocabulary, "aside", "accent"), nor a name
written as code (`model_dump`, `json.loads`, `getLogger`, a word in backticks or quotes),
a word under four letters, or another form of the same word ("routers": BM25 stems it to `router` anyway).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from almanac.rag.bm25 import tokenize

RARE = 2  # a word in at most this many passages may be a misspelling
MIN_USES = 20  # a correction is a word at least this many passages use…
RATIO = 30  # …and at least this many times as many as the word it replaces (plus one)
LONG = 8  # from this length on, two edits
AMBIGUOUS = 4  # another word as close and used at least a quarter as much: no correction
_WORD = re.compile(r"[a-z]{3,}")
# a plain word of prose: letters only, not part of a dotted, underscored or quoted name, nor a call
_PROSE = re.compile(r"(?<![\w.`'\"/-])[A-Za-z]{4,}(?![\w`'\"(/-]|\.\w)")


@dataclass(frozen=True)
class Spelled:
    """A question as read: its text with misspellings corrected, and each (as written, as read)."""

    text: str
    changes: tuple[tuple[str, str], ...] = ()


def word_frequencies(texts: Iterable[str]) -> Counter[str]:
    """In how many of `texts` each lower-case word (three letters or more) occurs."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(_WORD.findall(text.lower())))
    return counts


class Speller:
    """Corrects a question's misspelt words against the words of the documentation (see the module docstring)."""

    def __init__(self, frequencies: Mapping[str, int], known: Collection[str] = frozenset()) -> None:
        self._uses = frequencies
        self._known = known
        self._common = [word for word, uses in frequencies.items() if uses >= MIN_USES]

    def correct(self, text: str) -> Spelled:
        """`text` with each misspelt word replaced, keeping everything else as written."""
        changes: dict[str, str] = {}
        for word in dict.fromkeys(_PROSE.findall(text)):
            fixed = self.word(word.lower())
            if fixed is not None:
                changes[word] = fixed
        if not changes:
            return Spelled(text)
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, changes)) + r")\b")
        return Spelled(pattern.sub(lambda m: changes[m.group()], text), tuple(changes.items()))

    def word(self, word: str) -> str | None:
        """The word `word` is a misspelling of, or None when it is no misspelling (or nothing is close)."""
        uses = self._uses.get(word, 0)
        if uses > RARE or word in self._known:
            return None
        edits = 1 if len(word) < LONG else 2
        close = process.extract(word, self._common, scorer=DamerauLevenshtein.distance, score_cutoff=edits, limit=None)
        candidates = [(distance, -self._uses[found], found) for found, distance, _ in close]
        wanted = RATIO * (uses + 1)
        found = sorted(c for c in candidates if -c[1] >= wanted)
        if not found or tokenize(found[0][2]) == tokenize(word):  # another form of the same word: BM25 has it
            return None
        (distance, best, fixed), *others = found
        if any(other == distance and other_uses * AMBIGUOUS <= best for other, other_uses, _ in others):
            return None  # "fiexd": `field` or `fixed`, a guess either way
        return fixed
