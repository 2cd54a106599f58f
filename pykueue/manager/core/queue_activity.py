"""Why a ClusterQueue admits nothing new, and the ``Active`` conditions Kueue shows for it.

:func:`cluster_queue_inactivity` reads one ClusterQueue against the flavors and admission
checks the core knows and lists every cause, as Kueue's cache does (a stopped queue that also
names a missing flavor reports both). :class:`Inactivity` renders them: the pending reason's
short detail for the workloads waiting there, and the ClusterQueue's ``Active`` condition
(the first cause's reason, every cause in the message). :func:`local_queue_active` is the
LocalQueue's condition, which follows its ClusterQueue's.

Reasons are data here; Kueue's wording appears only in the rendering methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykueue.api import keys
from pykueue.api.keys import Reason

from .objects import AdmissionCheckDef, ClusterQueueDef

# Kueue truncates condition messages to 32 KiB, ending them with " ...".
MAX_CONDITION_MESSAGE = 32 * 1024
_TRUNCATED = " ..."


@dataclass(frozen=True)
class ActiveCondition:
    """An ``Active`` condition: status, reason and message."""

    active: bool
    reason: str
    message: str


CLUSTER_QUEUE_READY = ActiveCondition(True, Reason.READY, "Can admit new workloads")
LOCAL_QUEUE_READY = ActiveCondition(True, Reason.READY, "Can submit new workloads to localQueue")
LOCAL_QUEUE_STOPPED = ActiveCondition(False, Reason.STOPPED, "LocalQueue is stopped")
_CLUSTER_QUEUE_UNUSABLE = "Can't submit new workloads to clusterQueue"


def _names(names: tuple[str, ...]) -> str:
    return ",".join(names)


@dataclass(frozen=True)
class Inactivity:
    """Every cause that keeps one ClusterQueue from admitting; empty when there is none."""

    terminating: bool = False
    stopped: bool = False
    missing_flavors: tuple[str, ...] = ()  # in the order the resource groups list them
    missing_checks: tuple[str, ...] = ()  # sorted, as every list of checks below
    inactive_checks: tuple[str, ...] = ()
    multikueue_checks: tuple[str, ...] = ()  # more than one MultiKueue check
    multikueue_per_flavor: tuple[str, ...] = ()  # MultiKueue checks limited to some flavors
    # MultiKueue and ProvisioningRequest checks together (both lists), else empty.
    multikueue_with_provisioning: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    # Kueue's snapshot leaves out the queues of a cohort cycle, but its cache (and so the
    # ClusterQueue's condition) still calls them active.
    cohort_cycle: bool = False

    def _causes(self) -> list[tuple[str, str]]:
        """(condition reason, message part) per cause, in Kueue's order."""
        causes: list[tuple[str, str]] = []
        if self.stopped:
            causes.append((Reason.STOPPED, "is stopped"))
        if self.missing_flavors:
            causes.append((Reason.FLAVOR_NOT_FOUND,
                           f"references missing ResourceFlavor(s): {_names(self.missing_flavors)}"))
        if self.missing_checks:
            causes.append((Reason.ADMISSION_CHECK_NOT_FOUND,
                           f"references missing AdmissionCheck(s): {_names(self.missing_checks)}"))
        if self.inactive_checks:
            causes.append((Reason.ADMISSION_CHECK_INACTIVE,
                           f"references inactive AdmissionCheck(s): {_names(self.inactive_checks)}"))
        if self.multikueue_checks:
            causes.append((Reason.MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS,
                           "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
                           f"found: {_names(self.multikueue_checks)}"))
        if self.multikueue_per_flavor:
            causes.append((Reason.MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR,
                           "Cannot specify MultiKueue AdmissionCheck per flavor, "
                           f"found: {_names(self.multikueue_per_flavor)}"))
        multikueue, provisioning = self.multikueue_with_provisioning
        if multikueue and provisioning:
            causes.append((Reason.MULTIKUEUE_WITH_PROVISIONING_REQUEST,
                           "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, "
                           f"found: {_names(multikueue)}, {_names(provisioning)}"))
        return causes

    @property
    def blocks_admission(self) -> bool:
        return self.terminating or self.cohort_cycle or bool(self._causes())

    def detail(self) -> str:
        """The short cause a waiting workload's reason carries: the first cause's reason and
        the objects it names (``Stopped``, ``FlavorNotFound (f)``, ``cohort cycle``)."""
        if self.terminating:
            return Reason.TERMINATING
        names = (self.missing_flavors or self.missing_checks or self.inactive_checks
                 or self.multikueue_checks or self.multikueue_per_flavor)
        causes = self._causes()
        if causes:
            reason = causes[0][0]
            return reason if reason == Reason.STOPPED or not names else f"{reason} ({', '.join(names)})"
        return "cohort cycle" if self.cohort_cycle else ""

    def condition(self) -> ActiveCondition:
        """The ClusterQueue's ``Active`` condition, in Kueue's words."""
        if self.terminating:
            return ActiveCondition(False, Reason.TERMINATING,
                                   "Can't admit new workloads; clusterQueue is terminating")
        causes = self._causes()
        if not causes:
            return CLUSTER_QUEUE_READY
        message = f"Can't admit new workloads: {', '.join(part for _, part in causes)}."
        return ActiveCondition(False, causes[0][0], truncate_message(message))


ACTIVE = Inactivity()


def truncate_message(message: str) -> str:
    if len(message) <= MAX_CONDITION_MESSAGE:
        return message
    return message[:MAX_CONDITION_MESSAGE - len(_TRUNCATED)] + _TRUNCATED


def cluster_queue_inactivity(cq: ClusterQueueDef, flavors: Mapping[str, object],
                             checks: Mapping[str, AdmissionCheckDef], *, terminating: bool = False,
                             cohort_cycle: bool = False) -> Inactivity:
    all_flavors = [f for g in cq.groups for f in g.flavors]
    missing_flavors = tuple(dict.fromkeys(f for f in all_flavors if f not in flavors))
    # A check named twice (the v1beta1 list beside the strategy) counts once, as in Kueue's map.
    rules = {rule.name: rule for rule in cq.checks}
    missing = tuple(sorted(n for n in rules if n not in checks))
    inactive = tuple(sorted(n for n in rules if n in checks and not checks[n].active))
    multikueue = tuple(sorted(n for n in rules if n in checks
                              and checks[n].controller == keys.MULTIKUEUE_CONTROLLER))
    provisioning = tuple(sorted(n for n in rules if n in checks
                                and checks[n].controller == keys.PROVISIONING_REQUEST_CONTROLLER))
    per_flavor = tuple(n for n in multikueue
                       if rules[n].on_flavors and rules[n].on_flavors != set(all_flavors))
    return Inactivity(
        terminating=terminating, stopped=cq.stop_policy != "None", missing_flavors=missing_flavors,
        missing_checks=missing, inactive_checks=inactive,
        multikueue_checks=multikueue if len(multikueue) > 1 else (),
        multikueue_per_flavor=per_flavor,
        multikueue_with_provisioning=(multikueue, provisioning) if multikueue and provisioning else ((), ()),
        cohort_cycle=cohort_cycle)


def local_queue_active(stop_policy: str, cluster_queue: ActiveCondition | None) -> ActiveCondition:
    """A LocalQueue's ``Active`` condition: stopped by its own policy, else its ClusterQueue's
    (``None``: the ClusterQueue does not exist)."""
    if stop_policy != "None":
        return LOCAL_QUEUE_STOPPED
    if cluster_queue is None:
        return ActiveCondition(False, Reason.CLUSTER_QUEUE_DOES_NOT_EXIST, _CLUSTER_QUEUE_UNUSABLE)
    if not cluster_queue.active:
        return ActiveCondition(False, Reason.CLUSTER_QUEUE_IS_INACTIVE, _CLUSTER_QUEUE_UNUSABLE)
    return LOCAL_QUEUE_READY
