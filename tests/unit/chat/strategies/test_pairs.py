"""The collaboration configuration: the settings' defaults, and the COLLABORATION_CONFIG file in the
seed's shape (under `collaboration:` or `discussion: collaboration:`), with errors that name the entry."""

from pathlib import Path

import pytest

from almanac.chat.strategies.pairs import Collaboration, Pair, apply_document, load_collaboration
from almanac.config import ConfigError

DEFAULTS = Collaboration(helper="big", threshold=0.5, max_retries=1)


def test_without_a_file_the_settings_apply_to_every_model() -> None:
    assert load_collaboration(DEFAULTS, None) is DEFAULTS
    assert DEFAULTS.pair_for(["chat", "small"]) == Pair("chat", "big", 0.5, 1)


def test_pairs_from_the_seeds_shape_fill_in_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "collaboration.yaml"
    path.write_text(
        "discussion:\n"
        "  tools: {enabled: true}\n"
        "  collaboration:\n"
        "    enabled: true\n"
        "    pairs:\n"
        "      - {primary: small, secondary: big, threshold: 0.7, max_retries: 2}\n"
        "      - {primary: offline, secondary: small}\n"
    )
    loaded = load_collaboration(DEFAULTS, path)
    assert loaded.pairs == (Pair("small", "big", 0.7, 2), Pair("offline", "small", 0.5, 1))
    assert loaded.pair_for(["chat", "small"]) == Pair("small", "big", 0.7, 2)
    assert loaded.pair_for(["other"]) == Pair("other", "big", 0.5, 1)  # no pair: the default helper
    assert loaded.source == str(path)


def test_json_is_accepted_and_enabled_false_turns_collaboration_off(tmp_path: Path) -> None:
    path = tmp_path / "collaboration.json"
    path.write_text('{"collaboration": {"enabled": false}}')
    assert load_collaboration(DEFAULTS, path).enabled is False


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"tools": {}}, "needs a `collaboration:` mapping"),
        ({"collaboration": {"pairs": [{"primary": "a"}]}}, "collaboration.pairs.0.secondary: Field required"),
        ({"collaboration": {"pairs": [{"primary": "a", "secondary": "b", "threshold": 2}]}}, "pairs.0.threshold"),
        ({"collaboration": {"pairs": [{"primary": "a", "secondary": "b", "max_retries": 9}]}}, "pairs.0.max_retries"),
        ({"collaboration": {"helpers": []}}, "collaboration.helpers: Extra inputs are not permitted"),
        (
            {"collaboration": {"pairs": [{"primary": "a", "secondary": "b"}, {"primary": "a", "secondary": "c"}]}},
            "more than one pair for the primary a",
        ),
    ],
)
def test_a_wrong_entry_is_named(document: object, message: str) -> None:
    with pytest.raises(ConfigError, match="COLLABORATION_CONFIG") as raised:
        apply_document(DEFAULTS, document, source="test.yaml")
    assert message in str(raised.value)


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_collaboration(DEFAULTS, tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("collaboration: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML or JSON"):
        load_collaboration(DEFAULTS, broken)
