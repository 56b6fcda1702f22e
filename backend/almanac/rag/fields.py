"""Field-weighted lexical search over the local index: a passage is scored not only by its whole text
(the body) but also by its *lead* — the API name it documents and the first paragraph of its docstring —
and by what its *module* is about.

A developer's question says what they want done ("delete a directory and everything inside it", "split a
string with a regular expression"). The words that identify the answer are usually in the answering
API's name and summary line (`shutil.rmtree`: "Recursively delete a directory tree.") or in its module's
summary (`re`: "Support for regular expressions"), while its body's parameters and caveats dilute them
among 60,000 chunks. So each chunk gets three lexical scores, each scaled to its best value for the
query (0–1):

- **body** — BM25 over the chunk's text (the stored index);
- **lead** — BM25 over the symbol's name (a method with its class: `Popen communicate`) and the first
  paragraph of the chunk's text after its heading;
- **module** — BM25 over each module's dotted name and the first paragraph of its page (one document per
  module, shared by all its chunks): context from the enclosing unit, the way a search engine scores a
  page by its site as well as by its own words;
- **reference** — BM25 over the Python documentation's description of the API (`python_reference.py`; one
  document per API, shared by the passages documenting it under any module path): what the API is for,
  in the words developers use, where its docstring is terse;
- **usage** — BM25 over the words most particular to the code that calls the API (`popularity.characteristic`:
  `find_executable` around `shutil.which`).

The combined score is `body + lead × lead_weight + module × module_weight + reference × reference_weight +
usage × usage_weight` (`FieldWeights`). Chunks from sources without `Module` headings (README files, DOCS_PATHS
folders) have no module field; APIs the reference does not document, or no indexed code calls, have none of the
last two.

**Named APIs** (`FieldIndex.named`): the chunks whose API name the question spells out — every part of
its last name is a word of the question (`threading.Thread` for "start a thread…", `logging.exception`
for "log an exception…", `packaging.version.Version` for "compare two version strings"), or the name
is two consecutive words of it run together (`extractall` for "extract all members") — so that the exact
symbol is among the candidates even when the rest of its text shares few of the question's words among
60,000 chunks. The search adds the best of them, by the combined score, to the lexical candidates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from almanac.rag.bm25 import BM25Index, tokenize
from almanac.rag.chunking import EXPORTED_RE, NOTE_RE, Chunk
from almanac.rag.popularity import api_key
from almanac.rag.ranking import name_stems, run_together, symbol_of

_MODULE = re.compile(r"^#*\s*Module `([\w.]+)`")
_SENTENCE = re.compile(r"(.{12,}?[.!?])(?:\s|$)")  # a sentence ends at . ! ? before a space (not "e.g" early on)
GIST_CHARS = 300  # the longest first sentence a gist keeps


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """Weights of the fields against the body (each field scaled to 0–1 per query). Chosen on the `dev` half of
    `bench/doc_questions.jsonl`: lead and module 0.7 / 0.3 of the grid 0–2 × 0–1, reference 0.7 of 0.2–1.5,
    usage 0.3 of 0.15–0.8."""

    lead: float = 0.7
    module: float = 0.3
    usage: float = 0.3
    reference: float = 0.7


def module_of(chunk: Chunk) -> str:
    """The module a chunk documents, from its title's first heading (`Module `re` > …` → `re`); empty
    for chunks that are not API documentation."""
    match = _MODULE.match(chunk.title.split(" > ", 1)[0])
    return match.group(1) if match else ""


def name_text(chunk: Chunk) -> str:
    """The words of the API name a chunk documents: the last part of the symbol in its title's last
    heading, with its class for a method (`re.Pattern.search` → "Pattern search"); empty for a module
    page or a chunk without a symbol."""
    symbol = _api_symbol(chunk)
    if not symbol:
        return ""
    parts = symbol.split(".")
    kept = parts[-2:] if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1:]
    return " ".join(kept)


def _api_symbol(chunk: Chunk) -> str:
    """The dotted API name a chunk documents; empty for a module's own page or a chunk without one."""
    if " > " not in chunk.title and _MODULE.match(chunk.title):
        return ""
    return symbol_of(chunk)


def api_name(chunk: Chunk) -> str:
    """The last part of the API name a chunk documents (`Thread` for `threading.Thread`, `start` for its
    method); empty for a module page or a chunk without a symbol."""
    return _api_symbol(chunk).rsplit(".", 1)[-1]


def lead(chunk: Chunk, *, summary: bool = False) -> str:
    """The first prose paragraph of a chunk's text after its heading: a docstring's summary line(s), which
    say what the API or module does in the words a question uses. A heading may run over several lines (a
    signature whose annotations hold text, as FastAPI's `Doc(...)`); paragraphs that are no prose are passed
    over — admonitions (`!!! abstract "Usage Documentation"`), field lists (`:param x:`), tables, doctests,
    badges and links. As a `summary` of what the API does, the collectors' notes on where it comes from
    (`Defined in `httpx._api`.`, `NOTE_RE`) and a class's list of attributes are passed over too: 5,000
    re-exported APIs were summarised "Defined in …" (`openai.OpenAI`, whose constructor says "Construct a new
    synchronous OpenAI client instance."). The lead field keeps them — a re-export's note names its package — but for
    the name a package re-exports an API by higher up (`EXPORTED_AS`), which repeats the heading's words."""
    body = _after_heading(chunk.text.lstrip())
    for paragraph in re.split(r"\n\s*\n", body):
        text = paragraph.strip().strip("`").strip()
        if not text or text.startswith(_NOT_PROSE):
            continue
        if summary and (NOTE_RE.fullmatch(paragraph.strip()) or text.startswith(_ATTRIBUTES)):
            continue
        if EXPORTED_RE.fullmatch(paragraph.strip()):  # the name it is imported by: its own heading's words again
            continue
        return text[:400]
    return ""


def leads_of(chunks: Sequence[Chunk], *, summary: bool = False) -> list[str]:
    """Each chunk's `lead` (as a `summary`, or not). A heading too long to share its passage with the docstring
    under it (a signature of twenty keyword arguments, as SDK methods have, split off by the chunker) takes its
    lead from the passage that continues its section, where the heading closes and the docstring begins."""
    firsts = [lead(chunk, summary=summary) for chunk in chunks]
    for row, chunk in enumerate(chunks[:-1]):
        after = chunks[row + 1]
        if not firsts[row] and chunk.text.lstrip().startswith("#") and after.title == chunk.title:
            firsts[row] = lead(replace(chunk, text=f"{chunk.text}\n{after.text}"), summary=summary)
    return firsts


_NOT_PROSE = ("#", "!!!", ":", "|", ">>>", "[", "..", "```", "<")
_ATTRIBUTES = "- `"  # `signatures.parameters_markdown`: a class's documented attributes, one line each


def _after_heading(text: str) -> str:
    """The text after its leading Markdown heading (empty when it does not start with one). The heading ends
    on the line that closes its backtick quote: a line-broken signature's heading spans several lines."""
    if not text.startswith("#"):
        return ""
    lines = text.split("\n")
    ticks = 0
    for number, line in enumerate(lines):
        ticks += line.count("`")
        if ticks % 2 == 0:
            return "\n".join(lines[number + 1 :])
    return ""


class FieldIndex:
    """The lead and module fields of a list of chunks (rows aligned with the chunks)."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        usage: Mapping[str, str] | None = None,
        reference: Mapping[str, str] | None = None,
    ) -> None:
        self.chunks = chunks  # the list these fields were built from
        modules: dict[str, int] = {}
        summaries: dict[str, str] = {}
        owner = np.full(len(chunks), -1, dtype=np.int64)
        firsts = leads_of(chunks)
        leads = [f"{name_text(chunk)} {first}".strip() for chunk, first in zip(chunks, firsts, strict=True)]
        for row, chunk in enumerate(chunks):
            module = module_of(chunk)
            if not module:
                continue
            owner[row] = modules.setdefault(module, len(modules))
            if module not in summaries and " > " not in chunk.title:
                summaries[module] = firsts[row]
        self._owner = owner
        self._leads = BM25Index.build(leads) if any(leads) else None  # plain documents have no lead
        self._index_names(chunks)
        self._modules = BM25Index.build(
            [f"{module.replace('.', ' ')} {summaries.get(module, '')}" for module in modules]
        )
        self._user, self._usage = _per_api(chunks, usage or {})
        self._referred, self._reference = _per_api(chunks, reference or {})
        self._summaries = _summaries(chunks, leads_of(chunks, summary=True), reference or {})

    def gist(self, chunk: Chunk) -> str:
        """What a passage is about, in one line for the dense reorder to embed: the API's dotted name and the
        first sentence of what it does — the Python documentation's description and its docstring's summary,
        taken from the API's first passage, so a split-off part of a long docstring has its API's gist
        (`pydantic.main.BaseModel.model_dump: Generate a dictionary representation of the model, …`); a passage
        without an API, its heading and first sentence. A question's words meet an API's purpose here, where the
        passage itself is mostly signatures and parameters."""
        symbol = _api_symbol(chunk)
        if symbol:
            return f"{symbol}: {self._summaries.get(api_key(symbol), '')}".strip()
        heading = chunk.title.rsplit(" > ", 1)[-1]
        return f"{heading}: {first_sentence(lead(chunk, summary=True))}".strip()

    def _index_names(self, chunks: Sequence[Chunk]) -> None:
        by_stem: dict[str, list[int]] = {}
        by_name: dict[str, list[int]] = {}
        self._name_parts = np.zeros(len(chunks), dtype=np.int64)
        for row, chunk in enumerate(chunks):
            name = api_name(chunk)
            if not name or name.startswith("_"):
                continue
            stems = frozenset(name_stems(name))
            self._name_parts[row] = len(stems)
            for stem in stems:
                by_stem.setdefault(stem, []).append(row)
            by_name.setdefault(name.lower(), []).append(row)
        self._by_stem = {stem: np.array(rows, dtype=np.int64) for stem, rows in by_stem.items()}
        self._by_name = {name: np.array(rows, dtype=np.int64) for name, rows in by_name.items()}

    def named(self, query: str) -> npt.NDArray[np.int64]:
        """The rows whose API name the question spells out (see the module docstring), ascending."""
        found = [self._by_stem[term] for term in set(tokenize(query)) if term in self._by_stem]
        rows = np.zeros(0, dtype=np.int64)
        if found:
            counts = np.bincount(np.concatenate(found), minlength=len(self._name_parts))
            rows = np.flatnonzero((counts > 0) & (counts == self._name_parts))
        whole = [self._by_name[word] for word in run_together(query) if word in self._by_name]
        return np.unique(np.concatenate([rows, *whole])) if whole else rows

    def scores(self, query: str, body: npt.NDArray[np.floating], weights: FieldWeights) -> npt.NDArray[np.float32]:
        """The combined score of every chunk for `query`, given the body's BM25 scores (see the module
        docstring); 0 for a chunk that matches in no field."""
        combined = _scaled(body)
        if weights.lead and self._leads is not None:
            combined = combined + weights.lead * _scaled(self._leads.scores(query))
        shared = (  # fields with one document per module or per API, shared by its chunks
            (weights.module, self._modules, self._owner),
            (weights.usage, self._usage, self._user),
            (weights.reference, self._reference, self._referred),
        )
        for weight, index, rows in shared:
            if weight and index is not None and len(index):
                per_document = np.append(_scaled(index.scores(query)), np.float32(0.0))
                combined = combined + weight * per_document[rows]  # row -1 (no document) → the 0 appended
        return combined.astype(np.float32)


def _summaries(chunks: Sequence[Chunk], leads: Sequence[str], reference: Mapping[str, str]) -> dict[str, str]:
    """Per API (by `api_key`), the first sentence of its reference description and that of the lead of its first
    passage that has one (`leads`: each chunk's `lead`), either alone when the other is missing or the same: the
    two often say it differently (`asyncio.gather`: "Run awaitable objects in the aws sequence concurrently." and
    "Return a future aggregating results from the given coroutines/futures.")."""
    summaries: dict[str, str] = {}
    for chunk, first in zip(chunks, leads, strict=True):
        symbol = _api_symbol(chunk)
        key = api_key(symbol) if symbol else ""
        if not key or key in summaries:
            continue
        sentences = dict.fromkeys(first_sentence(text) for text in (reference.get(key, ""), first) if text)
        if sentences:
            summaries[key] = " ".join(sentences)
    return summaries


def first_sentence(text: str) -> str:
    """The first sentence of a paragraph (at most `GIST_CHARS`, cut at a word), its lines joined."""
    flat = " ".join(text.split())
    match = _SENTENCE.match(flat)
    sentence = match.group(1) if match else flat
    return sentence if len(sentence) <= GIST_CHARS else sentence[:GIST_CHARS].rsplit(" ", 1)[0]


def _per_api(chunks: Sequence[Chunk], texts: Mapping[str, str]) -> tuple[npt.NDArray[np.int64], BM25Index | None]:
    """Each chunk's row in a BM25 index over `texts` (one document per API `key`; -1: none), and the index."""
    keys: dict[str, int] = {}
    rows = np.full(len(chunks), -1, dtype=np.int64)
    for row, chunk in enumerate(chunks):
        symbol = _api_symbol(chunk)
        k = api_key(symbol) if symbol else ""
        if k in texts:
            rows[row] = keys.setdefault(k, len(keys))
    return rows, (BM25Index.build([texts[k] for k in keys]) if keys else None)


def _scaled(scores: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    best = float(scores.max()) if len(scores) else 0.0
    return (scores / best).astype(np.float32) if best > 0 else np.zeros(len(scores), dtype=np.float32)
