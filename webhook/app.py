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

from aiohttp import web

from api.conversion import ConversionError, convert
from api.field_errors import aggregate
from api.fields import FieldError
from api.wire import JSON
from kube.endpoints import BadRequest
from manager.jobs.admission import (
    AdmissionContext,
    AdmissionDenied,
    AdmissionPolicy,
    ClusterFacts,
    JobWebhook,
)
from manager.jobs.ownership import may_be_managed
from manager.jobs.registry import GVK, webhook_path, webhooks
from manager.jobs.tas_routing import kueue_pod_queue, needs_queue_lookup, route
from webhook import crd_rules
from webhook.facts import ClusterLookup, LookupFailed, StaticLookup, resolve_facts
from webhook.review import (
    AdmissionRequest,
    admission_response,
    conversion_response,
    json_patch,
    parse_admission_review,
    parse_conversion_review,
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


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
POD_GVK: GVK = ("", "v1", "Pod")
Decide = Callable[[AdmissionRequest, JSON], Awaitable[JSON]]


def _bad(reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=400, dumps=_dumps)


def _admission_handler(gvk: GVK, decide: Decide) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            review = parse_admission_review(await request.read())
            if (review.group, review.version, review.kind) != gvk:
                raise BadRequest(
                    f"this path serves {'/'.join(p for p in gvk[:2] if p)} {gvk[2]}, got "
                    f"{'/'.join(p for p in (review.group, review.version) if p)} {review.kind}"
                )
            if review.operation in ("DELETE", "CONNECT"):
                return web.json_response(admission_response(review.uid), dumps=_dumps)
            if review.object is None:
                raise BadRequest(f"{review.operation} request without an object")
            if review.operation == "UPDATE" and review.old_object is None:
                raise BadRequest("UPDATE request without an oldObject")
            obj = copy.deepcopy(review.object)
            meta = obj.get("metadata")
            if meta is not None and not isinstance(meta, dict):
                raise BadRequest("request.object.metadata is not an object")
            if review.namespace and isinstance(meta, dict) and not meta.get("namespace"):
                meta["namespace"] = review.namespace  # generateName pods arrive without it
            return web.json_response(await decide(review, obj), dumps=_dumps)
        except BadRequest as exc:
            return _bad(str(exc))
        except (TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
            # Shapes the apiserver would never send; say so rather than fail with a 5xx.
            log.info("unprocessable admission request on %s: %r", request.path, exc)
            return _bad(f"cannot process the object: {exc!r}")

    return handle


def _denied(uid: str, errors: list[FieldError] | str) -> JSON:
    message = errors if isinstance(errors, str) else aggregate(errors)
    return admission_response(uid, allowed=False, message=message, code=403, reason="Forbidden")


def _context(deps: WebhookDeps, review: AdmissionRequest, facts: ClusterFacts) -> AdmissionContext:
    return AdmissionContext(deps.policy, facts, review.operation)


async def _facts(deps: WebhookDeps, review: AdmissionRequest, obj: JSON) -> ClusterFacts:
    namespace = review.namespace or str((obj.get("metadata") or {}).get("namespace") or "")
    return await resolve_facts(obj, namespace, deps.policy, deps.lookup)


def _mutator(deps: WebhookDeps, hook: JobWebhook, gvk: GVK) -> Decide:
    # Pods are also routed to the TAS scheduler, whichever integration made them.
    routes_pods = gvk == POD_GVK

    async def decide(review: AdmissionRequest, obj: JSON) -> JSON:
        enabled = deps.policy.integration_enabled(hook.integration)
        if not enabled and not routes_pods:
            return admission_response(review.uid)
        original = copy.deepcopy(obj)
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
        return admission_response(review.uid, patch=json_patch(original, obj), warnings=warnings)

    return decide


def _validator(deps: WebhookDeps, hook: JobWebhook) -> Decide:
    async def decide(review: AdmissionRequest, obj: JSON) -> JSON:
        if not deps.policy.integration_enabled(hook.integration):
            return admission_response(review.uid)
        try:
            facts = await _facts(deps, review, obj)
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
    async def decide(review: AdmissionRequest, obj: JSON) -> JSON:
        original = copy.deepcopy(obj)
        if kind in ("ClusterQueue", "ResourceFlavor"):
            obj = crd_rules.add_resource_in_use_finalizer(obj)
        elif kind == "Workload":
            obj = crd_rules.default_workload(obj, deps.policy.gates.enabled("PartialAdmission"))
        return admission_response(review.uid, patch=json_patch(original, obj))

    return decide


def _crd_validator(kind: str) -> Decide:
    async def decide(review: AdmissionRequest, obj: JSON) -> JSON:
        old = review.old_object if review.operation == "UPDATE" else None
        errors = crd_rules.VALIDATORS[kind](obj, old)
        return _denied(review.uid, errors) if errors else admission_response(review.uid)

    return decide


async def _convert(request: web.Request) -> web.StreamResponse:
    try:
        review = parse_conversion_review(await request.read())
    except BadRequest as exc:
        return _bad(str(exc))
    try:
        # The objects were parsed for this request alone: no copy needed.
        converted = [convert(obj, review.desired_api_version, in_place=True) for obj in review.objects]
    except ConversionError as exc:
        return web.json_response(conversion_response(review.uid, error=str(exc)), dumps=_dumps)
    return web.json_response(conversion_response(review.uid, converted), dumps=_dumps)


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
    app = web.Application(client_max_size=4 * 1024 * 1024)
    for gvk, hook in webhooks().items():
        app.router.add_post(webhook_path("mutate", gvk), _admission_handler(gvk, _mutator(deps, hook, gvk)))
        app.router.add_post(webhook_path("validate", gvk), _admission_handler(gvk, _validator(deps, hook)))
    for kind in CRD_KINDS:
        gvk = (KUEUE, "v1beta2", kind)
        if kind in ("ClusterQueue", "ResourceFlavor", "Workload"):
            mutate = _admission_handler(gvk, _crd_mutator(deps, kind))
            app.router.add_post(webhook_path("mutate", gvk), mutate)
        app.router.add_post(webhook_path("validate", gvk), _admission_handler(gvk, _crd_validator(kind)))
    app.router.add_post(CONVERT_PATH, _convert)

    async def healthz(_: web.Request) -> web.Response:
        return (
            web.Response(text="ok")
            if deps.ready()
            else web.Response(status=503, text="certificates not ready")
        )

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    return app
