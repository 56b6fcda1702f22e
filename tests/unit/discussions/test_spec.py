"""A discussion request checked against the deployment: models, tools, limits, pairs — each fault
named by the field the API would name."""

import pytest

from almanac.chat.strategies.pairs import Collaboration, Pair
from almanac.discussions.spec import (
    DiscussionInvalid,
    DiscussionRequest,
    Limits,
    PairRequest,
    ParticipantRequest,
    check,
)
from almanac.llm.catalog import ModelCatalog
from almanac.llm.fake import ScriptedModel
from almanac.llm.providers.offline import OfflineModel

TOOLS = ["retrieve_full_context", "clock"]
CONFIGURED = Collaboration(
    enabled=True, helper="", threshold=0.5, max_retries=1, pairs=(Pair("small", "offline", 0.6, 2),)
)


@pytest.fixture
def catalog() -> ModelCatalog:
    catalog = ModelCatalog()
    catalog.alias("chat", catalog.add(role="chat", model=ScriptedModel(name="small")))
    catalog.add(role="offline", model=OfflineModel())
    return catalog


def request(**changes: object) -> DiscussionRequest:
    values: dict[str, object] = {
        "goal": "  Plan a release  ",
        "turns": 4,
        "participants": [
            ParticipantRequest("chat", "  release   manager "),
            ParticipantRequest("offline", "tester", "Ty"),
        ],
    }
    values.update(changes)
    return DiscussionRequest(**values)  # type: ignore[arg-type]


def run(catalog: ModelCatalog, **changes: object) -> object:
    return check(request(**changes), catalog=catalog, tools=TOOLS, limits=Limits(6, 3), collaboration=CONFIGURED)


def test_a_good_request_becomes_a_spec(catalog: ModelCatalog) -> None:
    spec = check(request(), catalog=catalog, tools=TOOLS, limits=Limits(6, 3), collaboration=CONFIGURED)
    assert spec.goal == "Plan a release" and spec.turns == 4 and spec.tools == tuple(TOOLS)
    first, second = spec.participants
    assert (first.model, first.role, first.name, first.label) == (
        "small",
        "release manager",
        "Participant 1",
        "Participant 1 (release manager)",
    )
    assert (second.model, second.name) == ("offline", "Ty")
    assert [spec.speaker(turn).index for turn in range(1, 6)] == [0, 1, 0, 1, 0]
    assert spec.collaboration.enabled is False and spec.collaboration.pairs == CONFIGURED.pairs
    assert spec.config()["participants"][0] == {"model": "small", "role": "release manager", "name": "Participant 1"}


def test_the_requests_pairs_come_before_the_configured_ones(catalog: ModelCatalog) -> None:
    spec = check(
        request(collaboration=True, pairs=[PairRequest("chat", "offline", max_retries=3)]),
        catalog=catalog,
        tools=TOOLS,
        limits=Limits(6, 3),
        collaboration=CONFIGURED,
    )
    assert spec.collaboration.enabled is True
    assert spec.collaboration.pairs == (Pair("small", "offline", 0.5, 3),)  # the configured pair for small gave way


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"goal": "  "}, "goal"),
        ({"turns": 0}, "turns"),
        ({"turns": 7}, "turns"),
        ({"participants": [ParticipantRequest("chat", "x")]}, "participants"),
        ({"participants": [ParticipantRequest("chat", "x")] * 4}, "participants"),
        (
            {"participants": [ParticipantRequest("chat", "x"), ParticipantRequest("gpt-17", "y")]},
            "participants.1.model",
        ),
        (
            {"participants": [ParticipantRequest("chat", " "), ParticipantRequest("offline", "y")]},
            "participants.0.role",
        ),
        ({"tools": ["clock", "shell"]}, "tools.1"),
        ({"pairs": [PairRequest("chat", "gpt-17")]}, "collaboration.pairs.0.secondary"),
        ({"pairs": [PairRequest("nobody", "chat")]}, "collaboration.pairs.0.primary"),
    ],
)
def test_faults_are_named(catalog: ModelCatalog, changes: dict[str, object], field: str) -> None:
    with pytest.raises(DiscussionInvalid) as raised:
        run(catalog, **changes)
    assert raised.value.field == field


def test_no_tools_and_repeated_tools(catalog: ModelCatalog) -> None:
    assert run(catalog, tools=[]).tools == ()  # type: ignore[attr-defined]
    assert run(catalog, tools=["clock", "clock"]).tools == ("clock",)  # type: ignore[attr-defined]
