"""Nothing outside the core reads or writes its state but through QueueingCore's public API.

The core's parts (cache, pending queues, workload state machine, cycle apply) are imported by
no module outside ``pykueue.manager.core`` (the import contract in pyproject.toml); this test
keeps the rest: every attribute a module outside the core reads on a core (an expression
named ``core``, ``self.core``, ``sim.core`` ...) is one of the facade's public names, so
neither a private field nor one of the mutable tables it once exposed (``workloads``,
``cq_defs``, ``holding``, ``changed`` ...) is reached; and what the facade hands out is
read only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from pykueue.manager.core.engine import QueueingCore

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "pykueue" / "manager" / "core"
# Tests that stage what no event of the core does alone reach its state here, and only here.
WHITE_BOX = {ROOT / "tests" / "unit" / "runtime_controllers" / "core_access.py"}
# The fields QueueingCore exposed before it was split: mutable tables and drain sets.
OLD_FIELDS = frozenset({
    "workloads", "cq_defs", "cohort_defs", "local_queues", "flavors", "priority_classes", "checks",
    "namespaces", "fair_weights", "nodes", "cohort_nodes", "inactive", "inactivity", "terminating",
    "usage", "holding", "holding_versions", "queues", "changed", "ready_changed", "released",
    "withdrawn", "withdrawals", "stopping", "replaced_slices", "preempted_reasons", "no_fit_tiers",
    "afs", "tas", "scheduler",
})
PUBLIC = frozenset(name for name in dir(QueueingCore) if not name.startswith("_"))
# A module handles a queueing core if it names its type or one of its owners (a Kubernetes
# client's ``core`` API elsewhere is no concern of this test).
HANDLES_A_CORE = re.compile(r"\bQueueingCore\b|\bSimulation\b|\bQueueManager\b"
                            r"|(?<![\w.])(sim|manager)\.core\b")


def _names_a_core(node: ast.expr) -> bool:
    """``core``, ``self.core``, ``sim.core``, ``self._core``, ``QueueingCore(...)`` ..."""
    if isinstance(node, ast.Name):
        return node.id.lstrip("_").endswith("core")
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_").endswith("core")
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "QueueingCore"
    return False


def _outside_the_core() -> Iterator[Path]:
    for top in ("pykueue", "benchmarks", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if CORE not in path.parents and path not in WHITE_BOX and HANDLES_A_CORE.search(path.read_text()):
                yield path


def _reaches(path: Path) -> list[str]:
    """``line: expression`` for every attribute of a core read outside its public API."""
    tree = ast.parse(path.read_text(), str(path))
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _names_a_core(node.value):
            continue
        # An old field's name is a query now (``core.flavors()``): only its call is allowed.
        old_field = node.attr in OLD_FIELDS and id(node) not in called
        if node.attr not in PUBLIC or old_field:
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_scan_finds_what_it_looks_for() -> None:
    sample = ast.parse("core.workloads['a']; self.core._cache; sim.core.holding.get('cq'); "
                       "QueueingCore()._timers; core.flavors(); core.workload('a').status; x.workloads")
    called = {id(n.func) for n in ast.walk(sample) if isinstance(n, ast.Call)}
    found = sorted(ast.unparse(n) for n in ast.walk(sample) if isinstance(n, ast.Attribute)
                   and _names_a_core(n.value) and (n.attr not in PUBLIC or (n.attr in OLD_FIELDS
                                                                           and id(n) not in called)))
    assert found == ["QueueingCore()._timers", "core.workloads", "self.core._cache", "sim.core.holding"]


def test_nothing_outside_the_core_reaches_its_state() -> None:
    assert len(list(_outside_the_core())) > 50  # the runtime, dashboard, scenarios, benchmarks, tests
    reached = {str(path.relative_to(ROOT)): lines
               for path in _outside_the_core() if (lines := _reaches(path))}
    assert reached == {}, "read the core through QueueingCore's queries (workload, holders, ...)"


def test_the_facade_exposes_no_mutable_state() -> None:
    """Its properties are values or hooks given to it, and its table queries are read only."""
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}})
    for name in PUBLIC:
        attr = getattr(type(core), name)
        if isinstance(attr, property):
            assert not isinstance(getattr(core, name), (dict, set, list)), name
    for view in (core.all_workloads(), core.cluster_queues(), core.cohorts(), core.local_queues(),
                 core.flavors(), core.holders("cq"), core.holders_by_queue(),
                 core.quota_tree().cluster_queues, core.quota_tree().cohorts):
        assert isinstance(view, MappingProxyType), type(view)
    inactive = core.inactive_cluster_queues()
    with pytest.raises(TypeError):
        inactive["cq"] = None
    changes = core.take_changes()
    with pytest.raises(AttributeError):
        changes.written = frozenset()
    assert isinstance(changes.written, frozenset) and isinstance(core.take_stopping(), frozenset)
