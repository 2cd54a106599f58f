"""A ClusterQueue's Active condition and its LocalQueues', in Kueue's reasons and words."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.queue_activity import (
    ActiveCondition,
    Inactivity,
    local_queue_active,
    truncate_message,
)

API = keys.API_VERSION


def _cq(name: str = "cq", checks: list[dict[str, Any]] | None = None, flavors: tuple[str, ...] = ("f1",),
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": f, "resources": [{"name": "cpu", "nominalQuota": "1"}]} for f in flavors]}],
        **({"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}), **spec}}


def _check(name: str, controller: str = "example.com/ctrl", active: bool | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": name},
                           "spec": {"controllerName": controller}}
    if active is not None:
        condition = {"type": "Active", "status": str(active), "reason": "r", "message": ""}
        obj["status"] = {"conditions": [condition]}
    return obj


def _core(*objs: dict[str, Any], kueue_checks: bool = True) -> QueueingCore:
    core = QueueingCore(CoreConfig(unreported_checks_active=not kueue_checks))
    core.apply({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f1"}})
    for obj in objs:
        core.apply(obj)
    return core


def test_a_check_no_controller_marked_active_keeps_the_queue_inactive() -> None:
    core = _core(_cq(checks=[{"name": "prov-test"}]), _check("prov-test", "ProvisioningRequestController"))
    assert core.cluster_queue_condition("cq") == ActiveCondition(
        False, "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov-test.")
    core.apply(_check("prov-test", "ProvisioningRequestController", active=True))
    assert core.cluster_queue_condition("cq") == ActiveCondition(True, "Ready", "Can admit new workloads")


def test_scenario_files_take_a_check_without_status_as_served() -> None:
    core = _core(_cq(checks=[{"name": "c"}]), _check("c"), kueue_checks=False)
    assert core.cluster_queue_condition("cq") == ActiveCondition(True, "Ready", "Can admit new workloads")


def test_every_cause_is_listed_and_the_first_is_the_reason() -> None:
    core = _core(_cq(checks=[{"name": "gone-b"}, {"name": "gone-a"}, {"name": "off"}],
                     flavors=("f1", "missing-2", "missing-1"), stopPolicy="Hold"),
                 _check("off", active=False))
    assert core.cluster_queue_condition("cq") == ActiveCondition(
        False, "Stopped",
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): missing-2,missing-1, "
        "references missing AdmissionCheck(s): gone-a,gone-b, references inactive AdmissionCheck(s): off.")
    assert core.inactive_cluster_queues()["cq"].detail == "Stopped"


def test_multikueue_checks_misused() -> None:
    mk, prov = keys.MULTIKUEUE_CONTROLLER, keys.PROVISIONING_REQUEST_CONTROLLER
    core = _core(_cq("two", checks=[{"name": "mk1"}, {"name": "mk2"}]),
                 _cq("per-flavor", checks=[{"name": "mk1", "onFlavors": ["f1"]}], flavors=("f1", "f2")),
                 _cq("with-prov", checks=[{"name": "mk1"}, {"name": "p"}]),
                 _check("mk1", mk, True), _check("mk2", mk, True), _check("p", prov, True),
                 {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f2"}})
    two, per_flavor, with_prov = (core.cluster_queue_condition(n) for n in ("two", "per-flavor", "with-prov"))
    assert two == ActiveCondition(False, "MultipleMultiKueueAdmissionChecks", "Can't admit new workloads: "
                                  "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
                                  "found: mk1,mk2.")
    assert per_flavor == ActiveCondition(
        False, "MultiKueueAdmissionCheckAppliedPerFlavor",
        "Can't admit new workloads: Cannot specify MultiKueue AdmissionCheck per flavor, found: mk1.")
    assert with_prov == ActiveCondition(False, "MultiKueueWithProvisioningRequest",
                                        "Can't admit new workloads: Cannot use both MultiKueue and "
                                        "ProvisioningRequest AdmissionChecks together, found: mk1, p.")


def test_terminating_and_cohort_cycles() -> None:
    assert Inactivity(terminating=True, stopped=True).condition() == ActiveCondition(
        False, "Terminating", "Can't admit new workloads; clusterQueue is terminating")
    # Kueue's cache calls a queue in a cohort cycle active; only its scheduler skips it.
    cycle = Inactivity(cohort_cycle=True)
    assert cycle.blocks_admission and cycle.condition().active and cycle.detail() == "cohort cycle"


def test_local_queue_follows_its_cluster_queue() -> None:
    ready = ActiveCondition(True, "Ready", "Can admit new workloads")
    assert local_queue_active("None", ready) == ActiveCondition(
        True, "Ready", "Can submit new workloads to localQueue")
    assert local_queue_active("None", ActiveCondition(False, "Stopped", "x")) == ActiveCondition(
        False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    assert local_queue_active("None", None) == ActiveCondition(
        False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    assert local_queue_active("Hold", ready) == ActiveCondition(False, "Stopped", "LocalQueue is stopped")


def test_long_messages_are_cut_as_kueue_cuts_them() -> None:
    cut = truncate_message("x" * 40_000)
    assert len(cut) == 32 * 1024 and cut.endswith("x ...")
