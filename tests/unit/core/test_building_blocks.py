"""Small pure pieces: pending-queue order, durations, backoff, requests, job naming."""

from __future__ import annotations

import pytest

from pykueue.api.quantity import Quantity
from pykueue.manager.core.config import ConfigError, RequeuingStrategy, config_from, parse_duration
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.core.queues import PendingQueue, sort_key
from pykueue.manager.core.resources import (
    Transformation,
    pod_requests,
    requests_over_limits,
    transform_requests,
)
from pykueue.manager.jobs.registry import workloads_for


def test_pending_queue_orders_by_priority_then_time_then_key() -> None:
    q = PendingQueue()
    q.push("ns/old-low", sort_key(1, 10.0, "ns/old-low"))
    q.push("ns/new-high", sort_key(5, 20.0, "ns/new-high"))
    q.push("ns/b", sort_key(1, 5.0, "ns/b"))
    q.push("ns/a", sort_key(1, 5.0, "ns/a"))
    assert [q.pop() for _ in range(5)] == ["ns/new-high", "ns/a", "ns/b", "ns/old-low", None]


def test_pending_queue_remove_and_park() -> None:
    q = PendingQueue()
    for i, k in enumerate("abc"):
        q.push(k, sort_key(0, float(i), k))
    q.remove("a")
    q.park("b", sort_key(0, 1.0, "b"))
    assert len(q) == 2 and q.active_count == 1
    assert q.pop() == "c" and q.pop() is None
    assert q.requeue_parked() == 1 and q.pop() == "b"


def test_pending_queue_heap_stays_bounded_while_parked_workloads_cycle() -> None:
    # A busy queue whose head is always live never pops the stale items that parking and
    # requeueing leave behind it; they must not pile up.
    q = PendingQueue()
    keys = [f"ns/w{i:03}" for i in range(300)]
    for i, k in enumerate(keys):
        q.push(k, sort_key(0, float(i), k), shape=1)
    for _ in range(50):
        assert q.park_shape(1) == 300
        assert q.requeue_parked() == 300
        assert q.peek() == keys[0]
    assert q.heap_size <= 2 * len(q) + 64
    assert [q.pop() for _ in range(301)] == [*keys, None]


def test_durations() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("30s") == 30 and parse_duration("500ms") == 0.5 and parse_duration(7) == 7
    with pytest.raises(ConfigError):
        parse_duration("5 minutes")


def test_backoff_doubles_and_caps() -> None:
    s = RequeuingStrategy(backoff_base_seconds=60, backoff_max_seconds=200)
    assert [s.delay(n) for n in (1, 2, 3, 4)] == [60, 120, 200, 200]


def test_config_wait_for_pods_ready() -> None:
    cfg = config_from({"waitForPodsReady": {"timeout": "10m", "requeuingStrategy": {"backoffLimitCount": 2}}})
    assert cfg.wait_for_pods_ready is not None and cfg.wait_for_pods_ready.timeout == 600
    assert cfg.requeuing.backoff_limit_count == 2
    assert config_from({"waitForPodsReady": {"enable": False}}).wait_for_pods_ready is None


def test_pod_requests_init_containers_sidecars_and_overhead() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"}}},
                           {"resources": {"limits": {"cpu": "500m"}}}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
                               {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
            "overhead": {"cpu": "100m"}}
    # max(1.5 + 0.25 sidecar, 2 + 0.25) + 0.1 overhead
    assert pod_requests(spec) == {"cpu": 2350, "memory": 1024**3}


def test_pod_requests_keep_zero_quantities() -> None:
    # Kueue assigns a flavor to a resource requested at 0, so it must stay in the requests.
    spec = {"containers": [{"resources": {"requests": {"cpu": "0", "memory": "10Mi"}}}]}
    assert pod_requests(spec) == {"cpu": 0, "memory": 10 * 1024**2}


def test_requests_over_limits_reports_each_container_as_kueue_does() -> None:
    def ps(**containers: list[dict[str, object]]) -> dict[str, object]:
        return {"template": {"spec": containers}}

    ok = ps(containers=[{"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1000m", "memory": "1"}}}])
    assert requests_over_limits([ok]) == ""
    one = ps(containers=[{"resources": {"requests": {"cpu": "2", "memory": "2Gi"},
                                        "limits": {"memory": "1Gi", "cpu": "1"}}}])
    assert requests_over_limits([one]) == (
        'spec.podSets[0].template.spec.containers[0]: Invalid value: []v1.ResourceName{"cpu", "memory"}: '
        "requests must not exceed its limits")
    init = ps(initContainers=[{"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}])
    both = requests_over_limits([ok, init, one])
    # Several errors are bracketed and comma-separated, init containers first in each pod set.
    assert both.startswith("[spec.podSets[1].template.spec.initContainers[0]: ")
    assert ", spec.podSets[2].template.spec.containers[0]: " in both and both.endswith("limits]")


def test_transformations_retain_replace_and_exclude() -> None:
    tr = {"cpu": Transformation("cpu", False, (("credits", Quantity.parse("2")),)),
          "example.com/old": Transformation("example.com/old", True,
                                            (("example.com/new", Quantity.parse("1")),))}
    # Exact requests in nano-units in, amounts out.
    out = transform_requests({"cpu": 1_500_000_000, "example.com/old": 2 * 10**9, "vendor.io/x": 10**9}, tr,
                             ("vendor.io/",))
    assert out == {"cpu": 1500, "credits": 3, "example.com/new": 2}


def test_workload_names_follow_kueue() -> None:
    assert workload_name("Job", "batch", "name", "uid") == "job-name-ef3a1"
    assert workload_name("Job", "batch", "name", "uid", "1") == "job-name-2514c"


def test_job_count_is_min_of_parallelism_and_completions() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "n", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
           "spec": {"parallelism": 5, "completions": 2, "template": {}}}
    (wl,) = workloads_for(job)
    assert wl["spec"]["podSets"][0]["count"] == 2 and wl["spec"]["queueName"] == "q"
    assert wl["metadata"]["ownerReferences"][0]["controller"] is True
