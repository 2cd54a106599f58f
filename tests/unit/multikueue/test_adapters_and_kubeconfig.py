"""What travels to a worker (per-kind adapters) and which kubeconfigs are accepted."""

from __future__ import annotations

import pytest
import yaml

from pykueue.api import keys
from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE as JOB
from pykueue.manager.jobs.lifecycle import managed_by_multikueue
from pykueue.manager.jobs.multikueue.adapter import remote_workload
from pykueue.manager.jobs.multikueue.kubeconfig import BadKubeconfig, parse_kubeconfig
from pykueue.manager.jobs.prebuilt import prebuilt_workload_name
from pykueue.manager.jobs.pytorchjob.lifecycle import LIFECYCLE as PYTORCH

GENERATED = {"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j",
             "controller-uid": "u1", "job-name": "j"}


def _job() -> dict[str, object]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                         "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"suspend": True, "managedBy": keys.MULTIKUEUE_CONTROLLER,
                     "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                     "template": {"metadata": {"labels": {**GENERATED, "app": "x"}}, "spec": {}}},
            "status": {"active": 1}}


JOB_SOURCE = "kueue v0.19.2 job_multikueue_adapter_test.go TestMultiKueueAdapter"


@pytest.mark.parametrize(
    ("identifier_annotations", "where"),
    [
        pytest.param(False, "labels", id=f'{JOB_SOURCE} "sync creates missing remote job"'),
        pytest.param(True, "annotations", id=f'{JOB_SOURCE} "sync creates missing remote job, '
                                              'WorkloadIdentifierAnnotations enabled"'),
    ],
)
def test_a_job_copy_drops_managed_by_the_generated_selector_and_what_the_api_server_owns(
    identifier_annotations: bool, where: str
) -> None:
    copy = JOB.multikueue.remote_copy(_job(), "wl-name", "origin-a",
                                      identifier_annotations=identifier_annotations)
    assert "managedBy" not in copy["spec"] and "selector" not in copy["spec"]
    assert copy["spec"]["suspend"] is True
    assert copy["spec"]["template"]["metadata"]["labels"] == {"app": "x"}
    labels = {keys.QUEUE_NAME: "lq", keys.MULTIKUEUE_ORIGIN: "origin-a"}
    want = {"name": "j", "namespace": "ns", "labels": labels}
    want.setdefault(where, {})[keys.PREBUILT_WORKLOAD_NAME] = "wl-name"  # type: ignore[index]
    assert copy["metadata"] == want
    assert "status" not in copy
    assert prebuilt_workload_name(copy, identifier_annotations) == "wl-name"


def test_only_a_job_managed_by_multikueue_is_left_alone_in_the_manager() -> None:
    job = _job()
    assert managed_by_multikueue(JOB, job)
    job["spec"].pop("managedBy")  # type: ignore[attr-defined]
    assert not managed_by_multikueue(JOB, job)


def test_a_pytorchjob_copy_clears_run_policy_managed_by() -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"runPolicy": {"suspend": True, "managedBy": keys.MULTIKUEUE_CONTROLLER},
                    "pytorchReplicaSpecs": {}}}
    assert managed_by_multikueue(PYTORCH, job)
    copy = PYTORCH.multikueue.remote_copy(job, "wl", "o")
    assert copy["spec"]["runPolicy"] == {"suspend": True}


def test_status_is_mirrored_only_when_it_differs() -> None:
    local, remote = _job(), {**_job(), "status": {"succeeded": 1}}
    mirrored = JOB.multikueue.with_remote_status(local, remote)
    assert mirrored is not None and mirrored["status"] == {"succeeded": 1}
    assert mirrored["metadata"]["resourceVersion"] == "7"  # written over the copy it was read from
    assert JOB.multikueue.with_remote_status(mirrored, remote) is None


def test_a_workload_copy_keeps_name_and_spec_and_drops_the_job_uid_label() -> None:
    local = {"apiVersion": keys.API_VERSION, "kind": "Workload",
             "metadata": {"name": "wl", "namespace": "ns", "uid": "x", "labels": {keys.JOB_UID: "u1"},
                          "ownerReferences": [{"kind": "Job", "name": "j"}]},
             "spec": {"queueName": "lq", "podSets": []}, "status": {"conditions": []}}
    copy = remote_workload(local, "origin-a")
    assert copy == {"apiVersion": keys.API_VERSION, "kind": "Workload",
                    "metadata": {"name": "wl", "namespace": "ns",
                                 "labels": {keys.MULTIKUEUE_ORIGIN: "origin-a"}},
                    "spec": {"queueName": "lq", "podSets": []}}


def _kubeconfig(user: dict[str, object], cluster: dict[str, object] | None = None) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://127.0.0.1:6443",
                                                          "certificate-authority-data": "Q0E="}}],
        "users": [{"name": "u", "user": user}]})


def test_an_inline_kubeconfig_is_accepted() -> None:
    config = parse_kubeconfig(_kubeconfig({"token": "t"}))
    assert config["current-context"] == "c"


@pytest.mark.parametrize(("user", "cluster", "why"), [
    ({"exec": {"command": "sh"}}, None, "exec is not allowed"),
    ({"auth-provider": {"name": "gcp"}}, None, "auth-provider is not allowed"),
    ({"tokenFile": "/etc/token"}, None, "tokenFile (a file) is not allowed"),
    ({"client-key": "/k"}, None, "client-key (a file) is not allowed"),
    ({}, {"server": "https://x", "certificate-authority": "/ca"}, "certificate-authority"),
    ({}, {"certificate-authority-data": "Q0E="}, "has no server"),
])
def test_kubeconfigs_that_run_programs_or_read_files_are_refused(user: dict[str, object],
                                                                 cluster: dict[str, object] | None,
                                                                 why: str) -> None:
    with pytest.raises(BadKubeconfig, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_kubeconfig(_kubeconfig(user, cluster))


@pytest.mark.parametrize("raw", ["", "not: [valid", "- a list"])
def test_garbage_is_a_bad_kubeconfig_not_a_crash(raw: str) -> None:
    with pytest.raises(BadKubeconfig):
        parse_kubeconfig(raw)
