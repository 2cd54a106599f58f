"""The pure scheduling core: no I/O, no asyncio, no clock of its own; events in, decisions out.

Public API (see :mod:`manager.core.engine`)::

    core = QueueingCore(config_from(kueue_configuration_dict), now=t0,
                        preemption=my_preemption_hook, topology=my_tas_hook)
    core.apply(obj)                      # any ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
                                         # WorkloadPriorityClass, AdmissionCheck, Namespace, Workload
    core.delete(kind, namespace, name)
    core.finish(key); core.set_check_state(key, check, state); core.set_pods_ready(key)
    core.fire_timers(now); core.next_deadline()          # backoff ends, PodsReady timeouts
    result = core.next_cycle()           # CycleResult: Decision values, nothing applied
    core.apply_cycle(result)             # reserve quota, requeue, evict preemption targets
    changes = core.take_changes()        # CoreChanges: what to write back, releases, counts
    workload_status(core.workload(key), now)    # the Workload.status to write

Readers get read-only views (``workload``, ``all_workloads``, ``cluster_queue``, ``holders``,
``usage_of``, ``quota_tree`` ...); nothing outside the core touches its state
(``tests/unit/core/test_core_boundary.py``).

Modules: ``objects`` (dicts -> compact records), ``resources`` (pod requests,
transformations), ``quota`` (cohort-tree arithmetic), ``queues`` (pending heaps),
``flavor_assigner``, ``cycle`` (one scheduling cycle), ``hooks`` (preemption and TAS
extension points), ``engine`` (the facade) over ``cache`` (cached objects, quota tree),
``pending`` (the pending queues), ``lifecycle`` (the workload state machine) and
``cycle_apply`` (a cycle applied), ``changes`` and ``timers``; ``config`` and ``settings``
(what to schedule, and how eagerly), ``status``, ``jobs_to_workloads``.
``tas/`` is the topology placer, used through :class:`~manager.core.hooks.TopologyHook`.
"""
