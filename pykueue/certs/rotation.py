"""Keeping a server's certificates in a Secret, its CAs in every caBundle, its server current.

Startup, every check period and every change of the Secret run :meth:`CertRotator.reconcile`:

1. read the Secret (``ca.crt ca.key tls.crt tls.key``, and ``ca-previous.crt`` while a
   replaced CA overlaps); reuse it when still good, otherwise renew
   (:func:`certs.authority.ensure_bundle`) and write it back with the read
   ``resourceVersion``. A 409 means another replica wrote first: re-read and take theirs, so
   replicas converge on one CA instead of fighting.
2. trust the CAs for client certificates (mutual TLS) and hand the client Secrets their pair
   and the CAs that verify the server.
3. publish the current and the previous CA together as ``caBundle`` on our
   Mutating/ValidatingWebhookConfigurations, the conversion stanza of our CRDs and our
   APIServices (compare-and-swap PUTs, skipped when already equal, so every replica may run it).
4. only then write the pair to the cert directory (when kept as files) and reload it into the live
   ``ssl.SSLContext``: no moment exists where this replica serves a certificate the apiserver
   does not trust yet, and replicas still serving the old pair stay trusted through the
   previous CA. Loading into the same context object changes only future handshakes:
   connections already open keep going, so a rotation drops no request.

``ready`` turns true only after all of it succeeded once; the readiness probe reads it.

Other replicas learn of a rotation by polling: one GET of the Secret every ``poll_period_s``
(30 s), reconciling only when its data changed. Chosen over a watch because it holds no
long-lived connection per rotator, needs no resourceVersion bookkeeping across reconnects and
costs a bounded, tiny request rate (a replica runs three rotators: 0.1 GET/s in all).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykueue.api.access import OWN_NAMESPACE, ApiAccess
from pykueue.certs.authority import (
    CA_CRT,
    TLS_CRT,
    TLS_KEY,
    CertBundle,
    client_renewal_reason,
    ensure_bundle,
    issue_client,
    now_utc,
)
from pykueue.kube import tls_policy
from pykueue.kube.client import ApiError, KubeClient

log = logging.getLogger(__name__)

MUTATING_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
API_SERVICE_PATH = "/apis/apiregistration.k8s.io/v1/apiservices"
MAX_CONFLICTS = 5


def api_access(*, mutating: Sequence[str] = (), validating: Sequence[str] = (), crds: Sequence[str] = (),
               api_services: Sequence[str] = ()) -> tuple[ApiAccess, ...]:
    """What a rotator given these object names asks of the API, as RBAC (``api.access``): its
    Secrets in its own namespace (read, created once, compare-and-swapped; never listed: the
    CA key is in them), and a GET and a compare-and-swap PUT of each named object whose
    caBundle it keeps (never listed or patched)."""
    rows = [ApiAccess("", "secrets", ("get", "create", "update"), namespace=OWN_NAMESPACE)]
    for group, resource, names in (
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", mutating),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations", validating),
            ("apiextensions.k8s.io", "customresourcedefinitions", crds),
            ("apiregistration.k8s.io", "apiservices", api_services)):
        if names:
            rows.append(ApiAccess(group, resource, ("get", "update"), tuple(names)))
    return tuple(rows)


def write_pair(directory: Path, bundle: CertBundle) -> tuple[Path, Path]:
    """Write tls.crt/tls.key (and ca.crt: the CAs to verify it by) atomically; the key is
    readable by the owner only."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in ((TLS_CRT, bundle.tls_crt), (TLS_KEY, bundle.tls_key), (CA_CRT, bundle.trusted_cas)):
        tmp = directory / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        tmp.replace(directory / name)
        paths.append(directory / name)
    return paths[0], paths[1]


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = tls_policy.server_context()
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


def require_client_certificates(context: ssl.SSLContext, ca_pem: bytes) -> None:
    """Mutual TLS: every caller must present a certificate issued by ``ca_pem`` (added to
    those already trusted). No session tickets: kube-scheduler's extender client keeps no
    session cache, so it never resumes, and issuing two tickets per connection was a fifth
    of the server's cost of a new connection (it opens many: only two stay idle)."""
    context.load_verify_locations(cadata=ca_pem.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    context.num_tickets = 0


def _secret_bundle(secret: dict[str, Any]) -> CertBundle | None:
    data = secret.get("data") or {}
    try:
        return CertBundle.from_files({k: base64.b64decode(v) for k, v in data.items()})
    except (ValueError, TypeError):
        return None


@dataclass
class CertRotator:
    client: KubeClient
    namespace: str
    secret_name: str
    dns_names: Sequence[str]
    ip_addresses: Sequence[str]
    # Where the pair is also kept as files (a webhook's certDir, read by others); None keeps
    # it in memory only, written to disk just for the moment of loading.
    cert_dir: Path | None = None
    # The live server context, reloaded in place. Given one without key material, the first
    # reconcile loads the pair into it (so its other settings are the caller's).
    context: ssl.SSLContext | None = None
    mutating: Sequence[str] = ()
    validating: Sequence[str] = ()
    crds: Sequence[str] = ()
    # APIServices whose spec.caBundle points at this server (an aggregated API). One that is
    # missing, or that we may not change, is only warned about: the aggregator may have been
    # told to skip verification, and serving must go on.
    api_services: Sequence[str] = ()
    # Mutual TLS: the server asks every caller for a certificate of this CA, and the
    # rotator keeps one client pair per Secret named here (Secret name -> common name).
    client_ca: bool = False
    clients: Mapping[str, str] = field(default_factory=dict)
    check_period_s: float = 3600.0
    poll_period_s: float = 30.0
    clock: Callable[[], datetime.datetime] = now_utc  # when renewals are decided and issued
    ready: bool = False
    bundle: CertBundle | None = None
    _task: asyncio.Task[None] | None = field(default=None, repr=False)
    _loaded: tuple[bytes, bytes] | None = field(default=None, repr=False)  # the pair in the context
    _client_cas: set[bytes] = field(default_factory=set, repr=False)  # CAs trusted for callers
    _seen: dict[str, str] | None = field(default=None, repr=False)  # the Secret's data last reconciled

    @property
    def secret_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets/{self.secret_name}"

    async def reconcile(self, secret: dict[str, Any] | None = None) -> CertBundle:
        """One pass of the steps in the module docstring; ``secret`` is the Secret as just
        read, saving a GET (None: read it)."""
        bundle, seen = await self._sync_secret(secret)
        fresh = self.context is None  # not serving yet: its pair is loaded below, quietly
        if self.context is None:
            self.context = tls_policy.server_context()
        if self.client_ca:
            self._trust_client_cas(self.context, bundle)
        for secret_name, common_name in self.clients.items():
            await self._sync_client_secret(secret_name, common_name, bundle)
        await self.inject(bundle.trusted_cas)
        if self.cert_dir is not None:  # (ca.crt follows the trusted CAs even when the pair stays)
            write_pair(self.cert_dir, bundle)
        if self._loaded != (bundle.tls_crt, bundle.tls_key):
            self._load(bundle)
            if not fresh:
                log.info("serving certificate of Secret %s/%s loaded", self.namespace, self.secret_name)
        self.bundle, self._seen = bundle, seen
        self.ready = True
        return bundle

    def _load(self, bundle: CertBundle) -> None:
        """Into the live context: from the cert directory's files just written, else from memory."""
        assert self.context is not None
        if self.cert_dir is not None:
            self.context.load_cert_chain(str(self.cert_dir / TLS_CRT), str(self.cert_dir / TLS_KEY))
        else:
            tls_policy.load_pair(self.context, bundle.tls_crt, bundle.tls_key)
        self._loaded = (bundle.tls_crt, bundle.tls_key)

    def _trust_client_cas(self, context: ssl.SSLContext, bundle: CertBundle) -> None:
        """Accept callers of the current and the previous CA: a client still holding a pair of
        the old CA keeps working through the overlap. A context can only gain trusted CAs; one
        dropped later has expired, so nothing it signed verifies anyway."""
        for ca in (bundle.ca_crt, bundle.previous_ca_crt):
            if ca and ca not in self._client_cas:
                require_client_certificates(context, ca)
                self._client_cas.add(ca)

    async def _read_secret(self) -> dict[str, Any] | None:
        try:
            return await self.client.get(self.secret_path)
        except ApiError as exc:
            if not exc.not_found:
                raise
            return None

    async def _sync_secret(self, first: dict[str, Any] | None) -> tuple[CertBundle, dict[str, str]]:
        """The bundle to serve and the Secret data that holds it."""
        for attempt in range(MAX_CONFLICTS):
            secret = first if attempt == 0 and first is not None else await self._read_secret()
            current = None if secret is None else _secret_bundle(secret)
            bundle, reason = ensure_bundle(current, self.dns_names, self.ip_addresses, self.clock())
            if reason is None:
                assert secret is not None
                return bundle, dict(secret.get("data") or {})
            log.info("certificates in Secret %s/%s renewed: %s", self.namespace, self.secret_name, reason)
            data = {k: base64.b64encode(v).decode() for k, v in bundle.as_files().items()}
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": self.secret_name, "namespace": self.namespace},
                "data": data,
            }
            try:
                if secret is None:
                    await self.client.create(f"/api/v1/namespaces/{self.namespace}/secrets", body)
                else:
                    body["metadata"] = {**secret.get("metadata", {})}
                    await self.client.replace(self.secret_path, body)
                return bundle, data
            except ApiError as exc:
                if not (exc.conflict or exc.already_exists):
                    raise
                log.info("certificate Secret written concurrently: re-reading it")
        raise RuntimeError(f"Secret {self.namespace}/{self.secret_name} kept changing")

    async def _sync_client_secret(self, name: str, common_name: str, bundle: CertBundle) -> None:
        """Keep a client identity's ``tls.crt tls.key`` issued by the current CA, and its
        ``ca.crt`` (what the client verifies the server by) the current and previous CA."""
        path = f"/api/v1/namespaces/{self.namespace}/secrets/{name}"
        trusted = bundle.trusted_cas
        for _ in range(MAX_CONFLICTS):
            try:
                secret: dict[str, Any] | None = await self.client.get(path)
            except ApiError as exc:
                if not exc.not_found:
                    raise
                secret = None
            data = {k: base64.b64decode(v) for k, v in ((secret or {}).get("data") or {}).items()}
            tls_crt, tls_key = data.get(TLS_CRT), data.get(TLS_KEY)
            reason = "no certificate yet" if not tls_crt or not tls_key else (
                client_renewal_reason(bundle.ca_crt, tls_crt, common_name, self.clock()))
            if reason is None and data.get(CA_CRT) == trusted:
                return
            if reason is None:
                log.info("client Secret %s/%s: trusted CAs updated", self.namespace, name)
            else:
                log.info("client certificate %s/%s for %s issued: %s", self.namespace, name, common_name,
                         reason)
                tls_crt, tls_key = issue_client(bundle.ca_crt, bundle.ca_key, common_name, self.clock())
            assert tls_crt is not None and tls_key is not None
            body: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {**(secret or {}).get("metadata", {}), "name": name, "namespace": self.namespace},
                "data": {k: base64.b64encode(v).decode()
                         for k, v in ((CA_CRT, trusted), (TLS_CRT, tls_crt), (TLS_KEY, tls_key))},
            }
            try:
                if secret is None:
                    await self.client.create(f"/api/v1/namespaces/{self.namespace}/secrets", body)
                else:
                    await self.client.replace(path, body)
                return
            except ApiError as exc:
                if not (exc.conflict or exc.already_exists):
                    raise
        raise RuntimeError(f"Secret {self.namespace}/{name} kept changing")

    async def inject(self, ca_pem: bytes) -> None:
        """Set ``ca_pem`` (one or more PEM CAs) as the caBundle of every object we serve."""
        ca = base64.b64encode(ca_pem).decode()
        for collection, names in ((MUTATING_PATH, self.mutating), (VALIDATING_PATH, self.validating)):
            for name in names:
                await self._update(f"{collection}/{name}", lambda obj: _set_webhooks_ca(obj, ca))
        for name in self.crds:
            await self._update(f"{CRD_PATH}/{name}", lambda obj: _set_conversion_ca(obj, ca))
        for name in self.api_services:
            await self._update(f"{API_SERVICE_PATH}/{name}", lambda obj: _set_api_service_ca(obj, ca),
                               forbidden_ok=True)

    async def _update(self, path: str, change: Callable[[dict[str, Any]], bool],
                      forbidden_ok: bool = False) -> None:
        for _ in range(MAX_CONFLICTS):
            try:
                obj = await self.client.get(path)
            except ApiError as exc:
                if exc.not_found or (forbidden_ok and exc.status == 403):
                    log.warning("%s: no caBundle injected (%s)", path, exc)
                    return
                raise
            if not change(obj):
                return
            try:
                await self.client.replace(path, obj)
                return
            except ApiError as exc:
                if forbidden_ok and exc.status == 403:
                    log.warning("%s: no caBundle injected (%s)", path, exc)
                    return
                if not exc.conflict:
                    raise
        raise RuntimeError(f"{path} kept changing while injecting the caBundle")

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"cert-rotation-{self.secret_name}")

    async def _loop(self) -> None:
        """Poll the Secret every ``poll_period_s``; a full reconcile every ``check_period_s``
        (renewal is decided by time, not by a change), and after a failed pass at the next poll."""
        monotonic = asyncio.get_running_loop().time
        due = monotonic() + self.check_period_s
        failures = 0
        while True:
            await asyncio.sleep(max(0.0, min(self.poll_period_s, due - monotonic())))
            try:
                if failures or monotonic() >= due:
                    due = monotonic() + self.check_period_s
                    await self.reconcile()
                else:
                    await self.reconcile_if_changed()
                failures = 0
            except Exception as exc:  # keep serving with the current pair; retry at the next poll
                failures += 1
                where = f"{self.namespace}/{self.secret_name}"
                if failures == 1:
                    log.exception("certificate check of Secret %s failed", where)
                else:  # no trace each poll while, say, the apiserver is away
                    log.warning("certificate check of Secret %s failed again (%d in a row): %s",
                                where, failures, exc)

    async def reconcile_if_changed(self) -> bool:
        """One GET of the Secret; reconcile only when its data differs from what was last
        reconciled (another replica rotated it, or it was removed). True when it did."""
        secret = await self._read_secret()
        data = None if secret is None else dict(secret.get("data") or {})
        if data is not None and data == self._seen:
            return False
        await self.reconcile(secret)
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _set_webhooks_ca(obj: dict[str, Any], ca: str) -> bool:
    changed = False
    for hook in obj.get("webhooks") or ():
        config = hook.setdefault("clientConfig", {})
        if config.get("caBundle") != ca:
            config["caBundle"] = ca
            changed = True
    return changed


def _set_conversion_ca(obj: dict[str, Any], ca: str) -> bool:
    conversion = (obj.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return False
    config = conversion.setdefault("webhook", {}).setdefault("clientConfig", {})
    if config.get("caBundle") == ca:
        return False
    config["caBundle"] = ca
    return True


def _set_api_service_ca(obj: dict[str, Any], ca: str) -> bool:
    spec = obj.setdefault("spec", {})
    if spec.get("caBundle") == ca and not spec.get("insecureSkipTLSVerify"):
        return False
    # The apiserver refuses a caBundle together with insecureSkipTLSVerify.
    spec["caBundle"], spec["insecureSkipTLSVerify"] = ca, False
    return True
