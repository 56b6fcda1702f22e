"""`retrieve_documentation`'s pipeline, wiring the steps; each step is its own module.

1. parse the request into a library name and a topic (`query.py`; with a chat model, also the APIs it
   expects to answer it, searched by name and ranked first when found); a library the request asks to do without
   ("without argparse") is neither, and its passages are left out unless nothing else is found;
2. find candidate libraries in the doc source and pick one (`select.py`); an explicit
   `/owner/repo[@version]` ID is used as given, so a version pin is honoured;
3. fetch and chunk the documentation for the topic (`sources/`, `chunking.py`);
4. hybrid search: BM25 and vectors concurrently, fused (`hybrid.py`, `fusion.py`); locally, a library
   named in the question (rather than given as `library`) is a hint, not a filter: every library is
   searched and the named one's passages count more (less when its name is an ordinary word), and a
   name the question writes in two words ("json schema") is searched by the library's one-word name too;
5. order the candidates (`ranking.py`: the exact symbol first, the APIs installed code uses most
   (`popularity.py`, local index only) and, in the library asked about, those its own documentation calls
   most (`mentions.py`), public before private, no near-copies),
   top 40; rerank to the best few, then apply any relevance threshold (`rerank.py`); the words are the
   question's and the documentation's words for them (`synonyms.py`: "parse" → deserialize, loads); an
   exception the question reports as what went wrong comes after the first passage that may fix it;
6. the result, formatted by `format.py`.

When the primary source is unreachable the local source answers, and the result says so. With
DOC_SOURCE=auto the primary is whichever source `AutoSource` routes to now; a question that finds
Context7 unreachable also tells it (later questions go straight to the local index). Before the local
index is searched, a question waits for a first build still under way (bounded, with progress reports).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from almanac.rag.chunking import Chunk
from almanac.rag.hybrid import index_text
from almanac.rag.local_search import STANDARD_LIBRARY
from almanac.rag.priority import library_name
from almanac.rag.query import (
    LIBRARY_ID,
    ParsedQuery,
    QueryParser,
    clean_library,
    guess_library,
    request_of,
    topic_of,
    without_excluded,
)
from almanac.rag.ranking import (
    RankingConfig,
    arrange,
    diversify,
    fix_first,
    is_namesake,
    names_an_api_as_code,
    symbol_of,
    within,
)
from almanac.rag.rerank import DenseReorder, Reranker, leads_clearly
from almanac.rag.select import LibrarySelector, means_standard_library, named_parts, normalise_name
from almanac.rag.sources.auto import AutoSource
from almanac.rag.sources.base import DocSource, DocSourceError, LibraryInfo, LibraryNotFound, SourceUnavailable
from almanac.rag.sources.local import EVERYTHING, LocalCorpus, LocalSource
from almanac.rag.synonyms import expansion

MAX_QUERY_CHARS = 2000
# at least this many passages are ranked (a deeper pool, 400 for 40 candidates, let more noise in: measured)
RANKED_POOL = 300
DISTINCTIVE_SHARE = 0.5  # a name is distinctive when at least this share of the chunks using it are its library's
ORDINARY_HINT = 0.5  # the library bonus kept for an ordinary word


@dataclass(frozen=True)
class DocRequest:
    query: str
    library: str | None = None
    topic: str | None = None
    progress: Callable[[str], None] | None = field(default=None, compare=False)  # tells the user what is slow


@dataclass(frozen=True)
class Passage:
    chunk: Chunk
    score: float


@dataclass(frozen=True)
class DocResult:
    library: LibraryInfo
    source: str
    topic: str
    passages: list[Passage]
    notes: list[str] = field(default_factory=list)


class DocumentationPipeline:
    def __init__(
        self,
        *,
        source: DocSource,
        fallback: LocalSource | None,
        parser: QueryParser,
        selector: LibrarySelector,
        reranker: Reranker,
        local_reorder: DenseReorder | None = None,
        top_k: int = 6,
        candidates: int = 40,
        min_score: float | None = None,
        ranking: RankingConfig | None = None,
        synonyms: bool = True,
    ) -> None:
        self.source = source
        self.fallback = fallback
        self.parser = parser
        self.selector = selector
        self.reranker = reranker
        self.local_reorder = local_reorder
        self.top_k = top_k
        self.candidates = candidates
        self.min_score = min_score
        self.ranking = ranking or RankingConfig()
        self.synonyms = synonyms

    async def run(self, request: DocRequest) -> DocResult:
        """The best passages for a request; raises `DocSourceError` with a message for the model."""
        # a call with the query left blank and only a topic set asks for the topic
        query = " ".join(request.query.split()) or " ".join((request.topic or "").split())
        if not query:
            raise DocSourceError(
                "The documentation query is empty. Say what to look up, e.g. 'FastAPI dependency injection'."
            )
        notes: list[str] = []
        if len(query) > MAX_QUERY_CHARS:
            notes.append(f"The query was {len(query):,} characters; only the first {MAX_QUERY_CHARS:,} were used.")
            query = query[:MAX_QUERY_CHARS]
        query = request_of(query)  # "What's the best way to…", "any ideas?": how it is asked is no word of what
        primary = self.source.active() if isinstance(self.source, AutoSource) else self.source
        if isinstance(primary, LocalSource):  # "conver a string to datetiem": the documentation's words
            spelled = await primary.spelled(query, request.progress)
            if spelled.changes:
                query = spelled.text
                notes.append("Read " + ", ".join(f"“{typed}” as “{read}”" for typed, read in spelled.changes) + ".")
        library_name = clean_library(request.library or "") or None  # "pydantic's", "fastapi==0.110"
        parsed = await self.parser.parse(query)
        # "without argparse": the library to do without is no word of what to look up, nor are its passages answers
        query = without_excluded(query, parsed.excluded)
        if library_name:  # the library asked for wins; the APIs a chat model expects still count
            parsed = ParsedQuery(library_name, topic_of(query, library_name), parsed.apis, excluded=parsed.excluded)
        given = (request.topic or "").strip()  # the caller's topic: it narrows the search, the question's words stay
        explicit = library_name is not None

        async def answer(source: DocSource) -> DocResult:
            return await self._answer(
                source,
                query,
                parsed.library,
                parsed.topic,
                notes,
                request.progress,
                explicit,
                parsed.apis,
                parsed.others,
                given=given,
                excluded=parsed.excluded,
            )

        try:
            return await answer(primary)
        except SourceUnavailable as exc:
            if isinstance(self.source, AutoSource) and primary is not self.source.local:
                self.source.failed(exc)
            if self.fallback is None or primary is self.fallback:
                raise
            notes.append(
                f"{primary.name} was unavailable ({exc}) — these passages come from the local documentation instead."
            )
            return await answer(self.fallback)

    async def _answer(
        self,
        source: DocSource,
        query: str,
        name: str | None,
        topic: str,
        notes: list[str],
        progress: Callable[[str], None] | None,
        explicit: bool = False,
        apis: tuple[str, ...] = (),
        others: tuple[str, ...] = (),
        *,
        given: str = "",
        excluded: tuple[str, ...] = (),
    ) -> DocResult:
        if isinstance(source, LocalSource):
            await source.ready(progress)
            if name and others and not explicit:
                # several libraries named: the most distinctive name is the one asked about
                chosen = await source.most_distinctive((name, *others), query)
                topic = topic_of(query, chosen) if topic == topic_of(query, name) else topic
                name = chosen
        library = await self._library(source, query, name, notes, explicit)
        corpus = await source.corpus(library, given or topic)  # a remote source fetches the caller's topic
        searched, hint, weight = corpus, None, 1.0
        if isinstance(source, LocalSource) and isinstance(corpus, LocalCorpus) and not explicit and name:
            # A library named in the question is a hint, not a filter: every library is searched and the
            # named one's passages count more — less when its name is an ordinary word ("string"); a name
            # that only loosely matches a library (unsure) is no hint at all.
            hint = hinted_library(corpus, name)
            if hint is not None and corpus.index.share(name, hint) < DISTINCTIVE_SHARE:
                weight = ORDINARY_HINT
            if corpus.library.id != EVERYTHING:
                searched = await source.corpus(source.everything(), given or topic)
            # every library is searched: the name's word is part of the topic again ("retry with exponential
            # backoff" named no library `exponential`; "use defaultdict for…" is about `defaultdict`)
            topic = topic_of(query, None)
        elif explicit and name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", query, re.I):
            # the library given as `library` and named by the question too: its name stays a word of what is asked
            # ("create an openai client" is `openai.OpenAI`, "…the tzinfo of a datetime object" `datetime.datetime`'s)
            topic = topic_of(query, None)
        # a deeper pool is ranked: libraries compete, and within one library a long API's many pieces (the 25 of
        # anthropic's `Messages.create`) would fill the first 40 and leave no other API to choose
        pool = max(RANKED_POOL, self.candidates)
        # the question's words, with any the caller's topic adds (a short topic alone, "headers", lost "default …
        # AsyncClient"; its words again would weigh them twice), and the APIs the model expects, by name
        asked = set(re.findall(r"\w+", query.lower()))
        added = [word for word in re.findall(r"\w+", given) if word.lower() not in asked]
        # a library named in two words ("json schema" for `jsonschema`) is searched by its one-word name too,
        # which its passages' module paths have (its parts alone match any library's JSON-schema passages)
        joined = library_name(hint) if hint is not None else ""
        if joined and "-" not in joined and joined not in asked:
            added.append(joined)
        # the documentation's words for what the question says in its own ("parse" → deserialize, loads;
        # "extension" → suffix): searched too, and names made of them count as named by the question
        extra = expansion(" ".join([topic or query, *added])) if self.synonyms else []
        words = " ".join([topic or query, *added, *apis, *extra])
        hits = await searched.search(words, pool, question=query)  # the words, and the sentence to embed
        if excluded:  # "without argparse": its passages are not what is asked for, unless nothing else is found
            kept = [hit for hit in hits if not of_libraries(searched.chunks[hit.index], excluded)]
            hits = kept or hits
        chunks = [searched.chunks[hit.index] for hit in hits]
        config = self.ranking if weight == 1.0 else _scaled(self.ranking, weight)
        usage = searched.index.popularity.score if isinstance(searched, LocalCorpus) else None
        foreign = partial(searched.index.popularity.score, foreign=True) if isinstance(searched, LocalCorpus) else None
        rarity = searched.index.rarity if isinstance(searched, LocalCorpus) else None
        mentions = searched.index.mentions().score if isinstance(searched, LocalCorpus) else None
        fields = searched.index.fields() if isinstance(searched, LocalCorpus) else None
        alone = searched.library.id not in (EVERYTHING, STANDARD_LIBRARY)
        focus = hint if hint is not None else searched.library.id if alone else None  # the library asked about
        order = arrange(
            query,
            chunks,
            [hit.score for hit in hits],
            hint=hint,
            config=config,
            limit=self.candidates,
            usage=usage,
            expected=apis,
            rarity=rarity,
            focus=focus,
            mentions=mentions,
            distinctive=weight == 1.0,
            synonyms=extra,
            gist=fields.gist if fields is not None else None,
            foreign=foreign,
        )
        chunks = [chunks[c.index] for c in order]
        ordered = [c.score for c in order]
        texts = [index_text(chunk) for chunk in chunks]  # as indexed: the index's vectors are those of these texts
        if self.local_reorder is not None and isinstance(source, LocalSource) and texts:
            # LOCAL_DENSE=both/reorder: the question's embedding reorders the local candidates before any reranker
            # (then no near-copies again: the reordered scores know nothing of the diversity step's choices)
            # each candidate's gist too: what its API is for, in a line (`FieldIndex.gist`)
            gists = [fields.gist(chunk) for chunk in chunks] if fields is not None else []
            # the one library the caller asked for, or an API the question names exactly ("…an httpx AsyncClient"):
            # the fused order's evidence is precise, the similarity weighs less (six AsyncClient methods' "Send a
            # `HEAD` request." was nearer "set default headers" than the client's constructor)
            # so too when the fused order's first candidate leads clearly (`leads_clearly`) within the library asked
            # about: "gather the results of several coroutines in asyncio" names `gather`, which MiniLM put behind
            # `asyncio.run` ("Execute the coroutine…"); a lead won outside that library is no such evidence ("…with
            # fastapi Query" led by `urllib.parse.parse_qs`), nor is one that a distinctive library name alone won, its
            # namesake (`fastapi.FastAPI` for "test a fastapi app without running a server"; an ordinary word naming
            # its library, "copy a list", is the question's own ask, and `copy.copy` leads as a named API does).
            lead = chunks[max(range(len(ordered)), key=ordered.__getitem__)]
            of_focus = focus is None or (within(lead.library, focus) and not (weight == 1.0 and is_namesake(lead)))
            clear = leads_clearly(ordered) and of_focus
            narrow = (explicit and alone) or names_an_api_as_code(query, chunks, hint) or clear
            dense = await self.local_reorder.scores(query, texts, fused=ordered, gists=gists, narrow=narrow)
            if dense is not None:  # in the fused order's units: near-copies pay what they paid before the reorder
                blended = diversify(chunks, dense, config.diversity, len(chunks))
                picked = [c.index for c in blended]
                chunks, texts = [chunks[i] for i in picked], [texts[i] for i in picked]
                ordered = [c.score for c in blended]
        reranked = await self.reranker.rerank(query, texts, self.top_k, fused=ordered) if texts else []
        if self.min_score is not None:
            reranked = [hit for hit in reranked if hit.score >= self.min_score]
        passages = [Passage(chunks[hit.index], hit.score) for hit in reranked]
        # an error the question reports comes after the first passage that may fix it (`ranking.fix_first`)
        passages = [passages[i] for i in fix_first(query, [passage.chunk for passage in passages])]
        return DocResult(corpus.library, source.name, given or topic, passages, notes)

    async def _library(
        self, source: DocSource, query: str, name: str | None, notes: list[str], explicit: bool = False
    ) -> LibraryInfo:
        local = isinstance(source, LocalSource)
        if name and LIBRARY_ID.fullmatch(name) and not local:
            return LibraryInfo(name, name, source=source.name)
        base, _, version = (name or "").partition("@") if name and not name.startswith("/") else (name or "", "", "")
        if local and base.startswith("/"):
            base = base.split("@")[0]
        if not base and isinstance(source, LocalSource):
            notes.append("No library was named, so all local documentation was searched.")
            return source.everything()
        if isinstance(source, LocalSource) and means_standard_library(base) and (standard := source.standard_library()):
            return standard  # "Python standard library", "stdlib": every module of it, no one package
        base = base or guess_library(query) or ""
        if not base:
            raise LibraryNotFound(
                "Which library is this about? Call retrieve_documentation again with `library` set, e.g. "
                "'fastapi' or a Context7 ID such as '/tiangolo/fastapi'."
            )
        lookup = base.rsplit("/", 1)[-1] if base.startswith("/") else base
        if isinstance(source, LocalSource):
            if not normalise_name(lookup):  # "Python", "python library": a word of any library's documentation
                notes.append(f"'{lookup}' names no one library, so all local documentation was searched.")
                return source.everything()
            # a name the rules read off the question ("with several") is a library only if it names one; only
            # a name given as `library` may match a library's description alone ("postgresql" → asyncpg)
            candidates = await source.libraries(lookup, query, loose=False)
            # "encode/httpx", "httpx, python", "python standard library (asyncio)": the name it holds
            for part in [] if candidates else named_parts(lookup):
                if means_standard_library(part) and (standard := source.standard_library()):
                    return standard
                if candidates := await source.libraries(part, query, loose=False):
                    lookup = part
                    break
            if explicit:
                candidates = await source.libraries(lookup, query, loose=True)
        else:
            candidates = await source.libraries(lookup, query)
        if not candidates:
            if isinstance(source, LocalSource):
                notes.append(f"No library called '{lookup}' is in the local documentation; all of it was searched.")
                return source.everything()
            raise LibraryNotFound(
                f"No library matching '{lookup}' was found in {source.name}. Try the package's exact name, or a "
                "Context7 ID such as '/owner/repo'."
            )
        chosen = await self.selector.choose(query, lookup, candidates)
        if version and not local:
            return LibraryInfo(
                f"{chosen.id.split('@')[0]}@{version}",
                chosen.title,
                chosen.description,
                chosen.trust_score,
                chosen.snippets,
                chosen.versions,
                chosen.source,
            )
        if version and local and version not in chosen.versions:
            notes.append(
                f"Version {version} was asked for; the local documentation is for version "
                f"{', '.join(chosen.versions) or 'unknown'}."
            )
        return chosen


def hinted_library(corpus: LocalCorpus, name: str) -> str | None:
    """The local library a name in the question hints at: the chosen library when the name is its own or
    one of its import names (`yaml` for PyYAML) — not a looser match —, else None (then the chosen library
    is searched alone, as before)."""
    library = corpus.library
    if library.id == EVERYTHING or LIBRARY_ID.fullmatch(name):
        return None
    wanted = normalise_name(name.split("@")[0])
    imports = corpus.index.import_names().get(library.id, frozenset())
    own = {normalise_name(library.title), normalise_name(library.id.rstrip("/").rsplit("/", 1)[-1])}
    return library.id if wanted and wanted in own | {normalise_name(m) for m in imports} else None


def of_libraries(chunk: Chunk, names: Sequence[str]) -> bool:
    """Whether a passage belongs to one of the libraries `names` (a name as the question writes it): by its
    library's name or the package its API is in (`argparse` for `argparse.ArgumentParser`)."""
    wanted = {normalise_name(name) for name in names}
    package = symbol_of(chunk).split(".")[0]
    return normalise_name(library_name(chunk.library or "")) in wanted or bool(
        package and normalise_name(package) in wanted
    )


def _scaled(config: RankingConfig, weight: float) -> RankingConfig:
    return replace(config, library_bonus=config.library_bonus * weight)
