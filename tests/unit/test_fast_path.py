"""The fast path (``pytest -m "not e2e"``, ``make test-fast``) starts no cluster.

Two halves keep it so. ``tests/e2e/conftest.py`` marks every test under ``tests/e2e`` e2e by
where it lives, so the mark cannot be forgotten there; the last tests here check its hook
and, in any run that collects those tests, that each carries the mark. Outside that
directory no test may reach what starts a control plane, which the source shows without
running anything: these tests read every test module's imports and argument lists.
Forbidden are the dev cluster's fixtures (``dev_cluster``, ``metrics_token``), any module
under ``tests/e2e`` that leads to them or to the modules that spawn control-plane
processes, those modules themselves, and running the dev-cluster command line
(``python -m pykueue.devcluster``, ``pykueue dev``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
E2E = TESTS / "e2e"
# The modules that start processes of a control plane: the dev cluster's (``up``), the
# process spawner every component goes through, and the conformance harness's own API
# server and Kueue.
STARTS_PROCESSES = frozenset({
    "pykueue.devcluster.cluster",
    "pykueue.devcluster.processes",
    "pykueue.devcluster.conformance.control_plane",
    "pykueue.devcluster.conformance.kueue_process",
})
CLUSTER_FIXTURES = frozenset({"dev_cluster", "metrics_token"})
# Consecutive command-line words that run the dev-cluster CLI.
CLUSTER_COMMANDS = frozenset({("-m", "pykueue.devcluster"), ("pykueue", "dev")})


def module_name(path: Path) -> str:
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, tree: ast.AST) -> set[str]:
    """Every module a file imports, ``from a import b`` giving both ``a`` and ``a.b`` (``b``
    may be a submodule), relative imports resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.AST], ...]:
    return tuple((path, ast.parse(path.read_text(), filename=str(path)))
                 for path in sorted(TESTS.rglob("*.py")))


def parsed_modules(root: Path) -> Iterator[tuple[Path, ast.AST]]:
    return ((path, tree) for path, tree in _parsed() if path.is_relative_to(root))


def cluster_bound_e2e_modules() -> set[str]:
    """Modules under ``tests/e2e`` that import, directly or through each other, its conftest
    (the dev cluster's fixtures) or a module that starts processes."""
    graph = {module_name(path): imports(path, tree) for path, tree in parsed_modules(E2E)}
    bound = {"tests.e2e.conftest"}
    while True:
        more = {m for m, deps in graph.items() if m not in bound and deps & (bound | STARTS_PROCESSES)}
        if not more:
            return bound
        bound |= more


def outside_e2e() -> Iterator[tuple[Path, ast.AST]]:
    """Every test module but those under ``tests/e2e`` and this one (which names what it bans)."""
    for path, tree in parsed_modules(TESTS):
        if not path.is_relative_to(E2E) and path != Path(__file__).resolve():
            yield path, tree


def test_the_scan_sees_the_e2e_trees_own_links_to_the_cluster() -> None:
    bound = cluster_bound_e2e_modules()
    assert {"tests.e2e.test_tas_manager", "tests.e2e.jobs_common", "tests.e2e.runtime.test_leader",
            "tests.e2e.test_conformance"} <= bound
    # Helpers that start nothing may be shared with the fast tests.
    assert not {"tests.e2e.browser", "tests.e2e.fault_observer"} & bound
    relative = imports(E2E / "test_tas_manager.py", ast.parse("from .conftest import DevCluster"))
    assert "tests.e2e.conftest" in relative


def test_no_test_outside_e2e_imports_what_starts_a_cluster() -> None:
    forbidden = cluster_bound_e2e_modules() | STARTS_PROCESSES
    found = {str(path.relative_to(TESTS.parent)): sorted(imports(path, tree) & forbidden)
             for path, tree in outside_e2e()}
    assert {path: mods for path, mods in found.items() if mods} == {}


def test_no_test_outside_e2e_asks_for_the_dev_cluster_fixtures() -> None:
    asking = [f"{path.relative_to(TESTS.parent)}:{node.lineno} {node.name}"
              for path, tree in outside_e2e() for node in ast.walk(tree)
              if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
              and CLUSTER_FIXTURES & {a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                                       *node.args.kwonlyargs)}]
    assert asking == []


def test_no_test_outside_e2e_runs_the_dev_cluster_command_line() -> None:
    running = []
    for path, tree in outside_e2e():
        for node in ast.walk(tree):
            if isinstance(node, ast.List | ast.Tuple):
                words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
                if CLUSTER_COMMANDS & set(itertools.pairwise(words)):
                    running.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}")
    assert running == []


class _Item:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.marks: list[str] = []

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark.name)

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.marks else None


def test_the_e2e_hook_marks_every_test_that_lives_under_e2e_and_no_other() -> None:
    # Its conftest is loaded by every run that collects tests/ (the fast path too, before it
    # deselects); loading it starts nothing, only its fixtures would.
    conftest = importlib.import_module("tests.e2e.conftest")
    items = [_Item(E2E / "test_queueing.py"), _Item(E2E / "runtime" / "test_leader.py"),
             _Item(TESTS / "unit" / "test_cli.py"), _Item(TESTS / "component" / "dashboard" / "test_x.py")]
    items[1].marks.append("late")
    conftest.pytest_collection_modifyitems(items)
    assert [item.marks for item in items] == [["e2e"], [], [], ["late", "e2e"]]  # the late one last
    names = ["test_queueing.py", "test_cli.py", "test_x.py", "test_leader.py"]
    assert [item.path.name for item in items] == names


def test_every_collected_test_under_e2e_is_marked_e2e(request: pytest.FixtureRequest) -> None:
    """In a run that collects them (``make test``); ``-m "not e2e"`` leaves none to look at,
    and one left unmarked would be here to fail this."""
    unmarked = [item.nodeid for item in request.session.items
                if item.path.resolve().is_relative_to(E2E) and item.get_closest_marker("e2e") is None]
    assert unmarked == []
