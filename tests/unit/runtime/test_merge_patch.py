"""Merge patches for status writes: applying the computed patch to the old version gives
the new one exactly (removed keys included), and an unchanged part is not sent."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pykueue.kube.merge_patch import apply_merge_patch, merge_patch

_leaf = st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.lists(st.integers(), max_size=3))
_docs = st.recursive(_leaf, lambda inner: st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
                     max_leaves=20)
_objects = st.dictionaries(st.sampled_from("abcde"), _docs, max_size=5)


@given(_objects, _objects)
def test_the_patch_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert apply_merge_patch(old, merge_patch(old, new)) == new


def test_only_what_changed_is_sent() -> None:
    old = {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]},
           "conditions": [{"type": "QuotaReserved", "status": "True"}],
           "requeueState": {"count": 1, "requeueAt": "t"}}
    new = {"conditions": [{"type": "QuotaReserved", "status": "False"}], "requeueState": {"count": 1}}
    assert merge_patch(old, new) == {"admission": None, "conditions": new["conditions"],
                                     "requeueState": {"requeueAt": None}}
    assert merge_patch(new, new) == {}
