"""Preemption policies for the scheduling core (Kueue's ``pkg/scheduler/preemption``).

:class:`ClassicalPreemption` implements :class:`~manager.core.hooks.PreemptionHook` with
the ClusterQueue policies ``withinClusterQueue``, ``reclaimWithinCohort`` and
``borrowWithinCohort``. It is pure: every answer is computed from the cycle's snapshot.
"""

from .classical import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ClassicalPreemption,
)

__all__ = [
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "ClassicalPreemption",
]
