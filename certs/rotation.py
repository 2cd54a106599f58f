"""Keeping the webhook's certificates in a Secret, its CA in every caBundle, its server current.

Startup and every check period run the same :meth:`CertRotator.reconcile`:

1. read the Secret (``ca.crt ca.key tls.crt tls.key``); reuse it when still good, otherwise
   renew (:func:`certs.authority.ensure_bundle`) and write it back with the read
   ``resourceVersion``. A 409 means another replica wrote first: re-read and take theirs, so
   replicas converge on one CA instead of fighting.
2. write the pair to the cert directory and reload it into the live ``ssl.SSLContext``.
   Loading into the same context object changes only future handshakes: connections already
   open keep going, so a rotation drops no request.
3. set the CA as ``caBundle`` on our Mutating/ValidatingWebhookConfigurations and on the
   conversion stanza of our CRDs (compare-and-swap PUTs, skipped when already equal).

``ready`` turns true only after all three succeeded once; the readiness probe reads it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from certs.authority import (
    CA_CRT,
    TLS_CRT,
    TLS_KEY,
    CertBundle,
    client_renewal_reason,
    ensure_bundle,
    issue_client,
)
from kube.client import ApiError, KubeClient

log = logging.getLogger(__name__)

MUTATING_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MAX_CONFLICTS = 5


def write_pair(directory: Path, bundle: CertBundle) -> tuple[Path, Path]:
    """Write tls.crt/tls.key (and ca.crt) atomically; the key is readable by the owner only."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in ((TLS_CRT, bundle.tls_crt), (TLS_KEY, bundle.tls_key), ("ca.crt", bundle.ca_crt)):
        tmp = directory / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        tmp.replace(directory / name)
        paths.append(directory / name)
    return paths[0], paths[1]


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
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
    cert_dir: Path
    context: ssl.SSLContext | None = None  # the live server context, reloaded in place
    mutating: Sequence[str] = ()
    validating: Sequence[str] = ()
    crds: Sequence[str] = ()
    # Mutual TLS: the server asks every caller for a certificate of this CA, and the
    # rotator keeps one client pair per Secret named here (Secret name -> common name).
    client_ca: bool = False
    clients: Mapping[str, str] = field(default_factory=dict)
    check_period_s: float = 3600.0
    ready: bool = False
    bundle: CertBundle | None = None
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def secret_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets/{self.secret_name}"

    async def reconcile(self) -> CertBundle:
        bundle = await self._sync_secret()
        cert_file, key_file = write_pair(self.cert_dir, bundle)
        if self.context is None:
            self.context = server_context(cert_file, key_file)
        elif bundle != self.bundle:
            self.context.load_cert_chain(str(cert_file), str(key_file))
            log.info("serving certificate reloaded")
        if self.client_ca and (self.bundle is None or bundle.ca_crt != self.bundle.ca_crt):
            # Added to the trusted set: a CA rotated away stays trusted until a restart.
            require_client_certificates(self.context, bundle.ca_crt)
        self.bundle = bundle
        for secret_name, common_name in self.clients.items():
            await self._sync_client_secret(secret_name, common_name, bundle)
        await self.inject(bundle.ca_crt)
        self.ready = True
        return bundle

    async def _sync_secret(self) -> CertBundle:
        for _ in range(MAX_CONFLICTS):
            try:
                secret: dict[str, Any] | None = await self.client.get(self.secret_path)
            except ApiError as exc:
                if not exc.not_found:
                    raise
                secret = None
            current = None if secret is None else _secret_bundle(secret)
            bundle, reason = ensure_bundle(current, self.dns_names, self.ip_addresses)
            if reason is None:
                return bundle
            log.info("certificates in Secret %s/%s renewed: %s", self.namespace, self.secret_name, reason)
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": self.secret_name, "namespace": self.namespace},
                "data": {k: base64.b64encode(v).decode() for k, v in bundle.as_files().items()},
            }
            try:
                if secret is None:
                    await self.client.create(f"/api/v1/namespaces/{self.namespace}/secrets", body)
                else:
                    body["metadata"] = {**secret.get("metadata", {})}
                    await self.client.replace(self.secret_path, body)
                return bundle
            except ApiError as exc:
                if not (exc.conflict or exc.already_exists):
                    raise
                log.info("certificate Secret written concurrently: re-reading it")
        raise RuntimeError(f"Secret {self.namespace}/{self.secret_name} kept changing")

    async def _sync_client_secret(self, name: str, common_name: str, bundle: CertBundle) -> None:
        """Keep ``ca.crt tls.crt tls.key`` of a client identity issued by the current CA."""
        path = f"/api/v1/namespaces/{self.namespace}/secrets/{name}"
        for _ in range(MAX_CONFLICTS):
            try:
                secret: dict[str, Any] | None = await self.client.get(path)
            except ApiError as exc:
                if not exc.not_found:
                    raise
                secret = None
            data = {k: base64.b64decode(v) for k, v in ((secret or {}).get("data") or {}).items()}
            reason = "no certificate yet" if TLS_CRT not in data else (
                "the CA changed" if data.get(CA_CRT) != bundle.ca_crt
                else client_renewal_reason(bundle.ca_crt, data[TLS_CRT], common_name))
            if reason is None:
                return
            log.info("client certificate %s/%s for %s issued: %s", self.namespace, name, common_name, reason)
            tls_crt, tls_key = issue_client(bundle.ca_crt, bundle.ca_key, common_name)
            body: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {**(secret or {}).get("metadata", {}), "name": name, "namespace": self.namespace},
                "data": {k: base64.b64encode(v).decode()
                         for k, v in ((CA_CRT, bundle.ca_crt), (TLS_CRT, tls_crt), (TLS_KEY, tls_key))},
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

    async def inject(self, ca_crt: bytes) -> None:
        ca = base64.b64encode(ca_crt).decode()
        for collection, names in ((MUTATING_PATH, self.mutating), (VALIDATING_PATH, self.validating)):
            for name in names:
                await self._update(f"{collection}/{name}", lambda obj: _set_webhooks_ca(obj, ca))
        for name in self.crds:
            await self._update(f"{CRD_PATH}/{name}", lambda obj: _set_conversion_ca(obj, ca))

    async def _update(self, path: str, change: Any) -> None:
        for _ in range(MAX_CONFLICTS):
            try:
                obj = await self.client.get(path)
            except ApiError as exc:
                if exc.not_found:
                    log.warning("%s not found: no caBundle to inject", path)
                    return
                raise
            if not change(obj):
                return
            try:
                await self.client.replace(path, obj)
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise
        raise RuntimeError(f"{path} kept changing while injecting the caBundle")

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="cert-rotation")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.check_period_s)
            try:
                await self.reconcile()
            except Exception:  # keep serving with the current pair; retry next period
                log.exception("certificate check failed")

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
