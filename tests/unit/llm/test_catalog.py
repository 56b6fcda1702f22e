"""The model catalog: configured models by name and alias, one entry per model whatever roles it has,
built on first use, and clear about names it does not know."""

import pytest

from almanac.llm.catalog import OFFLINE, ModelCatalog, UnknownModel
from almanac.llm.fake import ScriptedModel
from almanac.llm.providers import ProviderConfig
from almanac.llm.providers.offline import OfflineModel


def test_models_are_found_by_name_and_alias() -> None:
    catalog = ModelCatalog()
    chat = ScriptedModel(name="small")
    catalog.alias("chat", catalog.add(role="chat", model=chat))
    assert catalog.get("small") is chat and catalog.get("chat") is chat
    assert catalog.resolve("chat") == "small" and "chat" in catalog and "nope" not in catalog
    [entry] = catalog.entries()
    assert (entry.name, entry.provider, entry.roles, entry.aliases) == ("small", "fake", ("chat",), ("chat",))


def test_the_offline_model_is_offline_whatever_role_adds_it() -> None:
    catalog = ModelCatalog()
    offline = OfflineModel()
    assert catalog.add(role="chat", model=offline) == OFFLINE
    assert catalog.add(role="SMALL_MODEL", config=ProviderConfig("offline", "almanac-offline")) == OFFLINE
    assert catalog.get(OFFLINE) is offline
    [entry] = catalog.entries()
    assert entry.roles == ("chat", "SMALL_MODEL")


def test_one_model_in_several_roles_is_one_entry_and_different_models_do_not_collide() -> None:
    catalog = ModelCatalog()
    openai = ProviderConfig("openai", "gpt-4o", base_url="http://a.example/v1")
    assert catalog.add(role="BIG_MODEL", config=openai) == "gpt-4o"
    assert catalog.add(role="MIDDLE_MODEL", config=openai) == "gpt-4o"
    planner = ProviderConfig("openai", "gpt-4o", base_url="http://planner.example/v1")
    assert catalog.add(role="planner", config=planner) == "planner:gpt-4o"  # same name, another server
    anthropic = ProviderConfig("anthropic", "gpt-4o", api_key="k")
    assert catalog.add(role="helper", config=anthropic) == "anthropic:gpt-4o"
    assert [e.roles for e in catalog.entries()] == [("BIG_MODEL", "MIDDLE_MODEL"), ("planner",), ("helper",)]


def test_models_are_built_on_first_use_and_kept() -> None:
    catalog = ModelCatalog()
    name = catalog.add(role="offline", config=ProviderConfig("offline", "almanac-offline"))
    first = catalog.get(name)
    assert isinstance(first, OfflineModel) and catalog.get(name) is first


def test_an_unknown_name_says_which_are_configured() -> None:
    catalog = ModelCatalog()
    catalog.alias("chat", catalog.add(role="chat", model=ScriptedModel(name="small")))
    with pytest.raises(UnknownModel) as raised:
        catalog.get("gpt-17")
    assert str(raised.value) == "no configured model is named 'gpt-17' (configured: chat, small)"
