"""Questions for `doc_eval.py` taken mechanically from CoNaLa's test pairs: nobody chose or tuned them.

CoNaLa (Yin et al., 2018; CC BY-SA 4.0, from Stack Overflow) pairs a developer's question — the Stack Overflow
title as asked (`intent`), and a rewritten, more explicit one (`rewritten_intent`) — with the snippet that answers
it. This script reads its test split (`conala-test.json`, 500 pairs; the public copy used here is
`y-akinobu/corpus_Python-JPN`'s `Corpus-conala/conala-json/`) and keeps each pair whose snippet calls an API of a
module by its dotted name (`os.kill(...)`, `datetime.datetime.strptime(...)`, `np.` for numpy): the first such
call is the expected API, the question is the title as the developer asked it. Pairs whose expected API the local
index does not document (given `--data`, an index `doc_eval.py` built) are left out: they measure the index, not
the ranking, and so are pairs already in another question set here. The test split's questions are `heldout`: for
measuring, never for tuning; the train split's (`--split dev`, `doc_questions_conala_dev.jsonl`) are for finding
what kinds of question fail.

    python bench/conala_questions.py /path/to/conala-test.json [--data DIR] > bench/doc_questions_conala.jsonl
    python bench/conala_questions.py /path/to/conala-train.json --split dev [--data DIR] \\
        > bench/doc_questions_conala_dev.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)\s*\(")
ALIASES = {"np": "numpy"}  # the import alias every snippet uses


def expected_api(snippet: str, modules: frozenset[str]) -> str | None:
    """The first call in `snippet` of a module's API by its dotted name (aliases resolved), or None."""
    for match in _CALL.finditer(snippet):
        root = ALIASES.get(match.group(1), match.group(1))
        if root in modules:
            return root + match.group(2)
    return None


def questions(
    pairs: Iterable[dict[str, str]],
    modules: frozenset[str],
    known: frozenset[str] = frozenset(),
    split: str = "heldout",
) -> Iterator[dict[str, object]]:
    """One question per pair with an expected API, each title once; a pair whose title or rewritten question is
    `known` (lower-case: in another question set already) is left out."""
    seen: set[str] = set(known)
    for pair in pairs:
        api = expected_api(pair.get("snippet") or "", modules)
        title = " ".join((pair.get("intent") or "").split())
        rewritten = " ".join((pair.get("rewritten_intent") or "").split())
        if api is None or not title or title.lower() in seen or rewritten.lower() in known:
            continue
        seen.add(title.lower())
        yield {
            "question": title,
            "expected": [api],
            "library": api.split(".")[0],
            "source": f"conala-{'test' if split == 'heldout' else 'train'}",
            "split": split,
        }


async def documented(found: list[dict[str, object]], data: Path) -> list[dict[str, object]]:
    """The questions whose expected API has a passage in the local index stored in `data`."""
    import doc_eval
    from almanac.rag.ranking import symbol_of

    index, _ = await doc_eval.local_index(data, False, reuse=True)
    symbols = sorted({symbol_of(chunk) for chunk in index.chunks} - {""})
    by_last: dict[str, list[str]] = {}
    for symbol in symbols:
        by_last.setdefault(symbol.rsplit(".", 1)[-1], []).append(symbol)
    kept = []
    for question in found:
        [api] = question["expected"]  # type: ignore[misc]
        if doc_eval.first_hit(by_last.get(str(api).rsplit(".", 1)[-1], []), [str(api)]) is not None:
            kept.append(question)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", type=Path, help="CoNaLa's conala-test.json (or conala-train.json, with --split dev)")
    parser.add_argument("--split", default="heldout", choices=["heldout", "dev"], help="the questions' split")
    parser.add_argument("--data", type=Path, default=None, help="keep only APIs the index stored here documents")
    args = parser.parse_args()
    modules = frozenset(sys.stdlib_module_names) | {"numpy"}
    others = [path for path in Path(__file__).parent.glob("doc_questions*.jsonl") if "conala" not in path.name]
    if args.split == "dev":  # nor a test question
        others += [path for path in Path(__file__).parent.glob("doc_questions_conala.jsonl")]
    known = frozenset(json.loads(line)["question"].lower() for path in others for line in path.open() if line.strip())
    found = list(questions(json.loads(args.pairs.read_text()), modules, known, args.split))
    if args.data is not None:
        found = asyncio.run(documented(found, args.data))
    for question in found:
        print(json.dumps(question, ensure_ascii=False))
    print(f"{len(found)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
