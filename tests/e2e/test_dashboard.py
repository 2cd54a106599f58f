"""The web dashboard in a real (headless) browser, against the dev cluster.

The browser opens the ``dashboard:`` link exactly as ``pykueue dev up`` prints it and signs in
with the form it leads to (the token filled in from the link), and the page is compared
with what the API reports: ClusterQueues and their pending counts, a Job
admitted while the page is open (shown within 2 s, without a reload), a pending workload's
reason. Real tokens: a bad one gets 401, a ServiceAccount's without rights 403 until a Role
grants its namespace. Screenshots go to ``$PYKUEUE_E2E_ARTIFACTS/dashboard`` (default: the
temporary directory's ``artifacts/dashboard``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import keys

from .browser import Page, headless_chromium
from .conftest import DevCluster, wait_until
from .test_tas_manager import TasQueue, admitted_assignment, rack_job, tas_queue, workload_of

__all__ = ["tas_queue"]  # the fixture, shared with the TAS tests

pytestmark = pytest.mark.e2e

ARTIFACTS = Path(os.environ.get("PYKUEUE_E2E_ARTIFACTS")
                 or Path(tempfile.gettempdir()) / "artifacts") / "dashboard"
FLAVOR = "dashboard-flavor"
LIVE_LIMIT_S = 2.0


@pytest.fixture(scope="module")
def dashboard_link(dev_cluster: DevCluster) -> str:
    """The ``dashboard:`` line of ``dev up``, as a user would copy it into a browser."""
    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("kubeconfig: "), "kubeconfig stays the last line"
    (link,) = [line.split(": ", 1)[1] for line in lines if line.startswith("dashboard: ")]
    assert link.startswith("http://") and ("/?token=" in link or "/#token=" in link)
    return link


@pytest.fixture(autouse=True)
def _drop_cluster_queue(dev_cluster: DevCluster, namespace: str) -> Iterator[None]:
    yield
    dev_cluster.kubectl("delete", "clusterqueues.kueue.x-k8s.io", f"dash-{namespace}", "--wait=false",
                        "--ignore-not-found", check=False)


def _base(link: str) -> str:
    return link.split("/?token=", 1)[0].split("/#token=", 1)[0]


async def _sign_in(page: Page, link: str) -> None:
    """Open a link carrying a token: it leads to the sign-in form, filled in; sign in there."""
    await page.goto(link)
    await page.wait_for("the sign-in form filled in from the link",
                        "location.pathname === '/login' && document.getElementById('token')?.value")
    assert "token=" not in await page.evaluate("location.href"), "the token left the address bar"
    await page.evaluate("document.querySelector('form[action=\"/login\"] button').click()")
    await page.wait_for("the dashboard after signing in",
                        "location.pathname === '/' && document.readyState === 'complete' "
                        "&& !!document.getElementById('live')")


def _queues(dev_cluster: DevCluster, namespace: str, cpu: str, cohort: str | None = None) -> str:
    cq = f"dash-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
                       "spec": {}})
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    flavors = [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": selector, **({"cohortName": cohort} if cohort else {}),
                                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})
    return cq


def _job(dev_cluster: DevCluster, namespace: str, name: str) -> None:
    # Runs for ten minutes: it keeps its quota for the whole test.
    dev_cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "10m"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}})


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == kind), None)


def _workload_of(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        if any(r["kind"] == "Job" and r["name"] == job for r in wl["metadata"].get("ownerReferences") or ()):
            return dict(wl)
    return None


def _holds_quota(wl: dict[str, Any] | None) -> bool:
    return wl is not None and (_condition(wl, "QuotaReserved") or {}).get("status") == "True"


def _status(url: str, token: str | None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


async def _shot(page: Page, name: str) -> None:
    await page.screenshot(ARTIFACTS / f"{name}.png")


async def test_the_page_lists_the_cluster_queues_with_the_pending_counts_the_api_reports(
        dev_cluster: DevCluster, namespace: str, dashboard_link: str) -> None:
    cq = _queues(dev_cluster, namespace, "1", cohort=f"cohort-{namespace}")  # a tree of its own
    for name in ("first", "second", "third"):
        _job(dev_cluster, namespace, name)
    wait_until("two of the three Jobs to wait in the ClusterQueue", lambda: (dev_cluster.get_json(
        "clusterqueues.kueue.x-k8s.io", cq).get("status") or {}).get("pendingWorkloads") == 2, 60)
    async with headless_chromium() as page:
        await _sign_in(page, dashboard_link)
        await page.wait_for("the live stream", "document.getElementById('live').textContent === 'live'")

        def reported() -> dict[str, int]:
            items = dev_cluster.get_json("clusterqueues.kueue.x-k8s.io")["items"]
            return {q["metadata"]["name"]: int((q.get("status") or {}).get("pendingWorkloads") or 0)
                    for q in items}

        shown: dict[str, int] = {}
        deadline = time.monotonic() + 30
        while True:  # both sides settle: the API's counts are written about every second
            api = reported()
            shown = await page.evaluate(
                "Object.fromEntries([...document.querySelectorAll('#clusterqueues tr[data-cq]')]"
                ".map(r => [r.dataset.cq, Number(r.querySelector('.pending').textContent)]))")
            if shown == api or time.monotonic() > deadline:
                break
            await page.wait_for("a newer revision", f"Number(document.body.dataset.revision) > "
                                f"{await page.evaluate('Number(document.body.dataset.revision)')}", 2)
        assert shown == api and shown[cq] == 2
        depth = await page.evaluate(f"[...document.querySelectorAll('#clusterqueues tr')]"
                                    f".findIndex(r => r.dataset.cohort === 'cohort-{namespace}')")
        assert depth >= 0, "the ClusterQueue's cohort is in the tree"
        await _shot(page, "queues")


async def test_a_job_admitted_while_the_page_is_open_shows_up_within_two_seconds(
        dev_cluster: DevCluster, namespace: str, dashboard_link: str) -> None:
    _queues(dev_cluster, namespace, "2")
    async with headless_chromium() as page:
        await _sign_in(page, dashboard_link)
        await page.wait_for("the live stream", "document.getElementById('live').textContent === 'live'")
        await page.evaluate("window.stillTheSamePage = true")
        _job(dev_cluster, namespace, "live")
        shown_js = (f"[...document.querySelectorAll('#admitted tr[data-workload]')]"
                    f".some(r => r.dataset.workload.startsWith('{namespace}/'))")
        admitted_at = shown_at = None
        deadline = time.monotonic() + 60
        while shown_at is None or admitted_at is None:
            if admitted_at is None and _holds_quota(_workload_of(dev_cluster, namespace, "live")):
                admitted_at = time.monotonic()
            if shown_at is None and await page.evaluate(shown_js):
                shown_at = time.monotonic()
            assert time.monotonic() < deadline, f"admitted at {admitted_at}, shown at {shown_at}"
            if admitted_at is not None and shown_at is None:
                assert time.monotonic() - admitted_at <= LIVE_LIMIT_S, "not shown 2 s after the admission"
        assert shown_at - admitted_at <= LIVE_LIMIT_S
        assert await page.evaluate("window.stillTheSamePage === true"), "the page was reloaded"
        await _shot(page, "admitted-live")


async def test_a_pending_workloads_page_shows_why_it_waits(
        dev_cluster: DevCluster, namespace: str, dashboard_link: str) -> None:
    _queues(dev_cluster, namespace, "1")
    _job(dev_cluster, namespace, "runs")
    wait_until("the first Job's admission",
               lambda: _holds_quota(_workload_of(dev_cluster, namespace, "runs")))
    _job(dev_cluster, namespace, "waits")

    def pending_reason() -> dict[str, Any] | None:
        wl = _workload_of(dev_cluster, namespace, "waits")
        condition = _condition(wl, "QuotaReserved") if wl else None
        return {"name": wl["metadata"]["name"], **condition} if wl and condition \
            and condition["status"] == "False" and condition.get("message") else None

    waiting = wait_until("the second Job's pending reason", pending_reason, 60)
    async with headless_chromium() as page:
        await _sign_in(page, dashboard_link)
        await page.evaluate(f"location.hash = '#/workload/{namespace}/{waiting['name']}'")
        # The page follows the core live; the API's condition may be written a moment later.
        wanted = json.dumps([waiting["reason"], waiting["message"]])
        await page.wait_for(f"the reason {wanted}",
                            f"{wanted}.every(t => document.getElementById('reason')"
                            f"?.textContent.includes(t))")
        text = await page.evaluate("document.getElementById('reason').textContent")
        assert "insufficient unused quota" in text
        await page.wait_for("the explanation with the queue position",
                            "document.getElementById('explanation')?.textContent.includes('Position 1 of 1')")
        await _shot(page, "pending-workload")


async def test_a_token_needs_rights_and_a_bad_one_is_refused(
        dev_cluster: DevCluster, namespace: str, dashboard_link: str) -> None:
    base = _base(dashboard_link)
    assert _status(f"{base}/api/overview", None) == 401
    assert _status(f"{base}/api/overview", "not-a-token") == 401
    dev_cluster.kubectl("create", "serviceaccount", "viewer", "-n", namespace)
    token = dev_cluster.kubectl("create", "token", "viewer", "-n", namespace).stdout.strip()
    mine = f"{base}/api/workloads?state=pending&namespace={namespace}"
    assert _status(f"{base}/api/clusterqueues", token) == 403
    assert _status(mine, token) == 403
    async with headless_chromium() as page:
        await _sign_in(page, f"{base}/#token={token}")
        error = await page.wait_for("the refusal",
                                    "document.querySelector('#clusterqueues .error')?.textContent")
        assert "Not allowed" in error and "list clusterqueues.kueue.x-k8s.io cluster-wide" in error
        await _shot(page, "forbidden")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "workload-viewer", "namespace": namespace},
            "rules": [{"apiGroups": [keys.GROUP], "resources": ["workloads"], "verbs": ["list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "workload-viewer", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "workload-viewer"},
               "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": namespace}]}
    dev_cluster.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                               "items": [role, binding]}))
    wait_until("the Role to take effect", lambda: _status(mine, token) == 200, 30)
    assert _status(f"{base}/api/workloads?state=pending", token) == 403  # not cluster-wide
    assert _status(f"{base}/api/topology", token) == 403
    _queues(dev_cluster, namespace, "1")
    _job(dev_cluster, namespace, "mine")
    wait_until("the Job's admission", lambda: _holds_quota(_workload_of(dev_cluster, namespace, "mine")))
    async with headless_chromium() as page:  # the namespace's own view works for this viewer
        await _sign_in(page, f"{base}/#token={token}")
        await page.evaluate(f"location.hash = '#/namespace/{namespace}'")
        await page.wait_for("the namespace's admitted workload",
                            f"!!document.querySelector('#admitted tr[data-workload^=\"{namespace}/\"]')")
        await page.wait_for("the live stream", "document.getElementById('live').textContent === 'live'")
        await _shot(page, "namespace-viewer")


async def test_the_topology_page_draws_the_domains_a_workload_was_placed_in(
        dev_cluster: DevCluster, tas_queue: TasQueue, dashboard_link: str) -> None:
    namespace = tas_queue.namespace
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(rack_job("racked", 3)))
    placed = admitted_assignment(dev_cluster, namespace, "racked")  # node -> pods, from the API
    wl = workload_of(dev_cluster, namespace, "racked")
    assert wl is not None
    key = f"{namespace}/{wl['metadata']['name']}"
    async with headless_chromium() as page:
        await _sign_in(page, dashboard_link)
        await page.evaluate("location.hash = '#/topology'")
        shown = await page.wait_for(
            "the workload on its nodes",
            f"(() => {{ const out = {{}};"
            f" for (const w of document.querySelectorAll('[data-flavor=\"{tas_queue.flavor}\"] .wl')) {{"
            f"  if (w.dataset.workload === {json.dumps(key)})"
            f"   out[w.closest('[data-domain]').dataset.domain] = Number(w.dataset.pods); }}"
            f" return Object.keys(out).length ? out : null; }})()")
        assert shown == placed
        await _shot(page, "topology")
        await page.evaluate(f"location.hash = '#/workload/{key}'")
        drawn = await page.wait_for("the assignment's domains",
                                    "[...document.querySelectorAll('#admission .domain h4')]"
                                    ".map(e => e.textContent.split(' / ').pop()).sort().join(',')")
        assert drawn == ",".join(sorted(placed))
        await _shot(page, "admitted-workload")
