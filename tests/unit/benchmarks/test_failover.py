"""The failover benchmark's figures and the objects it creates."""

from __future__ import annotations

import pytest

from benchmarks.failover import NAME, job, main, queue_objects, summarize
from pykueue.api import keys


def test_summary_takes_the_medians_of_the_rounds() -> None:
    figures = summarize([16.0, 15.2, 17.9], [17.0, 16.1, 30.0])
    assert figures["rounds"] == 3
    assert figures["lease_median_s"] == 16.0 and figures["admit_median_s"] == 17.0
    assert figures["lease_max_s"] == 17.9 and figures["admit_max_s"] == 30.0


def test_the_job_goes_to_the_benchmark_queue_and_finishes_on_its_own() -> None:
    made = job(4)
    assert made["metadata"]["labels"][keys.QUEUE_NAME] == NAME
    assert made["metadata"]["name"] == "after-kill-4"
    annotations = made["spec"]["template"]["metadata"]["annotations"]
    assert annotations["pod-complete.stage.kwok.x-k8s.io/delay"] == "1s"
    kinds = {obj["kind"]: obj for _, obj in queue_objects()}
    assert kinds["LocalQueue"]["spec"]["clusterQueue"] == kinds["ClusterQueue"]["metadata"]["name"]
    assert kinds["ClusterQueue"]["spec"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": kinds["Namespace"]["metadata"]["name"]}


def test_at_least_one_round() -> None:
    with pytest.raises(SystemExit):
        main(["--rounds", "0"])
