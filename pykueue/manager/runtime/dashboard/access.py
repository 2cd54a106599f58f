"""Who may see what on the dashboard, in SubjectAccessReview terms.

The rules follow the visibility API's: a workload's data is visible to whoever may ``list``
``workloads.kueue.x-k8s.io`` in its namespace (so a list filtered to one namespace asks about
that namespace, an unfiltered one about the whole cluster), LocalQueues likewise with
``localqueues``, and the cluster-wide views need cluster-wide rights: the cohort tree and
ClusterQueues ``list clusterqueues``, the topology page (it names the workloads on each node)
also ``list workloads``. Every rule must pass.
"""

from __future__ import annotations

from pykueue.api.keys import GROUP
from pykueue.manager.runtime.visibility.auth import RequestAttributes

VERSION = "v1beta2"


def listing(resource: str, namespace: str = "", path: str = "") -> RequestAttributes:
    return RequestAttributes(verb="list", path=path, resource=resource, namespace=namespace,
                             group=GROUP, version=VERSION)


def cluster_views(path: str) -> tuple[RequestAttributes, ...]:
    return (listing("clusterqueues", path=path),)


def topology(path: str) -> tuple[RequestAttributes, ...]:
    return (listing("clusterqueues", path=path), listing("workloads", path=path))


def workloads(namespace: str | None, path: str) -> tuple[RequestAttributes, ...]:
    return (listing("workloads", namespace or "", path),)


def local_queues(namespace: str | None, path: str) -> tuple[RequestAttributes, ...]:
    return (listing("localqueues", namespace or "", path),)


def describe(attributes: RequestAttributes) -> str:
    """The right that was missing, for the 403 message."""
    scope = f'in namespace "{attributes.namespace}"' if attributes.namespace else "cluster-wide"
    return f"{attributes.verb} {attributes.resource}.{attributes.group} {scope}"
