"""How to find the pods of a job, per job kind (``list pods --for KIND/NAME``).

Each integration Kueue v0.19.2 knows labels its pods in its own way; the selector comes from
the job object. Kinds not listed here (and a RayJob or RayService without a cluster yet)
have no selector, which ``list pods`` reports as an unsupported kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]

KUBEFLOW_OPERATORS = {"PyTorchJob": "pytorchjob-controller", "TFJob": "tfjob-controller",
                      "XGBoostJob": "xgboostjob-controller", "PaddleJob": "paddlejob-controller",
                      "JAXJob": "jaxjob-controller"}
JOB_NAME = "training.kubeflow.org/job-name"
OPERATOR_NAME = "training.kubeflow.org/operator-name"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RAY_CLUSTER = "ray.io/cluster"
POD_GROUP = "kueue.x-k8s.io/pod-group-name"
SPARK_APP = "sparkoperator.k8s.io/app-name"


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _labels(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _labelled(key: str, value: str) -> str:
    return f"{key}={value}" if value else ""


def _ray_cluster(*path: str) -> Callable[[JSON], str]:
    def selector(obj: JSON) -> str:
        value: Any = obj
        for key in path:
            value = (value or {}).get(key) if isinstance(value, dict) else None
        return _labelled(RAY_CLUSTER, str(value or ""))
    return selector


_SELECTORS: dict[tuple[str, str], Callable[[JSON], str]] = {
    ("batch/v1", "Job"): lambda o: f"batch.kubernetes.io/job-name={_name(o)}",
    ("v1", "Pod"): lambda o: f"{POD_GROUP}={_labels(o).get(POD_GROUP, '')}",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): lambda o: f"{JOBSET_NAME}={_name(o)}",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): lambda o: f"{JOBSET_NAME}={_name(o)}",
    ("kubeflow.org/v2beta1", "MPIJob"): lambda o: f"{JOB_NAME}={_name(o)},{OPERATOR_NAME}=mpi-operator",
    ("ray.io/v1", "RayCluster"): lambda o: f"{RAY_CLUSTER}={_name(o)}",
    ("ray.io/v1", "RayJob"): _ray_cluster("status", "rayClusterName"),
    ("ray.io/v1", "RayService"): _ray_cluster("status", "activeServiceStatus", "rayClusterName"),
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): lambda o: f"{SPARK_APP}={_name(o)}",
}


def _kubeflow(operator: str) -> Callable[[JSON], str]:
    return lambda o: f"{JOB_NAME}={_name(o)},{OPERATOR_NAME}={operator}"


_SELECTORS.update({("kubeflow.org/v1", kind): _kubeflow(op) for kind, op in KUBEFLOW_OPERATORS.items()})


def pod_selector(api_version: str, kind: str, obj: JSON) -> str:
    """The label selector of the job's pods, or "" for a kind without one."""
    selector = _SELECTORS.get((api_version, kind))
    return selector(obj) if selector is not None else ""
