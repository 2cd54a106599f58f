"""The API resource of a registered job kind, and of an object the reconcilers write back.

The registry (``manager.jobs``) knows kinds (and the related kinds some of them read) as
plain data; the platform's :class:`ResourceRef` turns that into REST paths. This is the one
place the two meet, so no table anywhere names a kind's resource by hand.
"""

from __future__ import annotations

from collections.abc import Mapping

from pykueue.kube.resources import WORKLOADS, ResourceRef
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.registry import kind_of
from pykueue.manager.jobs.related import RelatedKind


def resource_of(integration: Integration) -> ResourceRef:
    """A job kind's resource (every kind Kueue integrates is namespaced)."""
    i = integration
    return ResourceRef(i.group, i.version, i.plural, True, i.kind)


def related_resource(kind: RelatedKind) -> ResourceRef:
    """The resource of a kind of object a job kind's rules read (``manager.jobs.related``)."""
    return ResourceRef(kind.group, kind.version, kind.plural, kind.namespaced, kind.kind)


def resource_for(obj: Mapping[str, object]) -> ResourceRef:
    """The resource of an object a lifecycle writes: a registered kind's object or a Workload."""
    kind = kind_of(obj)
    if kind is not None:
        return resource_of(kind.integration)
    if (str(obj.get("apiVersion") or ""), obj.get("kind")) == (WORKLOADS.api_version, WORKLOADS.kind):
        return WORKLOADS
    raise ValueError(f"no resource known for {obj.get('apiVersion')} {obj.get('kind')}")
