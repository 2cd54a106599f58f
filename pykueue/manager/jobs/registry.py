"""Job kinds, each registered once, the way Kueue's ``RegisterIntegration`` does it.

A :class:`JobKind` is everything pykueue does with one kind of job: its integration name and
group/version/kind, its admission webhook (defaulting and validation), its lifecycle
(suspend, run, restore, finished, owner rules), the Workloads it turns into, and the API
writes its lifecycle's actions make. The webhook's routes, the job reconciler, ``simulate``'s
converter and the manifests' RBAC check all read :func:`kinds`, so a new kind is one folder
whose ``kind`` module builds its ``JobKind`` (plus, for a built-in kind, one line in
``manager.jobs.builtin``). The manifests' webhook configurations and frameworks list are
generated from (and checked against) this registry, as is the manager's RBAC.

This module holds data only: it imports no kind at import time (the built-in kinds are
loaded on first use), so the shared job rules may consult it without an import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.integrations import BY_GROUP_KIND, REPLICA_SET, Integration, group_of
from pykueue.manager.jobs.related import NO_RELATED, Related, RelatedKind, related_kinds_of

if TYPE_CHECKING:
    from pykueue.manager.jobs.admission import AdmissionPolicy, JobWebhook
    from pykueue.manager.jobs.lifecycle import WorkloadOwner

GVK = tuple[str, str, str]
"""(group, version, kind); the core group is the empty string."""

_BUILTIN = "pykueue.manager.jobs.builtin"


def job_rbac(group: str, plural: str) -> tuple[ApiAccess, ...]:
    """What a suspendable job kind's lifecycle writes: the job itself, suspended, started and
    restored by a PUT of the whole object (``Replace``)."""
    return (ApiAccess(group, plural, ("update",)),)


@dataclass(frozen=True)
class WebhookRules:
    """The operations the kind's admission webhooks are registered for (the manifests' rules)."""

    mutate: tuple[str, ...] = ("CREATE",)
    validate: tuple[str, ...] = ("CREATE", "UPDATE")


@dataclass(frozen=True)
class JobKind:
    """One job kind and everything pykueue does with it."""

    integration: Integration
    lifecycle: WorkloadOwner
    webhook: JobWebhook | None = None
    # The Workloads an object of this kind turns into (names deterministic), given the related
    # objects its rules read (``manager.jobs.related``; most kinds read none); None for a kind
    # whose objects run under another kind's Workloads (the pods of an LWS group).
    to_workloads: Callable[[JSON, Related], list[JSON]] | None = None
    # The API writes its lifecycle's actions make (each ``Replace`` a PUT of the object's
    # resource, each ``Delete`` a DELETE). The reconciler adds what follows from the kind
    # itself (an informer of it, its finalizers for the Workloads it owns): see
    # ``manager.runtime.controllers.jobs.api_access``.
    rbac: tuple[ApiAccess, ...] = ()
    webhook_rules: WebhookRules = WebhookRules()
    # Names ``pykueue explain`` accepts besides the lower-case kind and its plural.
    cli_aliases: tuple[str, ...] = ()
    # Listed in the shipped Configuration's ``integrations.frameworks`` (manifests, chart,
    # dev cluster); a kind only implied by another (the pods of an LWS group) is not.
    shipped: bool = True
    # Reconciled by the job reconciler (an informer of its objects, its lifecycle run); a kind
    # with nothing to reconcile (Kueue's no-op reconciler: a Deployment, whose pods run as
    # plain pods) only has its webhook.
    reconciled: bool = True

    @property
    def cli_names(self) -> tuple[str, ...]:
        i = self.integration
        return (i.kind.lower(), i.plural, *self.cli_aliases)

    @property
    def name(self) -> str:
        return self.integration.name

    @property
    def gvk(self) -> GVK:
        i = self.integration
        return i.group, i.version, i.kind

    def enabled(self, policy: AdmissionPolicy) -> bool:
        return policy.integration_enabled(self.name)


_KINDS: dict[str, JobKind] = {}
_loaded = False


def register(kind: JobKind) -> JobKind:
    """Add a kind; a second kind with the same name or group/kind is an error."""
    clash = _KINDS.get(kind.name) or next(
        (k for k in _KINDS.values() if k.gvk[::2] == kind.gvk[::2]), None)
    if clash is not None and clash is not kind:
        raise ValueError(f"job kind {kind.name} ({kind.integration.kind}) is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def kinds() -> tuple[JobKind, ...]:
    """Every registered kind, the built-in ones first, in registration order."""
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(_BUILTIN)
    return tuple(_KINDS.values())


def related_kinds() -> tuple[RelatedKind, ...]:
    """Every kind of object the registered kinds' rules read besides the job
    (``manager.jobs.related``), each once."""
    return related_kinds_of(k.lifecycle for k in kinds())


def kind_of(obj: Mapping[str, object]) -> JobKind | None:
    """The registered kind of an object, by its apiVersion and kind."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    wanted = (api_version, kind)
    return next((k for k in kinds() if (k.integration.api_version, k.integration.kind) == wanted), None)


def integration_for(group: str, kind: str) -> Integration | None:
    """The integration of a group/kind: a registered kind's, or one Kueue knows by name only."""
    registered = next((k.integration for k in kinds() if k.gvk[::2] == (group, kind)), None)
    return registered or BY_GROUP_KIND.get((group, kind))


def owner_integration(policy: AdmissionPolicy, api_version: str, kind: str) -> tuple[bool, bool]:
    """(known, enabled) for an owner kind: known kinds are walked through, enabled ones manage."""
    group = group_of(api_version)
    version = api_version.rpartition("/")[2]
    if f"{kind}.{version}.{group}" in policy.external_frameworks:
        return True, True
    integration = integration_for(group, kind)
    if integration is not None:
        return True, policy.integration_enabled(integration.name)
    return (group, kind) == (REPLICA_SET.group, REPLICA_SET.kind), False


def build_workloads(obj: JSON, related: Related = NO_RELATED) -> list[JSON]:
    """The Workload objects a job turns into, whether or not it names a queue (the reconcilers
    call this once they decided the job is managed; without a queue name the Workload waits).
    ``related``: the objects besides the job its kind's rules read, as the caller found them."""
    kind = kind_of(obj)
    if kind is None or kind.to_workloads is None:
        raise ObjectError(f"unsupported job kind {obj.get('apiVersion')}/{obj.get('kind')}")
    return kind.to_workloads(obj, related)


def is_job(obj: Mapping[str, object]) -> bool:
    kind = kind_of(obj)
    return kind is not None and kind.to_workloads is not None


def is_job_kind(kind: str) -> bool:
    """A registered kind (by its Kind name) whose objects turn into Workloads of their own."""
    return any(k.integration.kind == kind and k.to_workloads is not None for k in kinds())


def workloads_for(obj: JSON, related: Related = NO_RELATED) -> list[JSON]:
    """The Workloads Kueue would create for a job submitted as is (none without a queue name,
    since manageJobsWithoutQueueName is off by default)."""
    if not is_job(obj):
        raise ObjectError(f"unsupported job kind {obj.get('apiVersion')}/{obj.get('kind')}")
    if not queue_name(obj):
        return []
    return build_workloads(obj, related)


def webhook_path(verb: str, gvk: GVK) -> str:
    """controller-runtime's path (``verb`` mutate or validate): ``/mutate-batch-v1-job``; the
    empty core group gives ``/mutate--v1-pod``."""
    group, version, kind = gvk
    return f"/{verb}-{group.replace('.', '-')}-{version}-{kind.lower()}"


def shipped_frameworks() -> list[str]:
    """``integrations.frameworks`` of the shipped Configuration: every kind pykueue runs."""
    return [k.name for k in kinds() if k.shipped]


def by_cli_name(name: str) -> JobKind | None:
    """The kind a command-line ``KIND/NAME`` names (``job``, ``pytorchjobs``, ``lws``...)."""
    wanted = name.lower().split(".", 1)[0]
    return next((k for k in kinds() if k.to_workloads is not None and wanted in k.cli_names), None)


def webhooks() -> dict[GVK, JobWebhook]:
    """The admission webhook of every kind that has one, by group/version/kind."""
    return {k.gvk: k.webhook for k in kinds() if k.webhook is not None}


class Registry:
    """The lifecycles of the enabled kinds, by kind name, in a stable order."""

    def __init__(self, lifecycles: list[WorkloadOwner]) -> None:
        self._by_kind: dict[str, WorkloadOwner] = {}
        for lc in lifecycles:
            kind = lc.integration.kind
            if kind in self._by_kind:
                raise ValueError(f"two lifecycles for kind {kind}")
            self._by_kind[kind] = lc

    def __iter__(self) -> Iterator[WorkloadOwner]:
        return iter(self._by_kind.values())

    def __len__(self) -> int:
        return len(self._by_kind)

    def get(self, kind: str) -> WorkloadOwner | None:
        return self._by_kind.get(kind)

    def kinds(self) -> list[str]:
        return list(self._by_kind)


def enabled_registry(policy: AdmissionPolicy) -> Registry:
    """The lifecycles of the kinds the Configuration enables that the reconciler runs."""
    return Registry([k.lifecycle for k in kinds() if k.enabled(policy) and k.reconciled])
