"""Step 2: choosing the library among candidates (rules, or the chat model)."""

from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, reply
from almanac.rag.select import (
    ModelSelector,
    RuleSelector,
    means_standard_library,
    name_match,
    named_parts,
    normalise_name,
    rank_libraries,
)
from almanac.rag.sources.base import LibraryInfo

FASTAPI = LibraryInfo("/tiangolo/fastapi", "FastAPI", "Modern web framework", 9, 1800)
CLONE = LibraryInfo("/someone/fastapi", "fastapi", "A fork", 2, 12)
CLI = LibraryInfo("/fastapi/fastapi-cli", "FastAPI CLI", "Command line", 8, 50)
OTHER = LibraryInfo("/pallets/flask", "Flask", "Micro web framework", 9, 900)


def test_names_are_normalised() -> None:
    assert normalise_name("The FastAPI library") == "fastapi"
    assert normalise_name("pydantic_settings") == "pydantic-settings"


def test_exact_names_beat_prefixes_and_trust_breaks_ties() -> None:
    assert name_match("fastapi", FASTAPI) == 3 and name_match("fastapi", CLI) == 2 and name_match("fastapi", OTHER) == 0
    assert rank_libraries("FastAPI", [CLI, CLONE, OTHER, FASTAPI]) == [FASTAPI, CLONE, CLI]


def test_a_name_is_contained_only_as_whole_words_or_at_the_start() -> None:
    def local(name: str) -> LibraryInfo:
        return LibraryInfo(f"/pypi/{name}", name, "", 7, 10)

    assert name_match("yaml", local("pyyaml")) == 1 and name_match("websocket", local("websockets")) == 1
    assert name_match("users", local("fastapi-users")) == 1
    assert name_match("Python standard library", local("zstandard")) == 0  # "standard" is not zstandard


def test_names_of_the_whole_standard_library_are_told_from_packages() -> None:
    for name in ("Python standard library", "stdlib", "the standard library", "python3", "Python 3.12"):
        assert means_standard_library(name), name
    for name in ("python", "3.12", "re", "zstandard", "python-dotenv", "standard-webhooks"):
        assert not means_standard_library(name), name


def test_a_longer_library_argument_is_read_for_the_names_it_holds() -> None:
    assert named_parts("encode/httpx") == ["httpx"]  # as the Context7 ID `/encode/httpx`
    assert named_parts("httpx, python") == ["httpx"]  # "python" alone is filler
    assert named_parts("Python standard library (asyncio)") == ["asyncio", "Python standard library"]
    assert named_parts("sqlalchemy and alembic") == ["sqlalchemy", "alembic"]
    assert named_parts("fastapi") == [] and named_parts("pydantic-settings") == []


async def test_rules_pick_the_best_match() -> None:
    assert await RuleSelector().choose("q", "fastapi", [CLONE, CLI, FASTAPI]) == FASTAPI
    assert await RuleSelector().choose("q", "unrelated", [CLONE, OTHER]) == OTHER


async def test_the_model_chooses_among_the_shortlist_and_bad_answers_fall_back() -> None:
    model = ScriptedModel([reply("The best is /fastapi/fastapi-cli.")])
    assert await ModelSelector(model).choose("run the dev server", "fastapi", [FASTAPI, CLI]) == CLI
    assert "trust 9/10" in model.requests[0].messages[0].text
    for step in (reply("none of them"), ModelUnavailable("down")):
        assert await ModelSelector(ScriptedModel([step])).choose("q", "fastapi", [CLONE, FASTAPI]) == FASTAPI
