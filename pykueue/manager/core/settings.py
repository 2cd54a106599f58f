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
    # Kueue pops one head per ClusterQueue per cycle, so a deep queue drains at one admission
    # a cycle however much of its quota is free (kubernetes-sigs/kueue#14477). Once a queue's
    # head is admitted, up to this many of its next workloads follow in the same cycle, each
    # admitted only if it fits within the queue's nominal quota without preemption (see
    # ``Scheduler.schedule``); 0: one head per queue and cycle, as Kueue.
    followers_per_cycle: int = 0
    # A reservation that a higher-priority workload of its ClusterQueue, or a reclaiming
    # sibling, could take back stays unpublished (its status write waits) this long after it
    # was made: a preemption decided meanwhile withdraws it unseen instead of evicting a job
    # that has just been started (see ``QueueingCore.publish_wait``). 0: written at once.
    publish_settle_s: float = 0.0


# followers_per_cycle: bounds a cycle's extra work (and writes) per queue; a queue of 536
#   pending workloads within its quota is admitted in 34 cycles instead of 536. Followers
#   change no outcome of the scenarios in tests/scenarios (only how many cycles it takes), so
#   the simulation has them too.
FOLLOWERS_PER_CYCLE = 15

# Requeue at once: a freed quota is offered to the parked workloads in the same pass.
IMMEDIATE = SchedulingSettings(followers_per_cycle=FOLLOWERS_PER_CYCLE)

# What the manager schedules with (figures: benchmarks/README.md, History).
# requeue_batch_s: with equivalence hashing a requeue costs one evaluation per shape and
#   queue, so a period shorter than Kueue's 1 s is affordable; on Kueue's baseline shape a
#   simulated run ends at 61 s with 0.1 s against 120 s with 1 s.
# requeue_batch_per_queue_s: a tree of many queues (Kueue's large-scale shape) re-evaluated at
#   0.1 s kept the manager CPU-bound.
# requeue_batch_per_group_s: with many shapes per queue (Kueue's TAS shape), 0.1 s let heads
#   take freed room a cycle before a queue within its nominal quota reclaimed it (7,346
#   victims chosen, Kueue 16).
# publish_settle_s: off (0). On Kueue's shapes a large workload is created every 1.2 s and
#   runs 1 s, so the room it frees is filled by lower-priority ones that the next large one
#   preempts within about 0.1-0.2 s. Held 0.3 s, those reservations are taken back unseen:
#   quick's evictions fell from 64-82 / 14-68 to 6-17 / 10-16 (50/100 / 300/500). But on the
#   TAS shape the held reservations became the preferred victims of every preemption: 116
#   evictions against 58 without, manager CPU 124 s against 95 s, wall 393 s against 337 s
#   (benchmarks/README.md, History). Kept measurable (benchmarks/eviction_latency.py).
TUNED = SchedulingSettings(requeue_batch_s=0.1, requeue_batch_per_queue_s=0.01,
                           requeue_batch_per_group_s=0.005, requeue_batch_max_s=1.0,
                           followers_per_cycle=FOLLOWERS_PER_CYCLE)
