"""The job kinds pykueue ships, registered in this order when the registry is first used.

A new built-in kind is its package under ``manager/jobs/`` (whose ``kind`` module builds its
``JobKind``) and one line here.
"""

from __future__ import annotations

from manager.jobs.batchjob.kind import KIND as JOB
from manager.jobs.leaderworkerset.kind import KIND as LEADER_WORKER_SET
from manager.jobs.pod.kind import KIND as LWS_POD
from manager.jobs.pytorchjob.kind import KIND as PYTORCH_JOB
from manager.jobs.registry import register

BUILTIN = (JOB, PYTORCH_JOB, LEADER_WORKER_SET, LWS_POD)
for _kind in BUILTIN:
    register(_kind)
