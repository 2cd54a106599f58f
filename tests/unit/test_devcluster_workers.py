"""Worker clusters of the dev cluster: where they live, what differs, the Secret they publish."""

from __future__ import annotations

import argparse
import base64
from pathlib import Path

from pykueue.devcluster import cli, workers


def test_workers_are_found_in_index_order_and_only_while_contiguous(tmp_path: Path) -> None:
    for index in (1, 2, 4):
        root = workers.worker_root(tmp_path, index)
        root.mkdir(parents=True)
        (root / "state.json").write_text("{}")
    assert workers.existing(tmp_path) == [tmp_path / "workers" / f"worker-{i}" for i in (1, 2)]


def test_the_secret_holds_the_kubeconfig_under_the_key_a_multikueuecluster_reads() -> None:
    doc = workers.secret_manifest(2, b"apiVersion: v1\n")
    assert doc["metadata"] == {"name": "pykueue-dev-worker-2", "namespace": "pykueue-system"}
    assert base64.b64decode(doc["data"]["kubeconfig"]) == b"apiVersion: v1\n"


def test_workers_are_lighter_and_only_the_manager_has_a_short_worker_lost_timeout() -> None:
    assert workers.MANAGER.config["multiKueue"]["workerLostTimeout"] == workers.DEV_WORKER_LOST_TIMEOUT
    assert "multiKueue" not in workers.WORKER.config
    assert workers.WORKER.operators == ("training-operator", "jobset-controller")
    assert not workers.WORKER.tas_scheduler
    assert workers.MANAGER.operators is None and workers.MANAGER.tas_scheduler


def test_dev_up_takes_a_worker_count() -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["up", "--workers", "2"]).workers == 2
    assert parser.parse_args(["up"]).workers is None
