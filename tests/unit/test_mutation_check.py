"""The mutation check (run by CI after the suite) can apply every mutation: each fragment it
replaces is still in its file, exactly once — a refactor that moves a guarded line fails here, in
`make test`, instead of at the end of CI."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "mutation_check.py"
spec = importlib.util.spec_from_file_location("mutation_check", SCRIPT)
assert spec is not None and spec.loader is not None
mutation_check = importlib.util.module_from_spec(spec)
sys.modules.setdefault("mutation_check", mutation_check)  # its dataclasses look their module up
spec.loader.exec_module(mutation_check)


@pytest.mark.parametrize("mutation", mutation_check.MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_finds_its_fragment_once(mutation) -> None:  # type: ignore[no-untyped-def]
    source = (mutation_check.PACKAGE / mutation.path).read_text()
    assert source.count(mutation.old) == 1, f"{mutation.path}: {mutation.old!r}"
    assert mutation.new != mutation.old
    for target in mutation.tests:
        path = target.split("::", 1)[0]
        if path.endswith(".py"):
            assert (SCRIPT.parents[1] / path).is_file(), target
