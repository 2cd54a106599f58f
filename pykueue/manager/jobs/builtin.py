"""The job kinds pykueue ships, registered in this order when the registry is first used.

A new built-in kind is its package under ``pykueue/manager/jobs/`` (whose ``kind`` module builds its
``JobKind``) and one line here.
"""

from __future__ import annotations

from pykueue.manager.jobs.appwrapper.kind import KIND as APP_WRAPPER
from pykueue.manager.jobs.batchjob.kind import KIND as JOB
from pykueue.manager.jobs.deployment.kind import KIND as DEPLOYMENT
from pykueue.manager.jobs.jaxjob.kind import KIND as JAX_JOB
from pykueue.manager.jobs.jobset.kind import KIND as JOBSET
from pykueue.manager.jobs.leaderworkerset.kind import KIND as LEADER_WORKER_SET
from pykueue.manager.jobs.mpijob.kind import KIND as MPI_JOB
from pykueue.manager.jobs.paddlejob.kind import KIND as PADDLE_JOB
from pykueue.manager.jobs.pod.kind import KIND as LWS_POD
from pykueue.manager.jobs.pytorchjob.kind import KIND as PYTORCH_JOB
from pykueue.manager.jobs.raycluster.kind import KIND as RAY_CLUSTER
from pykueue.manager.jobs.rayjob.kind import KIND as RAY_JOB
from pykueue.manager.jobs.rayservice.kind import KIND as RAY_SERVICE
from pykueue.manager.jobs.registry import register
from pykueue.manager.jobs.statefulset.kind import KIND as STATEFUL_SET
from pykueue.manager.jobs.tfjob.kind import KIND as TF_JOB
from pykueue.manager.jobs.trainjob.kind import KIND as TRAIN_JOB
from pykueue.manager.jobs.xgboostjob.kind import KIND as XGBOOST_JOB

BUILTIN = (JOB, JOBSET, PYTORCH_JOB, TF_JOB, XGBOOST_JOB, PADDLE_JOB, JAX_JOB, MPI_JOB, TRAIN_JOB,
           RAY_JOB, RAY_CLUSTER, RAY_SERVICE, APP_WRAPPER, LEADER_WORKER_SET, DEPLOYMENT, STATEFUL_SET,
           LWS_POD)
for _kind in BUILTIN:
    register(_kind)
