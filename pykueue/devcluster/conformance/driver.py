"""Playing one scenario against the API server with real Kueue running.

Kueue must see the scenario's initial objects all at once, as ``simulate`` applies them
before its first scheduling cycle; but creating them needs Kueue up (its webhooks default
and validate, and its job controller turns Jobs into Workloads). So the set-up runs with
every ClusterQueue on ``stopPolicy: Hold`` (nothing is admitted), then Kueue is stopped,
and it starts again over the finished set-up with the queues given their own stop policy
back (before the restart, or after it once Kueue is idle: see ``_start_then_release``).
Steps then run against the live Kueue, each followed by a wait until it is idle.

A scenario is checked for what the harness cannot express before anything is created, so
a skipped scenario costs no cluster time.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import keys
from pykueue.devcluster.conformance import objects
from pykueue.devcluster.conformance.idle import wait_idle
from pykueue.devcluster.conformance.kueue_config import scenario_sections
from pykueue.devcluster.conformance.kueue_process import KueueProcess
from pykueue.devcluster.conformance.objects import KINDS, Request, Unsupported
from pykueue.devcluster.health import StartupError, wait_for
from pykueue.kube import resources
from pykueue.kube.blocking import BlockingClient
from pykueue.kube.client import ApiError
from pykueue.manager.core.config import ConfigError, parse_duration
from pykueue.manager.scenario.loader import Scenario

MERGE_PATCH = "application/merge-patch+json"
PODS_READY_AFTER = "pykueue.dev/pods-ready-after"
# Longest ``advance`` the harness waits out in real time.
MAX_ADVANCE_S = 30.0
JOB_WORKLOAD_DEADLINE_S = 30.0
PROVISIONING_WAIT_S = 30.0
PROVISIONING_REQUESTS = resources.ResourceRef(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", True, "ProvisioningRequest"
)


@dataclass
class Outcome:
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    # (kind, namespace or "", name) -> the UID the API server gave the object
    uids: dict[tuple[str, str, str], str] = field(default_factory=dict)


def _duration(value: Any) -> float | None:
    try:
        return parse_duration(value)
    except (ConfigError, ValueError, TypeError):
        return None


def _step_objects(step: dict[str, Any]) -> list[dict[str, Any]]:
    arg = step.get("apply")
    return list(arg) if isinstance(arg, list) else [arg] if isinstance(arg, dict) else []


def unsupported(scenario: Scenario, served: dict[str, str], max_advance_s: float) -> list[str]:
    """Why the harness cannot run ``scenario`` faithfully (empty: it can)."""
    reasons = list(scenario_sections(scenario.config)[1])
    everything = list(scenario.objects) + [o for s in scenario.steps for o in _step_objects(s)]
    for obj in everything:
        try:
            objects.request(obj, served)
        except Unsupported as exc:
            reasons.append(str(exc))
    provisioning = objects.provisioning_checks(everything)
    for step in scenario.steps:
        check = step.get("checkState")
        if (
            isinstance(check, dict)
            and check.get("check") in provisioning
            and str(check.get("state")) not in objects.PROVISIONING_VERDICTS
        ):
            reasons.append(f"checkState {check.get('state')} on a ProvisioningRequest check")
    total_advance = 0.0
    for step in scenario.steps:
        if "advance" in step:
            seconds = _duration(step["advance"])
            if seconds is None or seconds > max_advance_s:
                reasons.append(
                    f"advance {step['advance']} (longer than {max_advance_s:.0f}s of real waiting)"
                )
            else:
                total_advance += seconds
    if "waitForPodsReady" in scenario_sections(scenario.config)[0]:
        for obj in everything:
            after = ((obj.get("metadata") or {}).get("annotations") or {}).get(PODS_READY_AFTER)
            if obj.get("kind") != "Workload":
                if obj.get("kind") in objects.QUEUED_KINDS:
                    reasons.append(f"pods readiness of a {obj.get('kind')} under waitForPodsReady")
                continue
            if after is None or str(after) == "never":
                continue
            seconds = _duration(after)
            # Ready only after the scenario's simulated time is over is the same as never.
            if seconds is None or 0 < seconds <= total_advance:
                reasons.append(f"{PODS_READY_AFTER}: {after} (pods getting ready mid-scenario)")
    return sorted(set(reasons))


class ScenarioRun:
    def __init__(
        self,
        client: BlockingClient,
        kueue: KueueProcess,
        served: dict[str, str],
        max_advance_s: float = MAX_ADVANCE_S,
    ) -> None:
        self.client = client
        self.kueue = kueue
        self.served = served
        self.max_advance_s = max_advance_s
        self.outcome = Outcome()
        self._never_ready: set[str] = set()
        # Whether the scenario configures waitForPodsReady: only then can pods stay unready.
        self._pods_ready = False
        self._last_queued_second = 0.0
        self._provisioning: set[str] = set()

    # -- the whole run ---------------------------------------------------------------------

    def run(self, scenario: Scenario) -> Outcome:
        self.outcome.skipped = unsupported(scenario, self.served, self.max_advance_s)
        if self.outcome.skipped:
            return self.outcome
        sections = scenario_sections(scenario.config)[0]
        self._pods_ready = "waitForPodsReady" in sections
        self.kueue.start(scenario.config)
        self._provisioning = objects.provisioning_checks(scenario.objects)
        held = self._set_up(scenario.objects)
        self.kueue.stop()
        waiting = objects.waiting_cluster_queues(
            self._list(resources.WORKLOADS), self._list(resources.LOCAL_QUEUES)
        ).intersection(held)
        if len(waiting) <= 1:
            self._start_then_release(scenario, held, waiting)
        else:
            # Several queues' heads compete in Kueue's first cycle: releasing them one by one
            # would let the first released win it, so Kueue starts over them all released.
            self._release(held)
            self.kueue.start(scenario.config)
        self._settle("after set-up")
        for step in scenario.steps:
            self._step(step)
        self.outcome.workloads = self._list(resources.WORKLOADS)
        return self.outcome

    def _start_then_release(self, scenario: Scenario, held: dict[str, str], waiting: set[str]) -> None:
        """Kueue builds its cache (queues, the cohort tree, admitted usage) from its
        informers while its scheduler already runs, so started over active queues its first
        cycle can admit against a tree that still lacks a Cohort's parent or another queue's
        workloads, which ``simulate`` never does. Started with the queue of the waiting
        workload held, it has it all once idle; that queue is released then, after the others
        (a held queue's usage is left out of Kueue's snapshot)."""
        self.kueue.start(scenario.config)
        self._release({name: policy for name, policy in held.items() if name not in waiting})
        if waiting:
            self._settle("before the waiting queue is released")
            self._release({name: held[name] for name in waiting})

    def _release(self, held: dict[str, str]) -> None:
        for name, policy in held.items():
            self._patch(resources.CLUSTER_QUEUES.object_path(name), {"spec": {"stopPolicy": policy}})

    def _set_up(self, objs: list[dict[str, Any]]) -> dict[str, str]:
        """Create the initial objects with every queue held; returns queue -> stop policy."""
        self._ensure_namespaces(objs)
        if self._provisioning:
            version = self.served.get("ProvisioningRequestConfig", "v1beta2")
            self.client.apply(
                f"/apis/{keys.GROUP}/{version}/provisioningrequestconfigs/{objects.PROVISIONING_CONFIG}",
                objects.provisioning_config(version),
            )
        held: dict[str, str] = {}
        for obj, queued in objects.creation_order(objs):
            req = objects.request(obj, self.served, _now())
            if req.kind == "ClusterQueue":
                policy = str(req.body.get("spec", {}).get("stopPolicy") or "None")
                if policy == "None":
                    req.body.setdefault("spec", {})["stopPolicy"] = "Hold"
                    held[req.name] = policy
            self._create(req, queued)
        self._wait_job_workloads()
        return held

    # -- creating ----------------------------------------------------------------------------

    def _ensure_namespaces(self, objs: list[dict[str, Any]]) -> None:
        for ns in objects.namespaces_of(objs):
            path = resources.NAMESPACES.object_path(ns)
            if self.client.get_or_none(path) is None:
                self.client.request(
                    "POST",
                    resources.NAMESPACES.collection_path(),
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                )
            sa = objects.SERVICE_ACCOUNTS.object_path("default", ns)
            if self.client.get_or_none(sa) is None:
                # Pods need it, and no controller manager runs to create it.
                self.client.request(
                    "POST",
                    objects.SERVICE_ACCOUNTS.collection_path(ns),
                    {
                        "apiVersion": "v1",
                        "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": ns},
                    },
                )

    def _create(self, req: Request, queued: bool) -> None:
        if queued:
            # Kueue orders equal creation seconds by UID: give each queued object its own second.
            while time.time() < self._last_queued_second + 1.0:
                time.sleep(0.02)
        if req.kind == "Namespace" and self.client.get_or_none(req.ref.object_path(req.name)) is not None:
            # Made earlier for the objects inside it: the file's labels still count
            # (ClusterQueues select namespaces by them).
            labels = req.body.get("metadata", {}).get("labels")
            if labels:
                self._patch(req.ref.object_path(req.name), {"metadata": {"labels": labels}})
            return
        created = self.client.request("POST", req.ref.collection_path(req.namespace), req.body)
        self.outcome.uids[(req.kind, req.namespace or "", req.name)] = str(created["metadata"]["uid"])
        if queued:
            self._last_queued_second = float(int(time.time()))
        key = f"{req.namespace}/{req.name}"
        if req.kind == "Workload" and self._pods_ready:
            after = (req.body["metadata"].get("annotations") or {}).get(PODS_READY_AFTER)
            if after is not None and str(after) != "0s":
                self._never_ready.add(key)
        if req.kind == "Workload" and req.status is not None and key not in self._never_ready:
            conditions = req.status.setdefault("conditions", [])
            admitted = any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions)
            if admitted and not any(c.get("type") == "PodsReady" for c in conditions):
                # Its pods already run: Kueue (waitForPodsReady is on by default since v0.19)
                # must not time them out.
                conditions.append(
                    {
                        "type": "PodsReady",
                        "status": "True",
                        "reason": "PodsReady",
                        "message": "pods ready (scenario)",
                        "lastTransitionTime": _now(),
                    }
                )
        if req.status is not None:
            self._write_status(req, created)

    def _write_status(self, req: Request, current: dict[str, Any]) -> None:
        """The file's status over what the server has (Kueue may have written some already)."""

        def overlay(obj: dict[str, Any]) -> bool:
            obj["status"] = {**(obj.get("status") or {}), **copy.deepcopy(req.status or {})}
            return True

        if not self._update_status(req.ref.object_path(req.name, req.namespace, "status"), current, overlay):
            raise RuntimeError(f"cannot write the status of {req.kind} {req.name}")

    def _wait_job_workloads(self) -> None:
        """Kueue's job controller makes one Workload per Job; wait for all of them."""
        deadline = time.monotonic() + JOB_WORKLOAD_DEADLINE_S
        while True:
            jobs = {j["metadata"]["uid"] for j in self._list(resources.JOBS)}
            owners = {
                ref.get("uid")
                for w in self._list(resources.WORKLOADS)
                for ref in (w["metadata"].get("ownerReferences") or ())
            }
            if jobs <= owners:
                return
            if time.monotonic() > deadline:
                self.outcome.notes.append(f"{len(jobs - owners)} Job(s) got no Workload from Kueue")
                return
            time.sleep(0.1)

    # -- steps -------------------------------------------------------------------------------

    def _step(self, step: dict[str, Any]) -> None:
        ((kind, arg),) = step.items()
        if kind == "apply":
            objs = _step_objects(step)
            self._ensure_namespaces(objs)
            for obj, queued in objects.creation_order(objs):
                self._create(objects.request(obj, self.served, _now()), queued)
        elif kind == "advance":
            seconds = _duration(arg) or 0.0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                self._emulate()
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        elif kind == "finish":
            for wl in self._workloads_of(str(arg)):
                self._set_condition(
                    wl,
                    {
                        "type": "Finished",
                        "status": "True",
                        "reason": "Succeeded",
                        "message": "finished by the scenario",
                    },
                )
        elif kind == "delete":
            self._delete(arg)
        elif kind == "failNode":
            self._fail_node(str(arg))
        elif kind == "checkState":
            self._check_state(arg)
        self._settle(f"after {kind}")

    def _workloads_of(self, ref: str) -> list[dict[str, Any]]:
        ns, _, name = ref.rpartition("/")
        ns = ns or "default"
        wl = self.client.get_or_none(resources.WORKLOADS.object_path(name, ns))
        if wl is not None:
            return [wl]
        job = self.client.get_or_none(resources.JOBS.object_path(name, ns))
        if job is None:
            self.outcome.notes.append(f"no workload or job {ref}")
            return []
        return [
            w
            for w in self._list(resources.WORKLOADS, ns)
            if any(r.get("uid") == job["metadata"]["uid"] for r in w["metadata"].get("ownerReferences") or ())
        ]

    def _delete(self, arg: dict[str, Any]) -> None:
        kind, name, ns = str(arg.get("kind")), str(arg.get("name")), arg.get("namespace")
        ref = KINDS[kind]
        namespace = (ns or "default") if ref.namespaced else None
        owned = []
        if kind == "Job":
            job = self.client.get_or_none(ref.object_path(name, namespace))
            if job is not None:
                owned = [
                    w
                    for w in self._list(resources.WORKLOADS, namespace)
                    if any(
                        r.get("uid") == job["metadata"]["uid"]
                        for r in w["metadata"].get("ownerReferences") or ()
                    )
                ]
        self.client.request(
            "DELETE",
            ref.object_path(name, namespace),
            {"propagationPolicy": "Background", "gracePeriodSeconds": 0},
        )
        # No garbage collector runs here: remove what it would remove.
        for wl in owned:
            self._delete_quietly(resources.WORKLOADS.object_path(wl["metadata"]["name"], namespace))

    def _fail_node(self, name: str) -> None:
        """The node is lost as if deleted, with the pods bound to it."""
        for pod in self._list(resources.PODS):
            if (pod.get("spec") or {}).get("nodeName") == name:
                meta = pod["metadata"]
                self._delete_quietly(resources.PODS.object_path(meta["name"], meta["namespace"]))
        self._delete_quietly(resources.NODES.object_path(name))

    def _check_state(self, arg: dict[str, Any]) -> None:
        if arg["check"] in self._provisioning:
            self._autoscaler_verdict(arg)
            return

        def verdict(obj: dict[str, Any]) -> bool:
            checks = (obj.get("status") or {}).get("admissionChecks") or []
            entry = next((c for c in checks if c.get("name") == arg["check"]), None)
            if entry is None:
                self.outcome.notes.append(
                    f"checkState: {obj['metadata']['name']} has no check {arg['check']}"
                )
                return False
            entry.update(state=str(arg["state"]), message="set by the scenario", lastTransitionTime=_now())
            return True

        for wl in self._workloads_of(str(arg["workload"])):
            meta = wl["metadata"]
            self._update_status(
                resources.WORKLOADS.object_path(meta["name"], meta["namespace"], "status"), wl, verdict
            )

    def _autoscaler_verdict(self, arg: dict[str, Any]) -> None:
        """The cluster autoscaler's answer on the ProvisioningRequest Kueue made for the
        workload's check (its newest attempt), waited for if Kueue has not made one yet."""
        for wl in self._workloads_of(str(arg["workload"])):
            self._provision(wl, str(arg["check"]), str(arg["state"]))

    def _provision(self, wl: dict[str, Any], check: str, state: str) -> None:
        name, namespace = str(wl["metadata"]["name"]), str(wl["metadata"]["namespace"])
        try:
            wait_for(
                f"Kueue's ProvisioningRequest for {name}",
                lambda: bool(self._provisioning_requests(wl, check)),
                PROVISIONING_WAIT_S,
            )
        except StartupError:
            self.outcome.notes.append(f"checkState: Kueue made no ProvisioningRequest for {name}")
            return
        newest = max(
            self._provisioning_requests(wl, check),
            key=lambda r: _attempt(str(r["metadata"]["name"])),
        )
        self._update_status(
            PROVISIONING_REQUESTS.object_path(newest["metadata"]["name"], namespace, "status"),
            newest,
            lambda r: objects.autoscaler_verdict(r, state, _now()),
        )

    def _provisioning_requests(self, wl: dict[str, Any], check: str) -> list[dict[str, Any]]:
        """Kueue names them <workload>-<check>-<attempt> and makes the Workload their owner."""
        meta = wl["metadata"]
        prefix = f"{meta['name']}-{check}-"
        return [
            r
            for r in self._list(PROVISIONING_REQUESTS, str(meta["namespace"]))
            if str(r["metadata"]["name"]).startswith(prefix)
            and any(o.get("uid") == meta.get("uid") for o in r["metadata"].get("ownerReferences") or ())
        ]

    # -- Kueue's surroundings ---------------------------------------------------------------

    def _settle(self, when: str) -> None:
        busy = wait_idle(self.client, self._emulate, never_ready=lambda: frozenset(self._never_ready))
        if busy:
            self.outcome.notes.append(f"Kueue was still busy {when}: {'; '.join(busy[:3])}")

    def _emulate(self) -> bool:
        """What the surroundings of Kueue would write: a job controller finishing the
        eviction of a bare Workload, the Job controller and kubelets running a started Job's
        pods (ready) and stopping a suspended one's, and kubelets reporting pods of admitted
        bare Workloads ready
        (always: Kueue since v0.19 waits for pods ready by default; without the scenario
        asking for it, ``simulate`` takes pods as ready)."""
        wrote = False
        for job in self._list(resources.JOBS):
            meta = job["metadata"]
            wrote |= self._update_status(
                resources.JOBS.object_path(meta["name"], meta["namespace"], "status"),
                job,
                objects.job_pods_follow_suspend,
            )
        for wl in self._list(resources.WORKLOADS):
            key = f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"
            stopped = objects.finished_eviction(wl, _now())
            if stopped is not None:
                wrote |= self._put_status(wl, stopped)
                continue
            if wl["metadata"].get("ownerReferences") or ():
                continue  # Kueue's job controller reads PodsReady from the job's status
            conditions = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or ()}
            admitted = conditions.get("Admitted", {}).get("status") == "True"
            ready = conditions.get("PodsReady", {}).get("status") == "True"
            if admitted and not ready and key not in self._never_ready:
                wrote |= self._set_condition(
                    wl,
                    {
                        "type": "PodsReady",
                        "status": "True",
                        "reason": "PodsReady",
                        "message": "pods ready (scenario)",
                    },
                )
        return wrote

    def _put_status(self, wl: dict[str, Any], status: dict[str, Any]) -> bool:
        """Write ``status`` as read at ``wl``'s resourceVersion; a conflict means Kueue wrote
        first, and the next round decides again from what it wrote."""
        meta = wl["metadata"]
        try:
            self.client.request(
                "PUT",
                resources.WORKLOADS.object_path(meta["name"], meta["namespace"], "status"),
                {**wl, "status": status},
            )
        except ApiError as exc:
            if exc.conflict or exc.not_found:
                return True
            raise
        return True

    def _set_condition(self, wl: dict[str, Any], condition: dict[str, Any]) -> bool:
        def set_it(obj: dict[str, Any]) -> bool:
            status = obj.setdefault("status", {})
            kept = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
            status["conditions"] = [*kept, {**condition, "lastTransitionTime": _now()}]
            return True

        meta = wl["metadata"]
        return self._update_status(
            resources.WORKLOADS.object_path(meta["name"], meta["namespace"], "status"), wl, set_it
        )

    def _update_status(
        self, path: str, current: dict[str, Any], change: Callable[[dict[str, Any]], bool]
    ) -> bool:
        """PUT ``current`` after ``change`` edits it, reading it again on a conflict (Kueue writes
        the same objects). False when ``change`` finds nothing to do, the object is gone, or
        conflicts persist."""
        for _ in range(10):
            if not change(current):
                return False
            try:
                self.client.request("PUT", path, current)
                return True
            except ApiError as exc:
                if exc.not_found:
                    return False
                if not exc.conflict:
                    raise
                current = self.client.get(path)
        return False

    # -- plumbing ----------------------------------------------------------------------------

    def _list(self, ref: resources.ResourceRef, namespace: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.get(ref.collection_path(namespace)).get("items") or []
        return items

    def _patch(self, path: str, body: dict[str, Any]) -> None:
        self.client.request("PATCH", path, body, content_type=MERGE_PATCH)

    def _delete_quietly(self, path: str) -> None:
        try:
            self.client.request("DELETE", path, {"propagationPolicy": "Background", "gracePeriodSeconds": 0})
        except ApiError as exc:
            if not exc.not_found:
                raise


def _attempt(request_name: str) -> int:
    tail = request_name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# What Kueue's ProvisioningRequest check creates; owned by Workloads, but no garbage
# collector runs here, and a request left behind would answer for the next scenario's
# workload of the same name.
_MADE_BY_KUEUE = (
    PROVISIONING_REQUESTS,
    resources.ResourceRef("", "v1", "podtemplates", True, "PodTemplate"),
)


def reset(client: BlockingClient) -> None:
    """Delete every scenario object, and what Kueue made for them (Kueue stopped: finalizers
    are lifted by hand)."""
    for ref in (*_MADE_BY_KUEUE, *(KINDS[kind] for kind in objects.RESET_ORDER)):
        try:
            items = client.get(ref.collection_path()).get("items") or ()
        except ApiError as exc:
            if exc.not_found:  # not served by this API server
                continue
            raise
        for item in items:
            meta = item["metadata"]
            path = ref.object_path(meta["name"], meta.get("namespace"))
            try:
                if meta.get("finalizers"):
                    client.request(
                        "PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                    )
                client.request("DELETE", path, {"propagationPolicy": "Background", "gracePeriodSeconds": 0})
            except ApiError as exc:
                if not exc.not_found:
                    raise
