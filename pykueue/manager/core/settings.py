"""The core's scheduling settings: the tuned numbers of how it schedules, in one value.

Kueue's Configuration says *what* to schedule (quotas, policies, feature gates: see
:mod:`.config`); these say how eagerly the core works at it. They were measured on Kueue's
performance shapes and belong to the core, so every process that schedules reads them from
here: the manager runs with :data:`TUNED`; ``pykueue simulate`` (and the live what-if and
explain built on it) still requeues at once (:data:`IMMEDIATE`), since a scenario's
``runUntilIdle`` does not move the clock, so a batched requeue would wait for the next
``advance``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SchedulingSettings:
    # Kueue requeues the parked workloads of a cohort tree in batches once quota is freed:
    # the first request waits this long and later ones join it (Kueue batches with 1 s).
    # 0 requeues at once.
    requeue_batch_s: float = 0.0
    # A requeue costs one evaluation per parked shape and queue of the tree, so a tree of
    # many queues is requeued less often: its batch lasts this long per ClusterQueue in it
    # (when that is more than ``requeue_batch_s``), at most ``requeue_batch_max_s``.
    requeue_batch_per_queue_s: float = 0.0
    # ... and per parked group (one per shape and queue) of the tree, counted when the batch
    # starts: a tree whose queues hold many shapes costs as many evaluations per requeue.
    requeue_batch_per_group_s: float = 0.0
    requeue_batch_max_s: float = 1.0


# Requeue at once: a freed quota is offered to the parked workloads in the same pass.
IMMEDIATE = SchedulingSettings()

# What the manager schedules with.
#
# requeue_batch_s = 0.1: with equivalence hashing a requeue costs one evaluation per shape and
# queue, so a period shorter than Kueue's 1 s is affordable, and it matters: on Kueue's
# baseline shape (runtimes of 0.2-1 s) a simulated run ends at 61 s with 0.1 s, 89 s with
# 0.3 s and 120 s with 1 s, time to admission of small workloads 9 s, 64 s and 87 s.
#
# requeue_batch_per_queue_s = 0.01: a tree of many queues waits longer, 10 ms per ClusterQueue
# up to Kueue's 1 s: on Kueue's large-scale shape (100 queues per cohort) requeues at 0.1 s
# re-evaluated every parked head of a cohort ten times a second and kept the manager CPU-bound.
#
# requeue_batch_per_group_s = 0.005: or 5 ms per parked group (one per shape and queue) when
# that is longer: on Kueue's TAS shape (nine shapes in each of six queues) requeues at 0.1 s
# kept the heaps full of heads that took freed room one cycle before a queue within its
# nominal quota reclaimed it; the scheduler chose 7,346 victims (Kueue 16), nearly all taken
# back before their admission was written. The baseline's three shapes stay at 0.1 s, where
# 1 s would cost it wall time.
TUNED = SchedulingSettings(requeue_batch_s=0.1, requeue_batch_per_queue_s=0.01,
                           requeue_batch_per_group_s=0.005, requeue_batch_max_s=1.0)
