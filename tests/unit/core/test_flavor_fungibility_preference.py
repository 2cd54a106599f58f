"""flavorFungibility.preference: Kueue v0.19.2's ranking of flavors that need borrowing or preemption.

The ranking cases follow Kueue's TestIsPreferred (pkg/scheduler/flavorassigner); whole-cycle
cases are the scenario files tests/scenarios/kueue/flavorassigner/preference-*.yaml.
"""

from __future__ import annotations

import pytest

from pykueue.manager.core.assignment import Mode
from pykueue.manager.core.flavor_assigner import is_preferred, should_try_next_flavor
from pykueue.manager.core.objects import cluster_queue_from

BOP, POB = "BorrowingOverPreemption", "PreemptionOverBorrowing"
FIT, PREEMPT, NONE, NOFIT = Mode.FIT, Mode.PREEMPT, Mode.NO_CANDIDATES, Mode.NO_FIT


@pytest.mark.parametrize(
    ("a", "b", "preference", "want"),
    [
        ((FIT, 0), (PREEMPT, 0), "", True),  # no preference: the better mode
        ((PREEMPT, 1), (FIT, 2), BOP, False),  # mode first, whatever the borrowing
        ((PREEMPT, 1), (FIT, 2), POB, True),  # shallower borrowing first
        ((PREEMPT, 1), (FIT, 1), POB, False),  # equal borrowing: the better mode
        ((NONE, 1), (FIT, 2), POB, False),  # no candidates ranks below a usable flavor...
        ((FIT, 2), (NONE, 1), POB, True),
        ((NONE, 1), (NOFIT, 0), "", True),  # ...but above one that does not fit
        ((NOFIT, 0), (NONE, 1), "", False),
        ((NONE, 1), (NONE, 2), POB, True),  # between two without candidates: borrowing decides
        ((NONE, 2), (NONE, 1), POB, False),
        ((Mode.RECLAIM, 0), (PREEMPT, 0), POB, True),  # reclaim beats preemption in the queue
        ((FIT, 1), (FIT, 1), BOP, False),  # equal: not preferred (the earlier flavor stays)
    ],
)
def test_is_preferred(a: tuple[Mode, int], b: tuple[Mode, int], preference: str, want: bool) -> None:
    assert is_preferred(a, b, preference) is want


def test_cluster_queue_reads_preference() -> None:
    cq = cluster_queue_from(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "flavorFungibility": {
                    "whenCanBorrow": "TryNextFlavor",
                    "whenCanPreempt": "TryNextFlavor",
                    "preference": POB,
                }
            },
        }
    )
    assert cq.fungibility_preference == POB
    assert cluster_queue_from({"metadata": {"name": "cq"}, "spec": {}}).fungibility_preference == ""


@pytest.mark.parametrize(
    ("fungibility", "rank", "want"),
    [
        ({}, (FIT, 0), False),
        ({}, (FIT, 1), False),  # whenCanBorrow defaults to stopping
        ({"whenCanBorrow": "TryNextFlavor"}, (FIT, 1), True),
        ({}, (PREEMPT, 0), True),  # whenCanPreempt defaults to TryNextFlavor
        ({"whenCanPreempt": "MayStopSearch"}, (PREEMPT, 0), False),
        ({"whenCanPreempt": "Preempt"}, (Mode.RECLAIM, 0), False),  # v1beta1 name of MayStopSearch
        ({"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "TryNextFlavor"}, (PREEMPT, 1), True),
        ({"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "MayStopSearch"}, (NONE, 0), True),
        ({"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "MayStopSearch"}, (NOFIT, 0), True),
    ],
)
def test_should_try_next_flavor(fungibility: dict[str, str], rank: tuple[Mode, int], want: bool) -> None:
    cq = cluster_queue_from({"metadata": {"name": "cq"}, "spec": {"flavorFungibility": fungibility}})
    assert should_try_next_flavor(rank, cq) is want


def test_webhook_rejects_preference_unless_both_policies_try_next_flavor() -> None:
    from pykueue.webhook.crd_rules import validate_cluster_queue

    def errors(fungibility: dict[str, str]) -> list[str]:
        obj = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "flavorFungibility": fungibility},
        }
        return [str(e) for e in validate_cluster_queue(obj, None) if "preference" in e.path]

    both = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    assert errors({**both, "preference": POB}) == []
    (message,) = errors(
        {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor", "preference": POB}
    )
    assert message.startswith("spec.flavorFungibility.preference: Invalid value")
    assert f'preference "{POB}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor' in message
