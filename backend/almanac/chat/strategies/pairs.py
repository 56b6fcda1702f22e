"""Who helps whom: the collaboration configuration (primary → secondary pairs, threshold, retries).

Two sources, as for the tools: the settings (COLLABORATION_HELPER_MODEL, COLLABORATION_THRESHOLD,
COLLABORATION_MAX_RETRIES: one default helper for every model) and, optionally, the
COLLABORATION_CONFIG file (YAML or JSON) in the seed's shape, also accepted under a top-level
`discussion:` so that one file can hold both `tools:` and `collaboration:`:

    collaboration:
      enabled: true
      pairs:
        - primary: offline              # a configured model name (GET /api/models), or `chat`
          secondary: claude-sonnet-4-6  # its helper
          threshold: 0.6                # optional: COLLABORATION_THRESHOLD
          max_retries: 2                # optional: COLLABORATION_MAX_RETRIES

A primary without a pair gets the default helper; without one, it is its own helper (it is asked
the helper's question, then retries with its own plan). `enabled: false` turns the stuck checks off:
the `collaborate` strategy then answers like `direct`. A wrong entry is a `ConfigError` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from almanac.config import ConfigError

MAX_RETRIES = 5


@dataclass(frozen=True)
class Pair:
    """A primary model, its helper (`""`: itself), and when and how often to ask the helper."""

    primary: str
    secondary: str
    threshold: float
    max_retries: int


@dataclass(frozen=True)
class Collaboration:
    enabled: bool = True
    helper: str = ""  # the default helper; "" = each model helps itself
    threshold: float = 0.5
    max_retries: int = 1
    pairs: tuple[Pair, ...] = ()
    source: str = "settings"

    def pair_for(self, names: Iterable[str]) -> Pair:
        """The pair of a primary known by any of `names` (its catalog name, its aliases): the
        configured one, else the default helper with the default threshold and retries."""
        wanted = set(names)
        found = next((pair for pair in self.pairs if pair.primary in wanted), None)
        if found is not None:
            return found
        return Pair(next(iter(sorted(wanted)), ""), self.helper, self.threshold, self.max_retries)


class _PairEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    primary: str = Field(min_length=1, max_length=200)
    secondary: str = Field(min_length=1, max_length=200)
    threshold: float | None = Field(None, ge=0, le=1)
    max_retries: int | None = Field(None, ge=0, le=MAX_RETRIES)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    pairs: list[_PairEntry] = Field(default_factory=list)


def apply_document(defaults: Collaboration, document: Any, *, source: str) -> Collaboration:
    """`defaults` with a parsed COLLABORATION_CONFIG document applied."""
    if isinstance(document, dict) and "collaboration" not in document and isinstance(document.get("discussion"), dict):
        document = document["discussion"]
    section = document.get("collaboration") if isinstance(document, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"COLLABORATION_CONFIG: {source} needs a `collaboration:` mapping")
    try:
        parsed = _Section.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(f"collaboration.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"COLLABORATION_CONFIG: {problems}") from None
    pairs = tuple(
        Pair(
            entry.primary,
            entry.secondary,
            defaults.threshold if entry.threshold is None else entry.threshold,
            defaults.max_retries if entry.max_retries is None else entry.max_retries,
        )
        for entry in parsed.pairs
    )
    primaries = [pair.primary for pair in pairs]
    twice = sorted({name for name in primaries if primaries.count(name) > 1})
    if twice:
        raise ConfigError(f"COLLABORATION_CONFIG: more than one pair for the primary {', '.join(twice)}")
    return replace(defaults, enabled=parsed.enabled, pairs=pairs, source=source)


def load_collaboration(defaults: Collaboration, path: Path | None) -> Collaboration:
    """The settings' collaboration, with the COLLABORATION_CONFIG file (when given) applied."""
    if path is None:
        return defaults
    path = path.expanduser()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except OSError as exc:
        raise ConfigError(f"COLLABORATION_CONFIG: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"COLLABORATION_CONFIG: {path} is not valid YAML or JSON ({exc})") from None
    return apply_document(defaults, document, source=str(path))
