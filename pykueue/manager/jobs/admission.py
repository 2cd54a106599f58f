"""What an admission decision reads: the Configuration's policy, the cluster facts the
caller resolved at the edge, and the contract each job kind's webhook implements.

Purity is kept by splitting each decision in two: *facts* about the cluster (namespace
labels, does LocalQueue ``default`` exist, owner objects, the objects a kind's rules read
besides the job) are resolved by the caller and handed in as :class:`ClusterFacts`; the rules
only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.integrations import OwnerKey
from pykueue.manager.jobs.related import Related

# The integrations whose pods run through the pod integration, which each of them enables.
POD_IMPLIED_BY = frozenset({"leaderworkerset.x-k8s.io/leaderworkerset", "deployment", "statefulset"})


class AdmissionDenied(Exception):
    """A defaulter cannot decide (owner missing, chain too long): the request is denied."""


@dataclass(frozen=True)
class AdmissionPolicy:
    """The static part of the decisions: Kueue's Configuration fields that matter here."""

    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None  # None selects every namespace
    frameworks: frozenset[str] = frozenset({"batch/job"})
    external_frameworks: frozenset[str] = frozenset()  # "Kind.version.group"
    gates: FeatureGates = field(default_factory=FeatureGates)
    tas_scheduler: str = "pykueue-tas-scheduler"  # see manager.jobs.tas_routing
    label_keys_to_copy: tuple[str, ...] = ()  # integrations.labelKeysToCopy

    def integration_enabled(self, name: str) -> bool:
        if name in self.frameworks:
            return True
        # LeaderWorkerSet, Deployment and StatefulSet gate their pods through the pod
        # integration, which they enable implicitly (Kueue's ImplicitlyEnabledFrameworkNames).
        return name == "pod" and not self.frameworks.isdisjoint(POD_IMPLIED_BY)

    def explicitly_enabled(self, name: str) -> bool:
        """Named in the frameworks, not only implied by another (plain pods need ``pod``)."""
        return name in self.frameworks

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AdmissionPolicy:
        """From a Configuration dict (already defaulted or not: Kueue's defaults apply)."""
        from pykueue.api.config import Configuration

        parsed = Configuration.from_dict(dict(config)).with_defaults()
        selector = parsed.managed_jobs_namespace_selector
        integrations = parsed.integrations
        return cls(
            manage_jobs_without_queue_name=bool(parsed.manage_jobs_without_queue_name),
            managed_jobs_namespace_selector=None if selector is None else selector.to_dict(),
            frameworks=frozenset((integrations.frameworks if integrations else None) or ["batch/job"]),
            external_frameworks=frozenset((integrations.external_frameworks if integrations else None) or ()),
            gates=FeatureGates(dict(parsed.feature_gates or {})),
            tas_scheduler=(parsed.tas_scheduler.scheduler_name if parsed.tas_scheduler else None)
            or "pykueue-tas-scheduler",
            label_keys_to_copy=tuple((integrations.label_keys_to_copy if integrations else None) or ()),
        )


@dataclass(frozen=True)
class ClusterFacts:
    """What the cluster looked like for one request, resolved by the caller."""

    namespace_labels: Mapping[str, str] | None = None  # None: the Namespace could not be read
    default_local_queue: bool = False  # LocalQueue "default" exists in the object's namespace
    default_priority_class: bool = False  # WorkloadPriorityClass "default" exists
    # The LocalQueue the queue-name label names once defaulted (the label, else "default" when
    # that LocalQueue exists) belongs to a ClusterQueue that lists a MultiKueue admission
    # check (of any Active status), both known: Kueue's queue manager and cache.
    queue_uses_multikueue: bool = False
    owners: Mapping[OwnerKey, JSON | None] = field(default_factory=dict)  # None: not found
    queue_tas_only: bool = False  # a pod's LocalQueue -> ClusterQueue has only TAS flavors
    # The objects besides the job its kind's rules read (``manager.jobs.related``: a TrainJob's
    # training runtime), for validation; None: looked up and not found.
    related: Related = field(default_factory=dict)


@dataclass(frozen=True)
class AdmissionContext:
    policy: AdmissionPolicy
    facts: ClusterFacts
    operation: str = "CREATE"

    def gate(self, name: str) -> bool:
        return self.policy.gates.enabled(name)


class JobWebhook(Protocol):
    """Admission behaviour of one job kind; ``pykueue/webhook/`` is generic over it."""

    integration: str  # Kueue integration name; disabled integrations are served as no-ops

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        """Return the defaulted object (may be ``obj`` itself, mutated)."""
        ...

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        """Field errors for a create (``old`` None) or an update."""
        ...


Lookup = Callable[[OwnerKey], JSON | None]
