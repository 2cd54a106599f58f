"""Which admission rules serve which job kind: (group, version, kind) -> JobWebhook.

The webhook server routes by this table and nothing else, so adding a job kind means one
module with a ``WEBHOOK`` and one line here. Paths follow controller-runtime's naming
(``/mutate-<group with dots as dashes>-<version>-<kind>``), as in Kueue and in
``manifests/06-webhooks.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping

from manager.jobs.admission import JobWebhook
from manager.jobs.batchjob.webhook import WEBHOOK as JOB
from manager.jobs.leaderworkerset.webhook import WEBHOOK as LWS
from manager.jobs.pod.webhook import WEBHOOK as POD
from manager.jobs.pytorchjob.webhook import WEBHOOK as PYTORCHJOB

GVK = tuple[str, str, str]

JOB_WEBHOOKS: Mapping[GVK, JobWebhook] = {
    ("batch", "v1", "Job"): JOB,
    ("kubeflow.org", "v1", "PyTorchJob"): PYTORCHJOB,
    ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"): LWS,
    ("", "v1", "Pod"): POD,
}


def path_for(verb: str, gvk: GVK) -> str:
    """``verb`` is ``mutate`` or ``validate``; the empty core group gives ``/mutate--v1-pod``."""
    group, version, kind = gvk
    return f"/{verb}-{group.replace('.', '-')}-{version}-{kind.lower()}"
