"""A small world for the dashboard's views: a cohort of two queues (limits on borrowing and
lending), a topology-aware flavor over two racks, admitted and pending workloads."""

from __future__ import annotations

from typing import Any

from pykueue.manager.scenario.loader import Scenario, parse_documents
from pykueue.manager.scenario.runner import Simulation

WORLD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec:
  levels:
  - {nodeLabel: block}
  - {nodeLabel: rack}
  - {nodeLabel: kubernetes.io/hostname}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas}
spec: {nodeLabels: {type: kwok}, topologyName: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: all}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas
      resources:
      - {name: cpu, nominalQuota: '4', borrowingLimit: '2', lendingLimit: '1'}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas
      resources:
      - {name: cpu, nominalQuota: '2'}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns-a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns-b}
spec: {clusterQueue: team-b}
"""

NODES = "".join(f"""
---
apiVersion: v1
kind: Node
metadata:
  name: node-{i}
  labels: {{type: kwok, block: b0, rack: r{i // 2}, kubernetes.io/hostname: node-{i}}}
status:
  allocatable: {{cpu: '4', pods: '110'}}
  conditions:
  - {{type: Ready, status: 'True'}}
""" for i in range(4))


def workload(namespace: str, name: str, cpu: int, priority: int = 0, count: int = 1) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [{
                "name": "main", "count": count, "template": {"metadata": {"annotations": {
                    "kueue.x-k8s.io/podset-preferred-topology": "rack"}},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


def world() -> Simulation:
    """team-a runs a 5-CPU job (borrowing 1) and has two waiting; team-b runs one of 1 CPU."""
    scenario = Scenario()
    parse_documents(WORLD + NODES, "dashboard-world", scenario)
    sim = Simulation(scenario)
    for obj in scenario.objects:
        sim.apply(obj)
    sim.run()
    sim.apply(workload("ns-a", "big", 1, count=5))
    sim.run()
    sim.apply(workload("ns-b", "small", 1))
    sim.run()
    sim.advance(1)
    sim.apply(workload("ns-a", "later", 2))
    sim.advance(1)
    sim.apply(workload("ns-a", "urgent", 2, priority=10))
    sim.run()
    return sim
