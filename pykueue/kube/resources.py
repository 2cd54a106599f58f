"""Which API resource an informer or a write addresses, and the REST paths that follow from it.

Kept as plain data (group, version, plural, scope) so CRDs and core kinds are handled the
same way, as raw JSON, without the generated model classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from pykueue.api import keys
from pykueue.api.access import EVERY_NAMESPACE, ApiAccess


@dataclass(frozen=True)
class ResourceRef:
    group: str
    """Empty string for the core ("legacy") group."""
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def prefix(self) -> str:
        return f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/watch/create path; ``namespace=None`` on a namespaced kind means all namespaces."""
        if self.namespaced and namespace:
            return f"{self.prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{self.prefix}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None, subresource: str | None = None) -> str:
        if self.namespaced and not namespace:
            raise ValueError(f"{self.plural} is namespaced: a namespace is required for {name!r}")
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path

    def access(self, *verbs: str, subresource: str = "", names: tuple[str, ...] = (),
               namespace: str = EVERY_NAMESPACE, why: str = "") -> ApiAccess:
        """The RBAC row of using ``verbs`` on this resource (or its ``subresource``)."""
        resource = f"{self.plural}/{subresource}" if subresource else self.plural
        return ApiAccess(self.group, resource, verbs, names, namespace, why)


CONFIG_MAPS = ResourceRef("", "v1", "configmaps", True, "ConfigMap")
PODS = ResourceRef("", "v1", "pods", True, "Pod")
NODES = ResourceRef("", "v1", "nodes", False, "Node")
NAMESPACES = ResourceRef("", "v1", "namespaces", False, "Namespace")
EVENTS = ResourceRef("events.k8s.io", "v1", "events", True, "Event")
LEASES = ResourceRef("coordination.k8s.io", "v1", "leases", True, "Lease")
JOBS = ResourceRef("batch", "v1", "jobs", True, "Job")
WORKLOADS = ResourceRef(keys.GROUP, keys.V1BETA2, "workloads", True, "Workload")
LOCAL_QUEUES = ResourceRef(keys.GROUP, keys.V1BETA2, "localqueues", True, "LocalQueue")
CLUSTER_QUEUES = ResourceRef(keys.GROUP, keys.V1BETA2, "clusterqueues", False, "ClusterQueue")
RESOURCE_FLAVORS = ResourceRef(keys.GROUP, keys.V1BETA2, "resourceflavors", False, "ResourceFlavor")
COHORTS = ResourceRef(keys.GROUP, keys.V1BETA2, "cohorts", False, "Cohort")
ADMISSION_CHECKS = ResourceRef(keys.GROUP, keys.V1BETA2, "admissionchecks", False, "AdmissionCheck")
TOPOLOGIES = ResourceRef(keys.GROUP, keys.V1BETA2, "topologies", False, "Topology")
WORKLOAD_PRIORITY_CLASSES = ResourceRef(keys.GROUP, keys.V1BETA2, "workloadpriorityclasses", False,
                                        "WorkloadPriorityClass")
MULTIKUEUE_CLUSTERS = ResourceRef(keys.GROUP, keys.V1BETA2, "multikueueclusters", False, "MultiKueueCluster")
MULTIKUEUE_CONFIGS = ResourceRef(keys.GROUP, keys.V1BETA2, "multikueueconfigs", False, "MultiKueueConfig")
SECRETS = ResourceRef("", "v1", "secrets", True, "Secret")
POD_TEMPLATES = ResourceRef("", "v1", "podtemplates", True, "PodTemplate")
PROVISIONING_REQUESTS = ResourceRef("autoscaling.x-k8s.io", "v1", "provisioningrequests", True,
                                    "ProvisioningRequest")
PROVISIONING_REQUEST_CONFIGS = ResourceRef(keys.GROUP, keys.V1BETA2, "provisioningrequestconfigs", False,
                                           "ProvisioningRequestConfig")


def object_key(obj: dict[str, object]) -> str:
    """The store key client-go uses: ``namespace/name``, or ``name`` for cluster-scoped objects."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise ValueError("object without metadata")
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name
