"""Which field names a plain pod's group, as Kueue v0.19.2's GetPodGroupName reads it: the
annotation first while the WorkloadIdentifierAnnotations gate is on (its default), the label
alone when it is off. The pod webhook's checks name the field the name was read from."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.pod.webhook import WEBHOOK, group_name

GATE = "WorkloadIdentifierAnnotations"


def _pod(labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {keys.QUEUE_NAME: "lq", **labels},
                         "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _ctx(gate: bool) -> AdmissionContext:
    policy = AdmissionPolicy(frameworks=frozenset({"pod"}), gates=FeatureGates({GATE: gate}))
    return AdmissionContext(policy, ClusterFacts(namespace_labels={keys.NAMESPACE_NAME_LABEL: "ns"}))


@pytest.mark.parametrize("gate,want", [(True, ("from-annotation", "metadata.annotations")),
                                       (False, ("from-label", "metadata.labels"))])
def test_the_annotation_names_the_group_only_while_the_gate_is_on(gate: bool, want: tuple[str, str]) -> None:
    pod = _pod({keys.POD_GROUP_NAME: "from-label"}, {keys.POD_GROUP_NAME: "from-annotation"})
    name, path = group_name(pod, gate)
    assert (name, path.split("[")[0]) == want


def test_with_the_gate_off_an_annotated_group_without_the_label_is_no_group() -> None:
    pod = _pod({}, {keys.POD_GROUP_NAME: "g", keys.POD_GROUP_TOTAL_COUNT: "2"})
    assert group_name(pod, False)[0] == ""
    errors = WEBHOOK.validate(pod, None, _ctx(False))
    assert [e.path for e in errors] == [f"metadata.labels[{keys.POD_GROUP_NAME}]"], errors
    assert WEBHOOK.validate(pod, None, _ctx(True)) == []


def test_an_invalid_annotated_name_is_reported_on_the_annotation() -> None:
    pod = _pod({keys.POD_GROUP_NAME: "fine"},
               {keys.POD_GROUP_NAME: "Not_A_Name", keys.POD_GROUP_TOTAL_COUNT: "1"})
    fields = {e.path for e in WEBHOOK.validate(pod, None, _ctx(True))}
    assert fields == {f"metadata.annotations[{keys.POD_GROUP_NAME}]"}
