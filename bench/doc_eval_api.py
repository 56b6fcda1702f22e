"""Documentation retrieval as a user meets it: `doc_eval.py`'s questions asked through a running service's chat API.

`doc_eval.py` calls the documentation pipeline itself. A user asks `POST /api/chat`, where the chat model first
decides whether a message is a documentation question at all and calls `retrieve_documentation` with it; the
service documents what its own install holds (`make serve` installs fewer packages than `make test`). This asks
each question in a new conversation and reads the passages the tool returned from the answer's citations (their
order is the tool's), counting a hit as `doc_eval.py` does. A question the model answered without calling the tool
is a miss, listed with `--misses`.

    make serve                                   # in another terminal; wait for "local documentation index ready"
    .venv/bin/almanac credits grant --email local@localhost --amount 100000 --reason bench
    RATE_LIMIT_FREE_PER_MIN=10000 make serve     # or wait out the rate limit (it honours Retry-After)
    .venv/bin/python bench/doc_eval_api.py [--url http://127.0.0.1:8000] [--key-file data/local-api-key]
                                           [--questions bench/doc_questions.jsonl ...] [--split heldout] [--misses]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_eval import QUESTIONS, Question, first_hit, load_questions, report

_CODE = re.compile(r"`(?:class |async )*([A-Za-z_][\w.]*)")


def cited_symbol(title: str) -> str:
    """The API a citation names: its title is the public dotted name, or a heading path whose last part names it
    as code ("Module `x` > class `x.Y`")."""
    last = title.rsplit(" > ", 1)[-1]
    found = _CODE.search(last)
    if found:
        return re.sub(r"\.__init__$", "", found.group(1))
    return last if re.fullmatch(r"[A-Za-z_][\w.]*", last) else ""


def ask(client: httpx.Client, question: str) -> dict[str, object]:
    """The chat API's answer to `question` in a new conversation, waiting out rate limits."""
    while True:
        response = client.post("/api/chat", json={"message": question})
        if response.status_code == 429:
            time.sleep(float(response.headers.get("retry-after", "5")))
            continue
        body: dict[str, object] = response.json()
        if response.status_code != 200:
            raise SystemExit(f"{response.status_code} for {question!r}: {body}")
        return body


def documentation_symbols(answer: dict[str, object]) -> list[str] | None:
    """The APIs of the passages `retrieve_documentation` returned, in order; None when it was not called."""
    results = [r for r in answer.get("tool_results") or [] if isinstance(r, dict)]  # type: ignore[attr-defined]
    calls = [r for r in results if r.get("name") == "retrieve_documentation"]
    if not calls:
        return None
    return [cited_symbol(str(c.get("title", ""))) for r in calls for c in r.get("citations") or []]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--key-file", type=Path, default=Path("data/local-api-key"), help="the API key to ask with")
    parser.add_argument("--questions", type=Path, nargs="+", default=[QUESTIONS], help="question sets (JSON lines)")
    parser.add_argument("--split", default="all", choices=["dev", "heldout", "all"])
    parser.add_argument("--misses", action="store_true", help="print every question not answered first")
    args = parser.parse_args(argv)
    questions: list[Question] = [
        q for path in args.questions for q in load_questions(path) if args.split == "all" or q.split == args.split
    ]
    key = args.key_file.read_text().strip()
    ranks: list[int | None] = []
    untooled = 0
    started = time.perf_counter()
    with httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {key}"}, timeout=180) as client:
        for q in questions:
            symbols = documentation_symbols(ask(client, q.question))
            untooled += symbols is None
            rank = first_hit((symbols or [])[:6], q.expected)
            ranks.append(rank)
            if args.misses and rank != 1:
                called = "no documentation call" if symbols is None else ", ".join(symbols[:6])
                print(f"  [{q.split}] rank {rank}: {q.question!r} expected {list(q.expected)}\n      {called}")
    elapsed = time.perf_counter() - started
    print(f"{len(questions)} questions in {elapsed:.0f} s; {untooled} answered without a documentation call")
    report("through the chat API", questions, ranks, per_library=False)


if __name__ == "__main__":
    main()
