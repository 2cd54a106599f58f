"""Controllers that connect the pure queueing core to kube-apiserver.

``sources`` feeds informer events into the core, ``jobs`` turns jobs into Workloads and
starts/stops them as admission decides, ``scheduling`` runs the core's cycles and writes
Workload status, ``queue_status`` writes ClusterQueue/LocalQueue status, and ``manager``
composes them. Decisions stay in ``manager.core``; these modules only move data.
"""
