"""Which model class serves which (apiVersion, kind), and the CRD facts about each kind.

Only v1beta2 is modelled; a v1beta1 document is converted first (:mod:`api.conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykueue.api.admissioncheck import AdmissionCheck
from pykueue.api.clusterqueue import ClusterQueue
from pykueue.api.cohort import Cohort
from pykueue.api.config import CONFIG_API_VERSION, Configuration
from pykueue.api.conversion import CONVERTERS, convert
from pykueue.api.fields import Model
from pykueue.api.localqueue import LocalQueue
from pykueue.api.multikueue import MultiKueueCluster, MultiKueueConfig
from pykueue.api.provisioningrequestconfig import ProvisioningRequestConfig
from pykueue.api.resource import GROUP, V1BETA1, V1BETA2, Resource
from pykueue.api.resourceflavor import ResourceFlavor
from pykueue.api.topology import Topology
from pykueue.api.workload import Workload
from pykueue.api.workloadpriorityclass import WorkloadPriorityClass

KINDS: tuple[type[Resource], ...] = (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    MultiKueueCluster,
    MultiKueueConfig,
    ProvisioningRequestConfig,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)

# Kinds we parse but serve no CRD for.
EXTRA_KINDS: tuple[type[Resource], ...] = ()


@dataclass(frozen=True)
class KindInfo:
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    namespaced: bool
    model: type[Resource]

    @property
    def scope(self) -> str:
        return "Namespaced" if self.namespaced else "Cluster"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


BY_KIND: dict[str, KindInfo] = {
    k.KIND: KindInfo(k.KIND, k.PLURAL, k.SINGULAR, k.SHORT_NAMES, k.NAMESPACED, k)
    for k in (*KINDS, *EXTRA_KINDS)
}
BY_PLURAL: dict[str, KindInfo] = {info.plural: info for info in BY_KIND.values()}

# Every kind here is served in both versions (Kueue serves v1beta1 for all of them).
# KINDS are the CRDs pykueue installs.
SERVED_VERSIONS: tuple[str, ...] = (V1BETA1, V1BETA2)

MODELS: dict[tuple[str, str], type[Model]] = {(V1BETA2, k.KIND): k for k in (*KINDS, *EXTRA_KINDS)}
MODELS[(CONFIG_API_VERSION, "Configuration")] = Configuration


def model_for(api_version: str, kind: str) -> type[Model] | None:
    return MODELS.get((api_version, kind))


def kind_info(kind: str) -> KindInfo | None:
    return BY_KIND.get(kind)


def parse(obj: dict[str, Any]) -> Model:
    """Parse a document by its apiVersion and kind; v1beta1 documents are converted first."""
    if obj.get("apiVersion") == V1BETA1 and obj.get("kind") in CONVERTERS:
        obj = convert(obj, V1BETA2)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    model = MODELS.get((str(api_version), str(kind)))
    if model is None:
        raise LookupError(f"no model for apiVersion={api_version!r} kind={kind!r}")
    return model.from_dict(obj)
