"""One dev cluster for the whole e2e run, and small helpers to talk to it.

The session fixture reuses a dev cluster that is already up (``pykueue dev up``) and
leaves it running, or starts one and stops it at the end of the session. It never skips:
without built binaries it fails and says how to build them (``make test`` does).

Every test under this directory is marked ``e2e`` by where it lives (the collection hook
below), whether or not its module says so: each needs the dev cluster, a control plane of
its own or the binaries ``make test`` builds, so ``pytest -m "not e2e"`` leaves them all out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient

from pykueue.devcluster import cluster, processes
from pykueue.devcluster.build import missing_binaries
from pykueue.devcluster.paths import bin_root

REPO = Path(__file__).resolve().parents[2]
E2E_DIR = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test collected from this directory ``e2e`` (pytest calls this hook with
    the items of the whole session, so each is checked for where it lives)."""
    for item in items:
        if item.path.resolve().is_relative_to(E2E_DIR):
            item.add_marker(pytest.mark.e2e)
    # Tests that wait for the cluster to age run last, when it has (the same assertions, less
    # waiting): the order of the others is kept.
    items.sort(key=lambda item: item.get_closest_marker("late") is not None)


def wait_until(what: str, check: Callable[[], Any], deadline_s: float = 60.0, poll_s: float = 0.25) -> Any:
    """Poll ``check`` until it returns something truthy; fail the test at the deadline."""
    started = time.monotonic()
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() - started > deadline_s:
            pytest.fail(f"timed out after {deadline_s:.0f}s waiting for {what}")
        time.sleep(poll_s)


def bearer_get(url: str, token: str | None, timeout_s: float = 5.0) -> tuple[int, str]:
    """GET ``url`` (pykueue's ``/metrics``, a probe) with ``Authorization: Bearer token`` (no
    header when None): the status and the body, refusals included."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def dev_pykueue() -> tuple[processes.ProcessRecord, list[str]]:
    """The dev cluster's running ``pykueue run``: its record, and its command line with this
    test's Python (for a test that runs another one like it)."""
    state = cluster.current_state()
    record = state.record("pykueue") if state is not None else None
    if record is None or not processes.is_running(record):
        pytest.fail("the dev cluster runs no pykueue (`pykueue dev up` starts it)")
    return record, [sys.executable, *record.argv[1:]]


@dataclass(frozen=True)
class DevCluster:
    kubeconfig: Path
    server: str

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                                capture_output=True, text=True, timeout=timeout_s, check=False)
        if check and result.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def apply(self, manifest: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))

    async def api_client(self) -> ApiClient:
        """A kubernetes-asyncio client for this cluster; use it with ``async with``."""
        return await kube_config.new_client_from_config(config_file=str(self.kubeconfig))

    def dev(self, *args: str, timeout_s: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run the dev-cluster CLI (``python -m pykueue.devcluster ...``) as a user would."""
        return subprocess.run([sys.executable, "-m", "pykueue.devcluster", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout_s, check=False)

    def namespace(self) -> str:
        """A fresh namespace whose default ServiceAccount exists (pods need it)."""
        name = f"e2e-{uuid.uuid4().hex[:8]}"
        self.kubectl("create", "namespace", name)
        wait_until(f"ServiceAccount {name}/default",
                   lambda: self.kubectl("get", "serviceaccount", "default", "-n", name,
                                        check=False).returncode == 0, 30.0)
        return name


@pytest.fixture(scope="session")
def dev_cluster() -> Iterator[DevCluster]:
    missing = missing_binaries()
    if missing:
        pytest.fail(f"the dev-cluster binaries are not built ({', '.join(missing)} missing under "
                    f"{bin_root()}); "
                    "run `python -m pykueue.devcluster build` first (`make test` does)", pytrace=False)
    try:
        result = cluster.up(report=lambda message: print(message, file=sys.stderr))
    except Exception as exc:
        pytest.fail(f"the dev cluster did not start: {exc}", pytrace=False)
    try:
        yield DevCluster(result.kubeconfig, result.server)
    finally:
        if not result.reused:
            cluster.down(report=lambda message: print(message, file=sys.stderr))


@pytest.fixture(scope="session")
def metrics_token(dev_cluster: DevCluster) -> str:
    """A bearer token that may read pykueue's ``/metrics``: the dev metrics reader's."""
    return cluster.metrics_token(dev_cluster.kubeconfig)


@pytest.fixture
def namespace(dev_cluster: DevCluster) -> Iterator[str]:
    name = dev_cluster.namespace()
    yield name
    dev_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
