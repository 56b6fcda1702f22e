"""The models this deployment has configured, by name: what a discussion participant or a
collaboration pair may name.

The composition root registers the chat model, the built-in offline model (`offline`), the
summariser, the boost planner, the gateway's tiers and the collaboration helper, each with the role
it was configured for. A model is built on first use (vendor SDKs are imported only then) and kept.
The same model configured for several roles is one entry with all its roles; two different models
that would share a name get their provider (or role) as a prefix, e.g. `planner:gpt-4o`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from almanac.llm.base import Model
from almanac.llm.providers import ProviderConfig, build_model

OFFLINE = "offline"


class UnknownModel(KeyError):
    """No configured model has this name."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(name)
        self.name = name
        self.known = sorted(known)

    def __str__(self) -> str:
        return f"no configured model is named {self.name!r} (configured: {', '.join(self.known)})"


@dataclass(frozen=True)
class CatalogEntry:
    """A configured model: the name to ask for, where it runs, and what it was configured as."""

    name: str
    provider: str
    model: str
    roles: tuple[str, ...]
    aliases: tuple[str, ...] = ()


@dataclass
class _Slot:
    entry: CatalogEntry
    config: ProviderConfig | None = None
    built: Model | None = None
    key: tuple[str, ...] = field(default_factory=tuple)  # what makes two registrations the same model


class ModelCatalog:
    """Configured models by name and alias."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._aliases: dict[str, str] = {}

    def add(
        self, *, role: str, model: Model | None = None, config: ProviderConfig | None = None, name: str | None = None
    ) -> str:
        """Register a model (an instance, or a configuration to build it from on first use) for
        `role`; returns the name it is known by."""
        if model is None and config is None:
            raise ValueError("a catalog entry needs a model or a configuration")
        provider = model.provider if model is not None else config.provider  # type: ignore[union-attr]
        model_id = model.name if model is not None else config.model  # type: ignore[union-attr]
        if provider == "offline":
            name, model_id = OFFLINE, "almanac-offline"
        key = (provider, model_id, (config.base_url or "") if config else f"instance:{id(model)}")
        for slot in self._slots.values():
            if slot.key == key or (provider == "offline" and slot.entry.provider == "offline"):
                self._extend(slot, role)
                return slot.entry.name
        taken = self._slots.get(name or model_id)
        # Another model has the name: tell them apart by provider, or by role on the same provider.
        second = f"{role}:{model_id}" if taken is not None and taken.entry.provider == provider else ""
        candidates = [name or model_id, second or f"{provider}:{model_id}", f"{role}:{model_id}"]
        chosen = next((c for c in candidates if c not in self), None)
        number = 2
        while chosen is None:
            chosen = f"{role}:{model_id}:{number}" if f"{role}:{model_id}:{number}" not in self else None
            number += 1
        self._slots[chosen] = _Slot(CatalogEntry(chosen, provider, model_id, (role,)), config, model, key)
        return chosen

    def alias(self, alias: str, name: str) -> None:
        """Let `alias` (e.g. `chat`) name the model registered as `name`."""
        if alias in self._slots or alias == name:
            return
        self._aliases[alias] = name
        slot = self._slots[name]
        slot.entry = CatalogEntry(**{**slot.entry.__dict__, "aliases": (*slot.entry.aliases, alias)})

    def _extend(self, slot: _Slot, role: str) -> None:
        if role not in slot.entry.roles:
            slot.entry = CatalogEntry(**{**slot.entry.__dict__, "roles": (*slot.entry.roles, role)})

    def resolve(self, name: str) -> str:
        """The entry name `name` refers to (itself or through an alias); `UnknownModel` otherwise."""
        if name in self._slots:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise UnknownModel(name, [*self._slots, *self._aliases])

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._slots or name in self._aliases)

    def get(self, name: str) -> Model:
        """The model `name` refers to, built on first use."""
        slot = self._slots[self.resolve(name)]
        if slot.built is None:
            assert slot.config is not None
            slot.built = build_model(slot.config)
        return slot.built

    def entries(self) -> list[CatalogEntry]:
        """Every configured model, in registration order."""
        return [slot.entry for slot in self._slots.values()]
