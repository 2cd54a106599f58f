"""The extender's certificates kept in Secrets, as the webhook's are.

A CA of the extender's own issues its serving pair (Secret ``pykueue-extender-server-cert``)
and the TAS scheduler's client pair (Secret ``pykueue-tas-scheduler-client-cert``, which the
scheduler mounts); callers must present a certificate of that CA (mutual TLS). Every
replica runs one :class:`certs.rotation.CertRotator` over the same Secret, so they share one
CA, renew it the same way and pick up another replica's renewal within a poll.
``pykueue extender --cert-secret`` and ``pykueue run``'s in-process extender both keep them
through :func:`secret_rotator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pykueue.certs.names import service_dns_names
from pykueue.certs.rotation import CertRotator
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import SECRETS, ResourceRef

NAMESPACE: Final = "pykueue-system"
SERVICE: Final = "pykueue-extender-service"
SERVER_SECRET: Final = "pykueue-extender-server-cert"
TAS_SCHEDULER_CLIENT: Final = "pykueue-tas-scheduler"
TAS_SCHEDULER_CLIENT_SECRET: Final = "pykueue-tas-scheduler-client-cert"

# What keeping the two Secrets asks of kube-apiserver (the rotator reads, creates and
# compare-and-swaps them; it never lists or watches), as (resource, verbs, names): RBAC
# cannot limit ``create`` to a name, the other verbs it limits to the two Secrets. The
# extender's Role in ``manifests/02-rbac.yaml`` grants exactly this (a test compares).
SECRET_ACCESS: Final[tuple[tuple[ResourceRef, tuple[str, ...], tuple[str, ...]], ...]] = (
    (SECRETS, ("create",), ()),
    (SECRETS, ("get", "update"), (SERVER_SECRET, TAS_SCHEDULER_CLIENT_SECRET)),
)


def secret_rotator(client: KubeClient, namespace: str, *, secret: str = SERVER_SECRET,
                   service: str = SERVICE, ip_addresses: Sequence[str] = ("127.0.0.1",),
                   client_secret: str = TAS_SCHEDULER_CLIENT_SECRET,
                   client_name: str = TAS_SCHEDULER_CLIENT, cert_dir: Path | None = None) -> CertRotator:
    """A rotator keeping the serving pair (for ``localhost``, the addresses and the Service's
    DNS names) in ``secret`` and ``client_name``'s pair in ``client_secret``; it asks every
    caller for a certificate of its CA. Call ``reconcile`` before serving its ``context``.
    The pair's files go to ``cert_dir`` (default: none, the pair is kept in memory)."""
    return CertRotator(
        client=client, namespace=namespace, secret_name=secret,
        dns_names=("localhost", *service_dns_names(service, namespace)), ip_addresses=tuple(ip_addresses),
        cert_dir=cert_dir,
        client_ca=True, clients={client_secret: client_name})
