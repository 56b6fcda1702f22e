"""A discussion request checked against this deployment (pure): which models exist, which tools the
participants may call, the limits on turns and participants, and the collaboration pairs.

`check()` turns a `DiscussionRequest` into a `DiscussionSpec` or raises `DiscussionInvalid` naming
the field at fault the way the API names it (`participants.1.model`, `tools.0`,
`collaboration.pairs.0.secondary`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from almanac.chat.strategies.pairs import Collaboration, Pair
from almanac.llm.catalog import ModelCatalog


class DiscussionInvalid(Exception):
    """The request cannot run here; `field` names the part at fault."""

    code = "invalid_request"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ParticipantRequest:
    model: str
    role: str
    name: str | None = None


@dataclass(frozen=True)
class PairRequest:
    primary: str
    secondary: str
    threshold: float | None = None
    max_retries: int | None = None


@dataclass(frozen=True)
class DiscussionRequest:
    goal: str
    turns: int
    participants: Sequence[ParticipantRequest]
    tools: Sequence[str] | None = None  # None: every tool
    collaboration: bool = False
    pairs: Sequence[PairRequest] = ()


@dataclass(frozen=True)
class Participant:
    index: int
    model: str  # the catalog name
    role: str
    name: str

    @property
    def label(self) -> str:
        """How the others see this participant: `Ada (critic)`."""
        return f"{self.name} ({self.role})"


@dataclass(frozen=True)
class DiscussionSpec:
    goal: str
    turns: int
    participants: tuple[Participant, ...]
    tools: tuple[str, ...]
    collaboration: Collaboration = field(default_factory=lambda: Collaboration(enabled=False))

    def speaker(self, turn: int) -> Participant:
        """Who speaks at `turn` (1-based): the participants in order, round and round."""
        return self.participants[(turn - 1) % len(self.participants)]

    def config(self) -> dict[str, Any]:
        """What is stored of the request (JSON)."""
        return {
            "participants": [{"model": p.model, "role": p.role, "name": p.name} for p in self.participants],
            "tools": list(self.tools),
            "collaboration": {
                "enabled": self.collaboration.enabled,
                "pairs": [pair.__dict__ for pair in self.collaboration.pairs],
            },
        }


@dataclass(frozen=True)
class Limits:
    max_turns: int = 20
    max_participants: int = 4


def check(
    request: DiscussionRequest,
    *,
    catalog: ModelCatalog,
    tools: Collection[str],
    limits: Limits,
    collaboration: Collaboration,
) -> DiscussionSpec:
    """The request as a spec this deployment can run, or `DiscussionInvalid`."""
    if not request.goal.strip():
        raise DiscussionInvalid("goal", "must contain some text")
    if not 1 <= request.turns <= limits.max_turns:
        raise DiscussionInvalid("turns", f"must be between 1 and {limits.max_turns}")
    if not 2 <= len(request.participants) <= limits.max_participants:
        raise DiscussionInvalid("participants", f"must name 2 to {limits.max_participants} participants")
    participants = tuple(_participant(index, p, catalog) for index, p in enumerate(request.participants))
    return DiscussionSpec(
        goal=request.goal.strip(),
        turns=request.turns,
        participants=participants,
        tools=_tools(request.tools, tools),
        collaboration=_collaboration(request, catalog, collaboration),
    )


def _model(name: str, catalog: ModelCatalog, where: str) -> str:
    if name not in catalog:
        known = ", ".join(entry.name for entry in catalog.entries())
        raise DiscussionInvalid(where, f"no configured model is named {name[:100]!r} (configured: {known})")
    return catalog.resolve(name)


def _participant(index: int, request: ParticipantRequest, catalog: ModelCatalog) -> Participant:
    model = _model(request.model, catalog, f"participants.{index}.model")
    role = " ".join(request.role.split())
    if not role:
        raise DiscussionInvalid(f"participants.{index}.role", "must contain some text")
    name = " ".join((request.name or "").split()) or f"Participant {index + 1}"
    return Participant(index, model, role, name)


def _tools(requested: Sequence[str] | None, available: Collection[str]) -> tuple[str, ...]:
    if requested is None:
        return tuple(available)
    for index, name in enumerate(requested):
        if name not in available:
            raise DiscussionInvalid(
                f"tools.{index}", f"no tool is named {name[:100]!r} (available: {', '.join(available) or 'none'})"
            )
    return tuple(dict.fromkeys(requested))


def _collaboration(request: DiscussionRequest, catalog: ModelCatalog, configured: Collaboration) -> Collaboration:
    """The request's pairs first, then the configured ones for primaries it did not pair."""
    pairs = []
    for index, pair in enumerate(request.pairs):
        where = f"collaboration.pairs.{index}"
        pairs.append(
            Pair(
                _model(pair.primary, catalog, f"{where}.primary"),
                _model(pair.secondary, catalog, f"{where}.secondary"),
                configured.threshold if pair.threshold is None else pair.threshold,
                configured.max_retries if pair.max_retries is None else pair.max_retries,
            )
        )
    paired = {pair.primary for pair in pairs}
    kept = [pair for pair in configured.pairs if pair.primary not in paired]
    return replace(configured, enabled=request.collaboration, pairs=(*pairs, *kept))
