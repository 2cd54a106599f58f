"""Kubeconfig files for the admin user and for each control-plane component.

Certificates are embedded (``*-data`` fields) so a kubeconfig stays valid when copied
or read from another working directory; files are private because they hold keys.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from pykueue.devcluster.pki import CertKey

CLUSTER_NAME = "pykueue-dev"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def render(server: str, ca_pem: bytes, user: str, credentials: CertKey) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME,
                      "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": user,
                   "user": {"client-certificate-data": _b64(credentials.cert_pem),
                            "client-key-data": _b64(credentials.key_pem)}}],
        "contexts": [{"name": f"{user}@{CLUSTER_NAME}",
                      "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": f"{user}@{CLUSTER_NAME}",
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write(path: Path, server: str, ca_pem: bytes, user: str, credentials: CertKey) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(render(server, ca_pem, user, credentials))
