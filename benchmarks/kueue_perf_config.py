"""Kueue's scheduler-performance generator format, read into typed values and expanded into objects.

The field names are Kueue's (``cohorts`` / ``queuesSets`` / ``workloadsSets``, plus the
optional ``topology`` and ``resourceFlavor`` of the TAS variant) so a generator file from
Kueue's repository runs here unchanged and the two benchmarks stay comparable. The object
layout follows Kueue's generator too: ClusterQueue ``<queueClass>-<setIdx>-<i>-<cohort>``
in an implicit cohort, a Namespace and a LocalQueue of the same name, Workload
``<class>-<setIdx>-<n>-<templateIdx>`` created directly (no Job) with its runtime and class
as labels. Pure: parsing and object building only, so it is unit-tested without a cluster.

One extension of ours, absent from Kueue's format: a top-level ``fairSharing: true`` (a
boolean; default false) runs the cohorts under Kueue's fair sharing. The generated objects
do not change (a cohort is a fair-sharing one by the manager's Configuration, not by a
field of its own); the managers do: pykueue's gets a Configuration with ``fairSharing``
(Kueue's default preemption strategies), and Kueue's ``minimalkueue``, which takes no
Configuration, is built with fair sharing wired into its cache, controllers and scheduler
(see ``devcluster.kueue_minimal``).

A second: ``createBeforeStart: true`` on a workloads set (default false) creates that set's
workloads, with their queues, before the manager starts, as the backlog a manager meets
after a restart or an upgrade (kubernetes-sigs/kueue#14477); the other sets are created
while it runs, as in Kueue's generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.api.wire import JSON

RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
DEFAULT_FLAVOR = "rf"
TAS_CONSTRAINTS = ("required", "preferred", "balanced")
KWOK_LABEL = ("type", "kwok")  # kwok keeps nodes carrying this label Ready (no kubelet behind them)



class ConfigError(ValueError):
    """The generator file is not in Kueue's format; the message names the offending field."""


@dataclass(frozen=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: str
    pod_count: int = 1
    tas_constraint: str = ""
    tas_level: str = ""
    slice_size: int = 0


@dataclass(frozen=True)
class WorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]
    before_start: bool = False  # our ``createBeforeStart`` (see the module's docstring)


@dataclass(frozen=True)
class QueuesSet:
    class_name: str
    count: int
    nominal_quota: str
    borrowing_limit: str
    reclaim_within_cohort: str
    within_cluster_queue: str
    workloads_sets: tuple[WorkloadsSet, ...]


@dataclass(frozen=True)
class CohortSet:
    class_name: str
    count: int
    queues_sets: tuple[QueuesSet, ...]


@dataclass(frozen=True)
class TopologyLevel:
    name: str
    count: int
    node_label: str
    capacity: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Topology:
    name: str
    levels: tuple[TopologyLevel, ...]


@dataclass(frozen=True)
class Flavor:
    name: str
    node_label: str = ""
    topology_name: str = ""


@dataclass(frozen=True)
class GeneratorConfig:
    cohorts: tuple[CohortSet, ...]
    flavor: Flavor
    topology: Topology | None = None
    fair_sharing: bool = False  # our ``fairSharing: true`` (see the module's docstring)

    @property
    def workload_count(self) -> int:
        return sum(c.count * q.count * ws.count * len(ws.workloads)
                   for c in self.cohorts for q in c.queues_sets for ws in q.workloads_sets)

    @property
    def workload_classes(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.cohorts:
            for q in c.queues_sets:
                for ws in q.workloads_sets:
                    for t in ws.workloads:
                        seen[t.class_name] = None
        return list(seen)


# ---------------------------------------------------------------------------------- parsing

def _field(data: JSON, name: str, where: str, kind: type, default: Any = None) -> Any:
    value = data.get(name, default)
    if value is None:
        raise ConfigError(f"{where}: {name} is required")
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}: {name} must be a non-negative integer, not {value!r}")
    elif kind is str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{where}: {name} must be a string or number, not {value!r}")
        value = str(value)
    elif not isinstance(value, kind):
        raise ConfigError(f"{where}: {name} must be a {kind.__name__}")
    return value


def _mapping(value: Any, where: str) -> JSON:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping")
    return value


def _list(data: JSON, name: str, where: str) -> list[Any]:
    value = data.get(name)
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: {name} must be a non-empty list")
    return value


def _template(raw: Any, where: str) -> WorkloadTemplate:
    d = _mapping(raw, where)
    constraint = str(d.get("tasConstraint") or "")
    level = str(d.get("tasLevel") or "")
    if constraint and constraint not in TAS_CONSTRAINTS:
        raise ConfigError(f"{where}: tasConstraint must be one of {', '.join(TAS_CONSTRAINTS)}")
    if constraint and not level:
        raise ConfigError(f"{where}: tasConstraint needs tasLevel")
    pods = _field(d, "podCount", where, int, 1) or 1
    return WorkloadTemplate(_field(d, "className", where, str), _field(d, "runtimeMs", where, int),
                            _field(d, "priority", where, int, 0), _field(d, "request", where, str),
                            pods, constraint or ("required" if level else ""), level,
                            _field(d, "sliceSize", where, int, 0))


def _workloads_set(raw: Any, where: str) -> WorkloadsSet:
    d = _mapping(raw, where)
    templates = tuple(_template(t, f"{where}.workloads[{i}]")
                      for i, t in enumerate(_list(d, "workloads", where)))
    before = d.get("createBeforeStart", False)
    if not isinstance(before, bool):
        raise ConfigError(f"{where}: createBeforeStart must be true or false, not {before!r}")
    return WorkloadsSet(_field(d, "count", where, int), _field(d, "creationIntervalMs", where, int, 0),
                        templates, before)


def _queues_set(raw: Any, where: str) -> QueuesSet:
    d = _mapping(raw, where)
    sets = tuple(_workloads_set(s, f"{where}.workloadsSets[{i}]")
                 for i, s in enumerate(_list(d, "workloadsSets", where)))
    return QueuesSet(_field(d, "className", where, str), _field(d, "count", where, int),
                     _field(d, "nominalQuota", where, str), str(d.get("borrowingLimit") or ""),
                     str(d.get("reclaimWithinCohort") or "Never"),
                     str(d.get("withinClusterQueue") or "Never"), sets)


def _topology(raw: Any) -> Topology:
    d = _mapping(raw, "topology")
    levels = []
    for i, lv in enumerate(_list(d, "levels", "topology")):
        lvd = _mapping(lv, f"topology.levels[{i}]")
        capacity = _mapping(lvd.get("capacity") or {}, f"topology.levels[{i}].capacity")
        levels.append(TopologyLevel(_field(lvd, "name", f"topology.levels[{i}]", str),
                                    _field(lvd, "count", f"topology.levels[{i}]", int),
                                    _field(lvd, "nodeLabel", f"topology.levels[{i}]", str),
                                    tuple((str(k), str(v)) for k, v in capacity.items())))
    if not levels[-1].capacity:
        raise ConfigError("topology: the last (node) level needs a capacity")
    return Topology(_field(d, "name", "topology", str), tuple(levels))


def parse_config(data: Any) -> GeneratorConfig:
    """Validate a decoded generator document; raise ConfigError naming the bad field."""
    d = _mapping(data, "config")
    cohorts = []
    for i, raw in enumerate(_list(d, "cohorts", "config")):
        cd = _mapping(raw, f"cohorts[{i}]")
        qsets = tuple(_queues_set(q, f"cohorts[{i}].queuesSets[{j}]")
                      for j, q in enumerate(_list(cd, "queuesSets", f"cohorts[{i}]")))
        cohorts.append(CohortSet(_field(cd, "className", f"cohorts[{i}]", str),
                                 _field(cd, "count", f"cohorts[{i}]", int), qsets))
    topology = _topology(d["topology"]) if d.get("topology") else None
    rf = _mapping(d.get("resourceFlavor") or {"name": DEFAULT_FLAVOR}, "resourceFlavor")
    flavor = Flavor(str(rf.get("name") or DEFAULT_FLAVOR), str(rf.get("nodeLabel") or ""),
                    str(rf.get("topologyName") or ""))
    if topology is not None and flavor.topology_name != topology.name:
        raise ConfigError(f"resourceFlavor.topologyName must name the topology {topology.name!r}")
    fair_sharing = d.get("fairSharing", False)
    if not isinstance(fair_sharing, bool):
        raise ConfigError(f"fairSharing must be true or false, not {fair_sharing!r}")
    return GeneratorConfig(tuple(cohorts), flavor, topology, fair_sharing)


def load_config(path: str | Path) -> GeneratorConfig:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


# ---------------------------------------------------------------------------------- objects

@dataclass(frozen=True)
class QueuePlan:
    """One ClusterQueue with its Namespace/LocalQueue and the workload sets created into it."""
    name: str
    cohort: str
    queues: QueuesSet

    def objects(self, flavor: str) -> list[JSON]:
        labels = {CLASS_LABEL: self.queues.class_name, CLEANUP_LABEL: "true"}
        quota: JSON = {"name": "cpu", "nominalQuota": self.queues.nominal_quota}
        if self.queues.borrowing_limit:
            quota["borrowingLimit"] = self.queues.borrowing_limit
        cq = {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
              "metadata": {"name": self.name, "labels": labels},
              "spec": {"cohortName": self.cohort, "namespaceSelector": {},
                       "preemption": {"reclaimWithinCohort": self.queues.reclaim_within_cohort,
                                      "withinClusterQueue": self.queues.within_cluster_queue},
                       "resourceGroups": [{"coveredResources": ["cpu"],
                                           "flavors": [{"name": flavor, "resources": [quota]}]}]}}
        ns = {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": self.name, "labels": {CLEANUP_LABEL: "true"}}}
        lq = {"apiVersion": KUEUE_API, "kind": "LocalQueue",
              "metadata": {"name": self.name, "namespace": self.name, "labels": {CLEANUP_LABEL: "true"}},
              "spec": {"clusterQueue": self.name}}
        return [cq, ns, lq]

    @property
    def has_backlog(self) -> bool:
        """Whether any of its workload sets is created before the manager starts."""
        return any(s.before_start for s in self.queues.workloads_sets)


def queue_plans(config: GeneratorConfig, prefix: str = "") -> list[QueuePlan]:
    plans = []
    for cset in config.cohorts:
        for c in range(cset.count):
            cohort = f"{prefix}{cset.class_name}-{c}"
            for qi, qset in enumerate(cset.queues_sets):
                for i in range(qset.count):
                    plans.append(QueuePlan(f"{qset.class_name}-{qi}-{i}-{cohort}", cohort, qset))
    return plans


def workload_name(t: WorkloadTemplate, set_idx: int, n: int, template_idx: int) -> str:
    """The generator's name for the ``n``-th round of a workloads set's ``template_idx``-th template."""
    return f"{t.class_name}-{set_idx}-{n}-{template_idx}"


def workload_object(t: WorkloadTemplate, name: str, namespace: str, queue: str) -> JSON:
    podset: JSON = {"name": "main", "count": t.pod_count, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": t.request}}}]}}}
    if t.tas_level:
        if t.tas_constraint == "preferred":
            podset["topologyRequest"] = {"preferred": t.tas_level}
        elif t.tas_constraint == "balanced":
            podset["topologyRequest"] = {"podSetSliceRequiredTopology": t.tas_level,
                                         **({"podSetSliceSize": t.slice_size} if t.slice_size else {})}
        else:
            podset["topologyRequest"] = {"required": t.tas_level}
    return {"apiVersion": KUEUE_API, "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {RUNNING_TIME_LABEL: str(t.runtime_ms), CLASS_LABEL: t.class_name}},
            "spec": {"queueName": queue, "priority": t.priority, "podSets": [podset]}}


def flavor_object(config: GeneratorConfig) -> JSON:
    spec: JSON = {}
    if config.flavor.node_label:
        spec["nodeLabels"] = {config.flavor.node_label: "tas"}
    if config.flavor.topology_name:
        spec["topologyName"] = config.flavor.topology_name
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
            "metadata": {"name": config.flavor.name, "labels": {CLEANUP_LABEL: "true"}}, "spec": spec}


def topology_objects(config: GeneratorConfig) -> tuple[JSON, list[JSON]]:
    """The Topology object and one Node per leaf domain, labelled along the levels."""
    topo = config.topology
    if topo is None:
        raise ConfigError("the config has no topology")
    levels = [{"nodeLabel": lv.node_label} for lv in topo.levels]
    topology = {"apiVersion": KUEUE_API, "kind": "Topology",
                "metadata": {"name": topo.name, "labels": {CLEANUP_LABEL: "true"}},
                "spec": {"levels": levels}}
    nodes: list[JSON] = []
    capacity = dict(topo.levels[-1].capacity)
    capacity.setdefault("pods", "110")

    def walk(depth: int, path: list[str]) -> None:
        if depth == len(topo.levels):
            labels = {lv.node_label: value for lv, value in zip(topo.levels, path, strict=True)}
            if config.flavor.node_label:
                labels[config.flavor.node_label] = "tas"
            labels[KWOK_LABEL[0]] = KWOK_LABEL[1]
            nodes.append({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": path[-1], "labels": {**labels, CLEANUP_LABEL: "true"},
                                       "annotations": {"kwok.x-k8s.io/node": "fake"}},
                          "spec": {}, "status": {"capacity": capacity, "allocatable": capacity}})
            return
        level = topo.levels[depth]
        for i in range(level.count):
            walk(depth + 1, [*path, f"{path[-1] if path else 'tas'}-{level.name}-{i}"])

    walk(0, [])
    return topology, nodes
