"""No import cycles inside `almanac`: every module imports only modules that do not import it back,
directly or through others. Imports made only for type checking (`if TYPE_CHECKING:`) and imports
inside functions count too — a cycle hidden from the interpreter is still a layer reaching upward."""

from __future__ import annotations

import ast
from pathlib import Path

import almanac

PACKAGE = Path(almanac.__file__).parent


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its `__init__`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module `name` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the module pkg.sub; `from pkg import name`, pkg itself.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    known = set(modules)
    return {name: imported(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (each group imports itself through the others):\n" + "\n".join(
        " ⇄ ".join(group) for group in found
    )


def test_the_cycle_finder_sees_type_checking_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "run.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.service import Service\n"
    )
    (package / "sub" / "service.py").write_text("from .run import Run\n")
    (package / "leaf.py").write_text("import pkg.sub.run\nfrom pkg.sub import service\n")
    modules = module_files(package)
    graph = {name: imported(name, path, set(modules)) for name, path in modules.items()}
    assert cycles(graph) == [["pkg.sub.run", "pkg.sub.service"]]
    assert graph["pkg.leaf"] == {"pkg.sub.run", "pkg.sub.service"}


def test_runs_take_a_context_and_never_import_their_service() -> None:
    graph = import_graph()
    assert "almanac.chat.service" not in graph["almanac.chat.run"]
    assert "almanac.chat.service" not in graph["almanac.chat.strategies.setup"]
    assert "almanac.discussions.service" not in graph["almanac.discussions.run"]
