"""The ProvisioningRequest admission check controller (``kueue.x-k8s.io/provisioning-request``).

For a Workload holding quota in a ClusterQueue with such a check it creates the
ProvisioningRequest (``autoscaling.x-k8s.io/v1``) and PodTemplates Kueue v0.19.2 would, reads
the request's conditions back into the check's state (``manager.jobs.provisioning`` decides
both, purely), deletes requests no longer wanted (a finished or evicted Workload, an attempt
superseded, a config changed), and keeps each such AdmissionCheck's ``Active`` condition. The
queueing core acts on the check's state as on any controller's: Ready admits, Retry evicts
and requeues after the check's backoff, Rejected deactivates.

Leader only; one work queue keyed ``wl:<ns>/<name>`` or ``ac:<name>``, fed by the informers
of Workloads, AdmissionChecks, ProvisioningRequestConfigs and ProvisioningRequests. Without
the ProvisioningRequest API (no cluster autoscaler that serves it) the controller does not
run, as in Kueue, and its checks never turn Active.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.events import WARNING, DiscardEvents, EventRecord, EventSink, ObjectReference
from pykueue.api.wire import JSON, meta
from pykueue.kube import resources as res
from pykueue.kube.client import ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef, object_key
from pykueue.kube.workqueue import QueueTiming, WorkQueue, prompt_retry_backoff
from pykueue.manager.jobs.provisioning.checks import NoRequestYet, attempt_to_create, next_check
from pykueue.manager.jobs.provisioning.config import (
    CheckConfig,
    active_condition,
    config_name,
    is_provisioning_check,
)
from pykueue.manager.jobs.provisioning.requests import (
    InconsistentAssignments,
    current_request,
    hand_over,
    merged_podsets,
    pod_template,
    provisioning_request,
    template_names,
)

log = logging.getLogger(__name__)

REPORTER = "kueue-provisioning-request-controller"
# Informers it runs beside the queue manager's.
WATCHED: tuple[ResourceRef, ...] = (res.PROVISIONING_REQUESTS, res.PROVISIONING_REQUEST_CONFIGS)
# Kubernetes' OwnerReferencesPermissionEnforcement admission plugin: an object whose owner
# references change may only be written by a user who may delete it, and a new owner
# reference that blocks the owner's deletion wants ``update`` on the owner's finalizers.
_HANDED_OVER = ("a template handed over to its request changes its owner references: "
                "OwnerReferencesPermissionEnforcement wants delete on it")
_BLOCKING = ("created (or handed over) with an owner reference that blocks the owner's deletion: "
             "OwnerReferencesPermissionEnforcement wants update on the owner's finalizers")
# Every call of this controller, as RBAC (``api.access``): its informers (a one-item list
# first tells whether the API is served); requests created, deleted, and read when a create
# meets one already there; templates read, created and handed over (PUT); the check states
# of Workloads and the Active condition of AdmissionChecks patched.
API_ACCESS: tuple[ApiAccess, ...] = (
    *(ref.access("list", "watch") for ref in WATCHED),
    res.PROVISIONING_REQUESTS.access("get", "create", "delete"),
    res.POD_TEMPLATES.access("get", "create", "update"),
    res.POD_TEMPLATES.access("delete", why=_HANDED_OVER),
    res.WORKLOADS.access("update", subresource="finalizers", why=_BLOCKING),
    res.PROVISIONING_REQUESTS.access("update", subresource="finalizers", why=_BLOCKING),
    res.WORKLOADS.access("patch", subresource="status"),
    res.ADMISSION_CHECKS.access("patch", subresource="status"),
)
_BACKGROUND = {"propagationPolicy": "Background"}
Verdict = Callable[[str, str, str, "float | None"], None]


class ProvisioningController:
    def __init__(self, client: KubeClient, informers: MutableMapping[str, Informer], verdict: Verdict,
                 events: EventSink | None = None, timing: QueueTiming | None = None) -> None:
        """``informers``: the queue manager's (Workload, AdmissionCheck, ResourceFlavor are read;
        this controller adds its own to them, so they start and sync with the rest).
        ``verdict(workload key, check, state, retry after s)`` hands a written state to the core."""
        self.client = client
        self.informers = informers
        self.verdict = verdict
        self.events: EventSink = events if events is not None else DiscardEvents()
        self.queue: WorkQueue[str] = WorkQueue(self.reconcile, workers=2, name="provisioning",
                                               timing=timing, backoff=prompt_retry_backoff())
        self.enabled = False

    async def prepare(self) -> None:
        """Add the informers when the cluster serves ProvisioningRequests; else stay off."""
        try:
            await self.client.get(res.PROVISIONING_REQUESTS.collection_path(), {"limit": 1})
        except ApiError as exc:
            if not exc.not_found:
                raise
            log.warning("ProvisioningRequest admission checks disabled: the %s API is not served by this "
                        "cluster (install a cluster autoscaler that serves it)",
                        res.PROVISIONING_REQUESTS.api_version)
            return
        self.enabled = True
        for ref in WATCHED:
            informer = Informer(self.client, ref)
            informer.add_handler(self._on_object)
            self.informers[ref.kind] = informer
        self.informers["AdmissionCheck"].add_handler(self._on_check)

    def start(self) -> None:
        if self.enabled:
            self.queue.start()

    async def stop(self, drain: bool = False, timeout_s: float = 5.0) -> None:
        await self.queue.shutdown(drain=drain, timeout_s=timeout_s)

    # ------------------------------------------------------------------ events

    def on_workload(self, event: EventType, obj: JSON) -> None:
        if self.enabled and event != EventType.DELETED and self._checks_of(obj):
            self.queue.add(f"wl:{object_key(obj)}")

    def _on_check(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        if is_provisioning_check(obj) or (old is not None and is_provisioning_check(old)):
            self._check_changed(str(meta(obj).get("name")))

    def _on_object(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        if obj.get("kind") == "ProvisioningRequestConfig":
            name = str(meta(obj).get("name"))
            for check in self.informers["AdmissionCheck"].items():
                if is_provisioning_check(check) and config_name(check)[0] == name:
                    self._check_changed(str(meta(check).get("name")))
            return
        for ref in meta(obj).get("ownerReferences") or ():  # a request: its Workload
            if ref.get("controller") and ref.get("kind") == "Workload":
                self.queue.add(f"wl:{meta(obj).get('namespace')}/{ref.get('name')}")

    def _check_changed(self, check: str) -> None:
        self.queue.add(f"ac:{check}")
        for workload in self.informers["Workload"].items():
            entries = (workload.get("status") or {}).get("admissionChecks") or ()
            if check in {str(c.get("name")) for c in entries}:
                self.queue.add(f"wl:{object_key(workload)}")

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, key: str) -> float | None:
        kind, _, name = key.partition(":")
        if kind == "ac":
            await self._reconcile_check(name)
        else:
            await self._reconcile_workload(name)
        return None

    def _configs(self) -> dict[str, JSON]:
        return {str(meta(c).get("name")): c for c in self.informers["ProvisioningRequestConfig"].items()}

    def _checks_of(self, workload: Mapping[str, Any]) -> list[str]:
        checks = self.informers["AdmissionCheck"]
        return [str(c.get("name")) for c in (workload.get("status") or {}).get("admissionChecks") or ()
                if is_provisioning_check(checks.get(str(c.get("name"))) or {})]

    async def _reconcile_check(self, name: str) -> None:
        check = self.informers["AdmissionCheck"].get(name)
        if check is None or not is_provisioning_check(check):
            return
        active, reason, message = active_condition(check, self._configs())
        status = "True" if active else "False"
        conditions = list((check.get("status") or {}).get("conditions") or ())
        current = next((c for c in conditions if c.get("type") == "Active"), None)
        if current is not None and current.get("status") == status:
            return  # Kueue rewrites the condition only when its status flips
        conditions = [c for c in conditions if c.get("type") != "Active"] + [{
            "type": "Active", "status": status, "reason": reason, "message": message,
            "observedGeneration": meta(check).get("generation") or 0, "lastTransitionTime": _now()}]
        await self.client.patch(res.ADMISSION_CHECKS.object_path(name, subresource="status"),
                                {"metadata": {"resourceVersion": meta(check).get("resourceVersion")},
                                 "status": {"conditions": conditions}})

    def _owned_requests(self, workload: Mapping[str, Any]) -> list[JSON]:
        uid = meta(workload).get("uid")
        namespace = meta(workload).get("namespace")
        requests = self.informers["ProvisioningRequest"].items()
        return [r for r in requests if meta(r).get("namespace") == namespace
                and any(o.get("controller") and o.get("uid") == uid
                        for o in meta(r).get("ownerReferences") or ())]

    async def _reconcile_workload(self, key: str) -> None:
        workload = self.informers["Workload"].get(key)
        if workload is None:
            return
        status = workload.get("status") or {}
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        finished = conditions.get(keys.WorkloadCondition.FINISHED) == "True"
        evicted = conditions.get(keys.WorkloadCondition.EVICTED) == "True"
        reserved = conditions.get(keys.WorkloadCondition.QUOTA_RESERVED) == "True" and \
            bool(status.get("admission"))
        if not reserved and not finished and not evicted:
            return
        owned = self._owned_requests(workload)
        if finished or evicted:
            await self._delete_requests(owned, keep=set())  # the capacity is no longer wanted
            return
        checks = self._checks_of(workload)
        configs = self._configs()
        by_check: dict[str, CheckConfig | None] = {}
        for check in checks:
            config_ref, _ = config_name(self.informers["AdmissionCheck"].get(check) or {})
            config = configs.get(config_ref or "")
            by_check[check] = None if config is None else CheckConfig.of(config)
        try:
            current = {c: current_request(workload, c, cfg, owned) for c, cfg in by_check.items()
                       if cfg is not None}
        except InconsistentAssignments as exc:
            log.warning("Workload %s: %s", key, exc)
            return
        workload = await self._sync_check_states(workload, by_check, current)
        await self._delete_requests(owned, keep={str(meta(r).get("name")) for r in current.values() if r})
        await self._create_requests(workload, by_check, current)

    async def _sync_check_states(self, workload: JSON, by_check: Mapping[str, CheckConfig | None],
                                 current: Mapping[str, Mapping[str, Any] | None]) -> JSON:
        entries = list((workload.get("status") or {}).get("admissionChecks") or ())
        updated: list[JSON] = []
        try:
            for entry in entries:
                name = str(entry.get("name"))
                if name not in by_check:
                    updated.append(entry)
                    continue
                new = next_check(workload, entry, by_check[name], current.get(name), name)
                if new != entry and new.get("state") != entry.get("state"):
                    new["lastTransitionTime"] = _now()
                updated.append(new)
        except NoRequestYet:
            return workload  # Kueue writes no check state until every request exists
        if updated == entries:
            return workload
        m = meta(workload)
        written = await self.client.patch(
            res.WORKLOADS.object_path(str(m.get("name")), str(m.get("namespace")), "status"),
            {"metadata": {"resourceVersion": m.get("resourceVersion")},
             "status": {"admissionChecks": updated}})
        before = {str(e.get("name")): e for e in entries}
        for entry in updated:
            old = before.get(str(entry.get("name"))) or {}
            if entry.get("state") == old.get("state"):
                continue
            message = (f"Admission check {entry.get('name')} updated state from {old.get('state')} "
                       f"to {entry.get('state')}")
            if entry.get("message"):
                message += f" with message: {entry.get('message')}"
            self.events.record(EventRecord(ObjectReference.of(written), "AdmissionCheckUpdated", message,
                                           REPORTER, action="AdmissionCheckUpdated"))
            log.info("Workload %s: check %s -> %s (%s)", object_key(workload), entry.get("name"),
                     entry.get("state"), entry.get("message") or "")
            retry = entry.get("requeueAfterSeconds") if entry.get("state") == "Retry" else None
            self.verdict(object_key(workload), str(entry.get("name")), str(entry.get("state")),
                         None if retry is None else float(retry))
        return written

    async def _delete_requests(self, owned: list[JSON], keep: set[str]) -> None:
        for request in owned:
            name = str(meta(request).get("name"))
            if name in keep:
                continue
            try:
                path = res.PROVISIONING_REQUESTS.object_path(name, str(meta(request).get("namespace")))
                await self.client.delete(path, _BACKGROUND)
            except ApiError as exc:
                if not exc.not_found:
                    raise

    async def _create_requests(self, workload: JSON, by_check: Mapping[str, CheckConfig | None],
                               current: Mapping[str, Mapping[str, Any] | None]) -> None:
        entries = {str(e.get("name")): e for e in (workload.get("status") or {}).get("admissionChecks") or ()}
        namespace = str(meta(workload).get("namespace"))
        flavors = {str(meta(f).get("name")): f for f in self.informers["ResourceFlavor"].items()}
        for check, config in sorted(by_check.items()):
            if config is None:
                continue
            request = current.get(check)
            attempt = attempt_to_create(workload, entries.get(check), request, check)
            if attempt is None and request is not None:
                await self._hand_over_templates(workload, request)
                continue
            if attempt is None:
                continue
            merged = merged_podsets(workload, config)
            if not merged:
                continue  # nothing of it needs capacity: the check is Ready without a request
            name = provisioning_request(workload, check, attempt, config, ())["metadata"]["name"]
            named = template_names(name, merged)
            for template_name, podset in named:
                path = res.POD_TEMPLATES.object_path(template_name, namespace)
                if await self._get(path) is None:
                    template = pod_template(workload, podset, template_name, flavors)
                    await self._create(res.POD_TEMPLATES.collection_path(namespace), template, workload)
            body = provisioning_request(workload, check, attempt, config, [(t, m.count) for t, m in named])
            created = await self._create(res.PROVISIONING_REQUESTS.collection_path(namespace), body, workload)
            self.events.record(EventRecord(ObjectReference.of(workload), "ProvisioningRequestCreated",
                                           f'Created ProvisioningRequest: "{name}"', REPORTER,
                                           action="Created"))
            await self._hand_over_templates(workload, created)

    async def _create(self, path: str, body: JSON, workload: JSON) -> JSON:
        try:
            return await self.client.create(path, body)
        except ApiError as exc:
            if exc.already_exists:
                found = await self._get(f"{path}/{body['metadata']['name']}")
                if found is not None:
                    return found
            message = f"Error creating {body.get('kind')} {body['metadata']['name']!r}: {exc}"
            self.events.record(EventRecord(ObjectReference.of(workload), "FailedCreate", message[:1024],
                                           REPORTER, type=WARNING, action="FailedCreate"))
            raise

    async def _hand_over_templates(self, workload: JSON, request: Mapping[str, Any]) -> None:
        namespace = str(meta(request).get("namespace"))
        for ps in (request.get("spec") or {}).get("podSets") or ():
            path = res.POD_TEMPLATES.object_path(str((ps.get("podTemplateRef") or {}).get("name")), namespace)
            template = await self._get(path)
            if template is None:
                continue
            changed = hand_over(template, workload, request)
            if changed is not None:
                await self.client.replace(path, changed)

    async def _get(self, path: str) -> JSON | None:
        return await self.client.get_or_none(path)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
