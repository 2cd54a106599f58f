"""The admission webhook's HTTP layer as an aiohttp app: routing, reviews, patches. No rules.

``make_app(deps)`` serves, under Kueue's paths (kept in sync with
``manifests/06-webhooks.yaml``):

* ``/mutate-…`` and ``/validate-…`` of every job kind in the job registry (``manager.jobs.registry``) -- the
  decisions come from the kind's :class:`JobWebhook`; a disabled integration is served as
  a no-op (allowed, no patch), as controller-runtime does;
* the same for pykueue's own kinds (ClusterQueue, Cohort, ResourceFlavor, Workload, and
  LocalQueue), with the rules of :mod:`webhook.crd_rules`;
* ``/convert``: ConversionReview between ``kueue.x-k8s.io`` v1beta1 and v1beta2.

A request that is not a proper review gets HTTP 400 naming the problem; an object that
fails the rules gets ``allowed: false`` (code 403) listing the field paths. Nothing here
branches on a job kind beyond the registry lookup.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

import orjson
from aiohttp import web

from pykueue.api.field_errors import aggregate
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.kube.endpoints import BadRequest
from pykueue.kube.http_limits import read_body
from pykueue.manager.jobs.admission import (
    AdmissionContext,
    AdmissionDenied,
    AdmissionPolicy,
    ClusterFacts,
    JobWebhook,
)
from pykueue.manager.jobs.ownership import may_be_managed
from pykueue.manager.jobs.registry import GVK, webhook_path, webhooks
from pykueue.manager.jobs.tas_routing import kueue_pod_queue, needs_queue_lookup, route
from pykueue.webhook import conversion, crd_rules
from pykueue.webhook.facts import ClusterLookup, LookupFailed, StaticLookup, resolve_facts
from pykueue.webhook.offload import WorkerLane
from pykueue.webhook.review import (
    MAX_CONVERSION_BYTES,
    AdmissionRequest,
    admission_response,
    json_patch,
    parse_admission_review,
    short,
)

log = logging.getLogger(__name__)
_dumps = partial(json.dumps, separators=(",", ":"))
KUEUE = "kueue.x-k8s.io"
CRD_KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "Workload", "LocalQueue")
CONVERT_PATH = "/convert"


@dataclass
class WebhookDeps:
    policy: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    lookup: ClusterLookup = field(default_factory=StaticLookup)
    ready: Callable[[], bool] = lambda: True
    lane: WorkerLane = field(default_factory=WorkerLane)


@dataclass(frozen=True)
class Admission:
    """One admission request, parsed and checked, as a decision function gets it."""

    review: AdmissionRequest
    obj: JSON  # what the rules work on: for mutators a copy, changed in place
    original: JSON  # the object as it arrived (namespace filled in), for the patch
    size: int  # bytes of the body: a large one is diffed and encoded off the event loop


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
POD_GVK: GVK = ("", "v1", "Pod")
Decide = Callable[[Admission], Awaitable[JSON]]
# Shapes the apiserver would never send, met deep in the rules: say so rather than fail with a 5xx.
UNPROCESSABLE = (TypeError, AttributeError, ValueError, KeyError, IndexError)


def _bad(reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=400, dumps=_dumps)


def _parse(body: bytes, gvk: GVK, mutating: bool) -> Admission | AdmissionRequest:
    """The checked admission, or only the review when there is nothing to decide (DELETE,
    CONNECT). Pure, so a large body's parse and copy run off the event loop."""
    review = parse_admission_review(body)
    if (review.group, review.version, review.kind) != gvk:
        raise BadRequest(
            f"this path serves {'/'.join(p for p in gvk[:2] if p)} {gvk[2]}, got "
            f"{'/'.join(p for p in (review.group, review.version) if p)} {review.kind}"
        )
    if review.operation in ("DELETE", "CONNECT"):
        return review
    if review.object is None:
        raise BadRequest(f"{review.operation} request without an object")
    if review.operation == "UPDATE" and review.old_object is None:
        raise BadRequest("UPDATE request without an oldObject")
    original = review.object
    meta = original.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise BadRequest("request.object.metadata is not an object")
    if review.namespace and isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = review.namespace  # generateName pods arrive without it
    # Parsed for this request alone: validators may read it as it is; mutators change a copy.
    obj = copy.deepcopy(original) if mutating else original
    return Admission(review, obj, original, len(body))


async def _answer(deps: WebhookDeps, size: int, payload: JSON) -> web.Response:
    body = await deps.lane.run(size, _encode, payload)
    return web.Response(body=body, content_type="application/json")


def _encode(payload: JSON) -> bytes:
    return orjson.dumps(payload)


def _admission_handler(deps: WebhookDeps, gvk: GVK, decide: Decide, mutating: bool) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            body = await read_body(request)
            parsed = await deps.lane.run(len(body), _parse, body, gvk, mutating)
            if isinstance(parsed, AdmissionRequest):
                return web.json_response(admission_response(parsed.uid), dumps=_dumps)
            return await _answer(deps, parsed.size, await decide(parsed))
        except BadRequest as exc:
            return _bad(str(exc))
        except RecursionError:
            return _bad("the request is nested too deeply")
        except UNPROCESSABLE as exc:
            log.debug("unprocessable admission request on %s: %s", request.path, type(exc).__name__)
            return _bad(f"cannot process the object: {type(exc).__name__}: {short(exc)}")

    return handle


def _denied(uid: str, errors: list[FieldError] | str) -> JSON:
    message = errors if isinstance(errors, str) else aggregate(errors)
    return admission_response(uid, allowed=False, message=message, code=403, reason="Forbidden")


def _context(deps: WebhookDeps, review: AdmissionRequest, facts: ClusterFacts) -> AdmissionContext:
    return AdmissionContext(deps.policy, facts, review.operation)


async def _patched(deps: WebhookDeps, admission: Admission, obj: JSON,
                   warnings: list[str] | None = None) -> JSON:
    patch = await deps.lane.run(admission.size, json_patch, admission.original, obj)
    return admission_response(admission.review.uid, patch=patch, warnings=warnings)


async def _facts(deps: WebhookDeps, review: AdmissionRequest, obj: JSON,
                 related: bool = False) -> ClusterFacts:
    namespace = review.namespace or str((obj.get("metadata") or {}).get("namespace") or "")
    return await resolve_facts(obj, namespace, deps.policy, deps.lookup, related=related)


def _mutator(deps: WebhookDeps, hook: JobWebhook, gvk: GVK) -> Decide:
    # Pods are also routed to the TAS scheduler, whichever integration made them.
    routes_pods = gvk == POD_GVK

    async def decide(admission: Admission) -> JSON:
        review, obj, original = admission.review, admission.obj, admission.original
        enabled = deps.policy.integration_enabled(hook.integration)
        if not enabled and not routes_pods:
            return admission_response(review.uid)
        warnings: list[str] = []
        try:
            if enabled:
                facts = await _facts(deps, review, obj)
                obj = hook.default(obj, _context(deps, review, facts))
                tas_only = facts.queue_tas_only
            else:
                tas_only = needs_queue_lookup(obj) and await deps.lookup.queue_tas_only(
                    review.namespace, str(kueue_pod_queue(obj)))
            if routes_pods and review.operation == "CREATE":
                warnings = route(obj, deps.policy.tas_scheduler, tas_only)
        except LookupFailed as exc:
            if _not_ours(deps, original):
                log.warning("admitting %s unchanged: it is not Kueue's, and a lookup failed: %s",
                            _what(review, original), exc)
                return admission_response(review.uid)
            return _denied(review.uid, str(exc))
        except AdmissionDenied as exc:
            return _denied(review.uid, str(exc))
        return await _patched(deps, admission, obj, warnings)

    return decide


def _validator(deps: WebhookDeps, hook: JobWebhook) -> Decide:
    async def decide(admission: Admission) -> JSON:
        review, obj = admission.review, admission.obj
        if not deps.policy.integration_enabled(hook.integration):
            return admission_response(review.uid)
        try:
            facts = await _facts(deps, review, obj, related=True)
            errors = hook.validate(
                obj,
                review.old_object if review.operation == "UPDATE" else None,
                _context(deps, review, facts),
            )
        except LookupFailed as exc:
            if _not_ours(deps, obj) and (review.old_object is None or _not_ours(deps, review.old_object)):
                log.warning("admitting %s: it is not Kueue's, and a lookup failed: %s",
                            _what(review, obj), exc)
                return admission_response(review.uid)
            return _denied(review.uid, str(exc))
        except AdmissionDenied as exc:
            return _denied(review.uid, str(exc))
        return _denied(review.uid, errors) if errors else admission_response(review.uid)

    return decide


def _not_ours(deps: WebhookDeps, obj: JSON) -> bool:
    """Certainly not Kueue's, whatever the lookup would have said (a ``default`` LocalQueue
    that could not be looked up is taken as absent): such objects are never blocked by our
    own failure to read the cluster."""
    return not may_be_managed(obj, deps.policy, default_local_queue=False)


def _what(review: AdmissionRequest, obj: JSON) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = (meta or {}).get("name") or (meta or {}).get("generateName") or ""
    return f"{review.kind} {review.namespace}/{name}"


def _crd_mutator(deps: WebhookDeps, kind: str) -> Decide:
    async def decide(admission: Admission) -> JSON:
        obj = admission.obj
        if kind in ("ClusterQueue", "ResourceFlavor"):
            obj = crd_rules.add_resource_in_use_finalizer(obj)
        elif kind == "Workload":
            obj = crd_rules.default_workload(obj, deps.policy.gates.enabled("PartialAdmission"))
        return await _patched(deps, admission, obj)

    return decide


def _crd_validator(kind: str) -> Decide:
    async def decide(admission: Admission) -> JSON:
        review = admission.review
        old = review.old_object if review.operation == "UPDATE" else None
        errors = crd_rules.VALIDATORS[kind](admission.obj, old)
        return _denied(review.uid, errors) if errors else admission_response(review.uid)

    return decide


def _converter(deps: WebhookDeps) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            body = await read_body(request)
            # A large list is converted in a worker process: parsing and converting thousands
            # of objects holds the GIL, and threads would stall the event loop all the same.
            answer = await deps.lane.run_apart(len(body), conversion.answer, body)
            return web.Response(body=answer, content_type="application/json")
        except BadRequest as exc:
            return _bad(str(exc))
        except RecursionError:
            return _bad("the request is nested too deeply")
        except UNPROCESSABLE as exc:
            log.debug("unprocessable conversion request: %s", type(exc).__name__)
            return _bad(f"cannot process the objects: {type(exc).__name__}: {short(exc)}")

    return handle


def routes() -> list[str]:
    """Every admission path served (the manifests must register a subset of these)."""
    paths = []
    for gvk in webhooks():
        paths += [webhook_path("mutate", gvk), webhook_path("validate", gvk)]
    for kind in CRD_KINDS:
        gvk = (KUEUE, "v1beta2", kind)
        if kind in ("ClusterQueue", "ResourceFlavor", "Workload"):
            paths.append(webhook_path("mutate", gvk))
        paths.append(webhook_path("validate", gvk))
    return paths


def make_app(deps: WebhookDeps) -> web.Application:
    """The webhook's routes; serve it with :func:`webhook.server.serve_webhook` (its limits),
    or in-process tests as they like (the reviews' own size limit still holds)."""
    app = web.Application(client_max_size=MAX_CONVERSION_BYTES)
    for gvk, hook in webhooks().items():
        app.router.add_post(webhook_path("mutate", gvk),
                            _admission_handler(deps, gvk, _mutator(deps, hook, gvk), mutating=True))
        app.router.add_post(webhook_path("validate", gvk),
                            _admission_handler(deps, gvk, _validator(deps, hook), mutating=False))
    for kind in CRD_KINDS:
        gvk = (KUEUE, "v1beta2", kind)
        if kind in ("ClusterQueue", "ResourceFlavor", "Workload"):
            mutate = _admission_handler(deps, gvk, _crd_mutator(deps, kind), mutating=True)
            app.router.add_post(webhook_path("mutate", gvk), mutate)
        app.router.add_post(webhook_path("validate", gvk),
                            _admission_handler(deps, gvk, _crd_validator(kind), mutating=False))
    app.router.add_post(CONVERT_PATH, _converter(deps))

    async def stop_workers(_: web.Application) -> None:
        await deps.lane.close()

    app.on_cleanup.append(stop_workers)

    async def healthz(_: web.Request) -> web.Response:
        return (
            web.Response(text="ok")
            if deps.ready()
            else web.Response(status=503, text="certificates not ready")
        )

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    return app
