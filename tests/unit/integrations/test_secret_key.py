"""Where the token key comes from: SECRET_KEY; on a local run a generated file (0600, reused);
in production without SECRET_KEY, nowhere (per-user tokens are off, and the reason says so)."""

import stat
from pathlib import Path

from almanac.integrations.secret_key import KEY_FILE, resolve_secret_key


def test_the_configured_key_wins(tmp_path: Path) -> None:
    key = resolve_secret_key("k" * 40, data_dir=tmp_path, local=True)
    assert (key.value, key.source, key.problem) == ("k" * 40, "SECRET_KEY", "")
    assert not (tmp_path / KEY_FILE).exists()


def test_a_local_run_generates_a_private_key_file_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = resolve_secret_key(None, data_dir=data, local=True)
    path = data / KEY_FILE
    assert first.value and len(first.value) >= 32 and first.source == f"{path} (generated)"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(data.stat().st_mode) == 0o700
    again = resolve_secret_key(None, data_dir=data, local=True)
    assert (again.value, again.source) == (first.value, str(path))


def test_production_without_a_key_has_none_and_says_why(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("x" * 64)  # a local run's file is not picked up in production
    key = resolve_secret_key(None, data_dir=tmp_path, local=False)
    assert key.value is None and "SECRET_KEY is not set (LOCAL_USER=false)" in key.problem
