"""Every job kind Kueue knows by name: its integration name in
``Configuration.integrations.frameworks``, group, version, kind and plural; which kinds
support prebuilt workloads and elastic jobs; and the owner keys the ancestor walk asks for.

Kinds pykueue runs are registered with their behaviour in ``manager.jobs.registry``; the
others are known here so that an object owned by one of them is treated as Kueue would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Integration:
    name: str  # Kueue's integration name in Configuration.integrations.frameworks
    group: str
    version: str
    kind: str
    plural: str
    # Kueue accepts a prebuilt Workload for it (``kueue.x-k8s.io/prebuilt-workload-name``).
    prebuilt: bool = False
    # Kueue runs it as an elastic job (``kueue.x-k8s.io/elastic-job``, workload slices).
    elastic: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


# Kinds Kueue integrates that pykueue does not run: an object they own is theirs to queue.
KNOWN_ELSEWHERE: tuple[Integration, ...] = (
    Integration("sparkoperator.k8s.io/sparkapplication", "sparkoperator.k8s.io", "v1beta2",
                "SparkApplication", "sparkapplications"),
)


BY_GROUP_KIND: Mapping[tuple[str, str], Integration] = {(i.group, i.kind): i for i in KNOWN_ELSEWHERE}


# A ReplicaSet is a transparent hop between a Deployment and its pods.
REPLICA_SET = Integration("", "apps", "v1", "ReplicaSet", "replicasets")


MAX_OWNER_HOPS = 10


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


OwnerKey = tuple[str, str, str, str]


class OwnerLookupNeeded(Exception):
    """The walk needs this owner object; fetch it into ``ClusterFacts.owners`` and walk again."""

    def __init__(self, key: OwnerKey) -> None:
        super().__init__(f"{key[1]} {key[2]}/{key[3]}")
        self.key = key
