"""What MultiKueue does with one manager Workload, decided from a snapshot: pure, no I/O.

As Kueue v0.19.2: once the Workload holds quota in the manager (and every other admission
check is Ready), its dispatcher nominates workers of its MultiKueueConfig and a copy goes to
each nominated worker that is connected; the first worker whose copy is *admitted* there
(quota reserved and the worker's own admission checks Ready: Kueue's
MultiKueueWaitForWorkloadAdmitted, GA) wins, the other copies are deleted, the job itself is
created in the winner only, and the check turns Ready (so the manager admits the Workload).
From then on the remote job's status is mirrored back.

Dispatchers (Configuration ``multiKueue.dispatcherName``):

* ``kueue.x-k8s.io/multikueue-dispatcher-all-at-once`` (default): every connected worker;
* ``kueue.x-k8s.io/multikueue-dispatcher-incremental``: workers nominated in rounds, the
  first ``incrementalDispatcherConfig.stepSize`` (default 3) in the config's order, then, each
  time a round of 5 minutes passes without a winner, the next ones are added to those;
* any other name: an external dispatcher, whose ``status.nominatedClusterNames`` is followed.

Copies in workers that are not (or no longer) nominated are deleted. The rules that keep a
job from running in two clusters:

* the winner is remembered; a copy in any other cluster is deleted whenever it is seen,
  including in a worker that comes back after it was given up for lost;
* a Workload that no longer holds quota, is finished, or whose check went to Retry or
  Rejected has every remote copy deleted;
* a winner that stops answering keeps the Workload admitted for ``worker_lost_timeout``
  from the moment it was first seen missing, then the check goes to Retry: the manager
  evicts and requeues, and dispatches again; a winner that answers but whose copy is no
  longer admitted (evicted there, or deleted) sends the check to Retry at once, as Kueue's.

The controller in ``manager.runtime.controllers.multikueue`` gathers the snapshot
(:class:`WorkloadView`) and carries out the :class:`Decision`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import aggregate, invalid
from pykueue.manager.core.config import ConfigError
from pykueue.manager.core.features import gate_enabled

READY, PENDING, RETRY, REJECTED = "Ready", "Pending", "Retry", "Rejected"
LOST_MESSAGE = "Reserving remote lost"
ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
INCREMENTAL_ROUND_S = 300.0  # Kueue's incrementalDispatcherRoundTimeout
DEFAULT_STEP = 3


def dispatcher_settings(config: Mapping[str, Any]) -> tuple[str, int]:
    """(dispatcherName, incremental step size) from the Configuration's ``multiKueue``, with
    Kueue v0.19.2's defaults and checks (a ConfigError names what is wrong). The step size
    is honoured under the MultiKueueIncrementalDispatcherConfig gate (beta, on)."""
    section = config.get("multiKueue") or {}
    name = str(section.get("dispatcherName") or ALL_AT_ONCE)
    idc = section.get("incrementalDispatcherConfig")
    errors = []
    step = DEFAULT_STEP
    if isinstance(idc, Mapping):
        path = "multiKueue.incrementalDispatcherConfig"
        if name != INCREMENTAL:
            errors.append(invalid(path, idc, "incrementalDispatcherConfig is only valid when dispatcherName "
                                             "is set to the incremental dispatcher"))
        raw = idc.get("stepSize")
        if raw is not None:
            if not isinstance(raw, int) or raw < 1:
                errors.append(invalid(f"{path}.stepSize", raw, "must be greater than or equal to 1"))
            elif gate_enabled(config.get("featureGates"), "MultiKueueIncrementalDispatcherConfig"):
                step = raw
    if errors:
        raise ConfigError(aggregate(errors))
    return name, step


GONE_MESSAGE = "Admitting remote no longer exists"


def evicted_message(cluster: str) -> str:
    return f'Workload evicted on worker cluster: "{cluster}", resetting for re-admission. Previously: "Ready"'


def nomination_order(clusters: Sequence[str], config: Mapping[str, Any]) -> tuple[str, ...]:
    """The order the incremental dispatcher nominates in: the MultiKueueConfig's, or by name
    with the MultiKueueIncrementalDispatcherRespectConfigOrder gate (beta, on) off."""
    if gate_enabled(config.get("featureGates"), "MultiKueueIncrementalDispatcherRespectConfigOrder"):
        return tuple(clusters)
    return tuple(sorted(clusters))


def admitted_message(cluster: str) -> str:
    return f'The workload was admitted on "{cluster}"'


def _condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


def condition_is_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    cond = _condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


@dataclass(frozen=True)
class Remote:
    """What one reachable worker holds of the Workload: its copy and the job's copy."""

    workload: Mapping[str, Any] | None = None
    job: Mapping[str, Any] | None = None

    @property
    def present(self) -> bool:
        return self.workload is not None or self.job is not None

    @property
    def reserving(self) -> bool:
        return condition_is_true(self.workload, keys.WorkloadCondition.QUOTA_RESERVED) and not self.finished

    @property
    def admitted(self) -> bool:
        """Admitted in the worker (quota reserved and its checks Ready): a winner."""
        return condition_is_true(self.workload, keys.WorkloadCondition.ADMITTED) and not self.finished

    @property
    def finished(self) -> bool:
        return condition_is_true(self.workload, keys.WorkloadCondition.FINISHED)


@dataclass(frozen=True)
class WorkloadView:
    reserved: bool
    """The manager's Workload holds quota (QuotaReserved)."""
    finished: bool
    check_state: str
    other_checks_ready: bool
    clusters: tuple[str, ...]
    """The config's workers that answer, in the config's order."""
    remotes: Mapping[str, Remote]
    """What each of those holds (a missing entry: nothing)."""
    now: float
    worker_lost_timeout: float
    winner: str | None = None
    """The worker remembered as the one that reserved it."""
    missing_since: float | None = None
    """When the winner (or its admission) was first seen missing."""
    dispatcher: str = ALL_AT_ONCE
    configured: tuple[str, ...] = ()
    """All the config's workers, answering or not, in the config's order (incremental)."""
    nominated: tuple[str, ...] = ()
    """The workers nominated so far (the incremental dispatcher's; an external one's
    ``status.nominatedClusterNames``)."""
    round_started: float | None = None
    """When the incremental dispatcher's current round began."""
    step: int = DEFAULT_STEP


@dataclass(frozen=True)
class Decision:
    delete_in: tuple[str, ...] = ()
    """Workers whose copies (job and Workload) go."""
    create_workload_in: tuple[str, ...] = ()
    create_job_in: str | None = None
    mirror_from: str | None = None
    """The worker whose job status is copied to the manager's job."""
    check: tuple[str, str] | None = None
    """(state, message) to write into the manager Workload's check."""
    finish: tuple[str, str] | None = None
    """(reason, message) of the remote Finished condition, to copy to the manager Workload."""
    winner: str | None = None
    missing_since: float | None = None
    wait_s: float | None = None
    """Look again after this long at the latest (the lost-worker clock, a dispatch round)."""
    nominated: tuple[str, ...] = ()
    """The workers nominated now (to remember for the next pass)."""
    round_started: float | None = None
    notes: tuple[str, ...] = field(default=())


def _present(view: WorkloadView, keep: str | None = None) -> tuple[str, ...]:
    return tuple(c for c in view.clusters if c != keep and view.remotes.get(c, Remote()).present)


def decide(view: WorkloadView) -> Decision:
    if view.finished or not view.reserved or view.check_state in (RETRY, REJECTED):
        return Decision(delete_in=_present(view))
    remotes = {c: view.remotes.get(c, Remote()) for c in view.clusters}
    done = next((c for c, r in remotes.items() if r.finished), None)
    if done is not None:
        cond = _condition(remotes[done].workload, keys.WorkloadCondition.FINISHED) or {}
        return Decision(mirror_from=done if remotes[done].job is not None else None,
                        finish=(str(cond.get("reason") or keys.Reason.SUCCEEDED),
                                str(cond.get("message") or "")),
                        winner=done)
    admitted = [c for c, r in remotes.items() if r.admitted]
    if admitted:
        winner = view.winner if view.winner in admitted else admitted[0]
        remote = remotes[winner]
        check = None
        if view.check_state != READY:
            check = (READY, admitted_message(winner))
        return Decision(delete_in=_present(view, keep=winner),
                        create_job_in=winner if remote.job is None else None,
                        mirror_from=winner if remote.job is not None else None,
                        check=check, winner=winner)
    if view.check_state == READY and view.winner is not None and view.winner in view.clusters:
        # The winner answers but its copy is no longer admitted (evicted there, or gone): as
        # Kueue, the check goes to Retry at once, and the manager requeues the Workload.
        copy_ = remotes[view.winner].workload
        message = (evicted_message(view.winner) if condition_is_true(copy_, keys.WorkloadCondition.EVICTED)
                   else GONE_MESSAGE)
        return Decision(delete_in=_present(view), check=(RETRY, message))
    if view.check_state == READY:
        # Admitted through a worker that no longer answers: wait, then give up on it.
        since = view.missing_since if view.missing_since is not None else view.now
        left = view.worker_lost_timeout - (view.now - since)
        if left > 0:
            return Decision(winner=view.winner, missing_since=since, wait_s=left)
        return Decision(delete_in=_present(view), check=(RETRY, LOST_MESSAGE))
    if not view.other_checks_ready:
        return Decision(nominated=view.nominated, round_started=view.round_started)
    nominated, round_started, wait = nominate(view)
    return Decision(create_workload_in=tuple(c for c in view.clusters
                                             if c in nominated and remotes[c].workload is None),
                    delete_in=tuple(c for c in view.clusters if remotes[c].present and (
                        c not in nominated or remotes[c].workload is None)),
                    nominated=nominated, round_started=round_started, wait_s=wait)


def nominate(view: WorkloadView) -> tuple[tuple[str, ...], float | None, float | None]:
    """The workers the dispatcher nominates now, when its round began, and how long until the
    next round (incremental only)."""
    if view.dispatcher == ALL_AT_ONCE:
        return view.clusters, None, None
    if view.dispatcher != INCREMENTAL:
        return view.nominated, None, None  # an external dispatcher's choice
    if view.round_started is not None and view.now - view.round_started <= INCREMENTAL_ROUND_S:
        return view.nominated, view.round_started, INCREMENTAL_ROUND_S - (view.now - view.round_started)
    left = [c for c in view.configured or view.clusters if c not in view.nominated]
    if not left:
        return view.nominated, view.round_started, None  # no more workers to nominate
    return (*view.nominated, *left[:max(1, view.step)]), view.now, INCREMENTAL_ROUND_S


def orphaned(remote_workload: Mapping[str, Any], local_keys: set[str]) -> bool:
    """A remote copy whose manager Workload is gone (deleted in the manager, or never ours)."""
    m = remote_workload.get("metadata") or {}
    return f"{m.get('namespace')}/{m.get('name')}" not in local_keys
