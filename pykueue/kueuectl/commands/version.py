"""``version``: this client's version, and the queue manager's image when it is installed.

kueuectl prints ``Client Version: <Kueue release>``. Ours names the Kueue release whose API
it speaks with pykueue's version as semver build metadata (``v0.19.2+pykueue.0.1.0``):
tools comparing versions see the Kueue release, people see both. The image line comes from
pykueue's Deployment, or from Kueue's when Kueue itself runs the cluster.
"""

from __future__ import annotations

from pykueue import __version__
from pykueue.kueuectl.cli import Command, Invocation
from pykueue.kueuectl.commands.common import client
from pykueue.kueuectl.transport import ApiError

KUEUE_RELEASE = "v0.19.2"
CLIENT_VERSION = f"{KUEUE_RELEASE}+pykueue.{__version__}"
# (namespace, Deployment, container) of the queue managers, pykueue's first.
MANAGERS = (("pykueue-system", "pykueue-controller-manager", "manager"),
            ("kueue-system", "kueue-controller-manager", "manager"))


def run(inv: Invocation) -> int:
    api = client(inv)
    inv.out.write(f"Client Version: {CLIENT_VERSION}\n")
    inv.out.flush()
    for namespace, name, container in MANAGERS:
        try:
            deployment = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
        except ApiError as exc:
            if exc.not_found:
                continue
            raise
        template = (deployment.get("spec") or {}).get("template") or {}
        for spec in (template.get("spec") or {}).get("containers") or ():
            if spec.get("name") == container:
                inv.out.write(f"Kueue Controller Manager Image: {spec.get('image', '')}\n")
                return 0
    return 0


def command() -> Command:
    return Command("version", "Print the client version and the queue manager's image, if installed",
                   nargs=0, run=run)
