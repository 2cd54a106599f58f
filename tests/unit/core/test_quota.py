"""Quota arithmetic of the cohort tree (Kueue's resource nodes), on small hand-made trees."""

from __future__ import annotations

from pykueue.manager.core.objects import Quota
from pykueue.manager.core.quota import (
    QuotaNode,
    Usage,
    available,
    borrowing_level,
    compute_subtree,
    potential_available,
)

FR_ = ("rf", "cpu")


def _tree(*cqs: tuple[str, int, int | None, int | None], cohort_quota: int = 0) -> dict[str, QuotaNode]:
    root = QuotaNode("cohort", False, {FR_: Quota(cohort_quota, None, None)})
    nodes = {"cohort": root}
    for name, nominal, bl, ll in cqs:
        n = QuotaNode(name, True, {FR_: Quota(nominal, bl, ll)})
        n.parent = root
        root.children.append(n)
        nodes[name] = n
    compute_subtree(root)
    return nodes


def test_lending_limit_hides_private_quota_from_the_cohort() -> None:
    t = _tree(("lend-a", 3, None, 2), ("lend-b", 2, None, 2))
    assert t["cohort"].subtree[FR_] == 4  # lend-a keeps 1 private
    assert t["lend-a"].local[FR_] == 1
    usage = Usage()
    usage.add(t["lend-b"], FR_, 2)
    assert available(t["lend-b"], usage, FR_) == 2
    assert available(t["lend-a"], usage, FR_) == 3  # its private 1 + the cohort's 2
    assert potential_available(t["lend-b"], FR_) == 4


def test_usage_above_local_quota_goes_to_the_parent() -> None:
    t = _tree(("a", 4, None, 1), ("b", 4, None, None))
    usage = Usage()
    usage.add(t["a"], FR_, 2)  # 3 private, so nothing reaches the cohort
    assert usage.get(t["cohort"], FR_) == 0
    usage.add(t["a"], FR_, 3)
    assert usage.get(t["cohort"], FR_) == 2
    usage.add(t["a"], FR_, -5)
    assert usage.get(t["cohort"], FR_) == 0 and usage.get(t["a"], FR_) == 0


def test_borrowing_limit_caps_available_and_capacity() -> None:
    t = _tree(("a", 2, 1, None), ("b", 10, None, None))
    usage = Usage()
    assert available(t["a"], usage, FR_) == 3
    assert potential_available(t["a"], FR_) == 3
    usage.add(t["a"], FR_, 3)
    assert available(t["a"], usage, FR_) == 0


def test_overlay_leaves_the_base_untouched() -> None:
    t = _tree(("a", 2, None, None), ("b", 2, None, None))
    base = Usage()
    base.add(t["a"], FR_, 1)
    view = base.overlay()
    view.add(t["b"], FR_, 2)
    assert view.get(t["b"], FR_) == 2 and base.get(t["b"], FR_) == 0
    assert view.get(t["a"], FR_) == 1
    assert available(t["a"], view, FR_) == 1 and available(t["a"], base, FR_) == 3


def test_borrowing_level() -> None:
    t = _tree(("a", 2, None, None), ("b", 2, None, None))
    usage = Usage()
    assert borrowing_level(t["a"], usage, FR_, 2)[0] == 0
    assert borrowing_level(t["a"], usage, FR_, 3)[0] == 1


def test_cohort_own_quota_is_shared() -> None:
    t = _tree(("a", 0, None, None), cohort_quota=5)
    assert available(t["a"], Usage(), FR_) == 5
