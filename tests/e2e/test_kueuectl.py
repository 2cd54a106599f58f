"""``kubectl kueue`` (pykueue.kueuectl) against the real kueuectl v0.19.2 on the dev cluster.

A module fixture builds a small world in a fresh namespace: a ResourceFlavor, a ClusterQueue
of 3 CPUs, a LocalQueue, one Job admitted and running (two pods) and one pending behind it.
Every check runs both binaries at once with the same arguments and compares stdout, stderr
and exit status after normalising what two runs may differ in: ages and run times in tables,
resourceVersions, uids and creation times (a server dry run makes new ones each time), the
klog prefix kueuectl puts on server warnings, and the names of objects each binary created
for real. kueuectl follows usage errors with its usage text, which ours leaves out: stderr is
compared up to it. Commands that change nothing run two pairs at a time, and a pair that
differs is run again (twice at most) before the difference counts, as a status may have been
written between the two runs.

pykueue differs on purpose in prose only: help texts and completion scripts are its own (their
exit status and shape are checked; completions are compared through the ``__complete``
protocol), and ``version`` names pykueue's version as build metadata of the Kueue release
(``v0.19.2+pykueue.X``), checked by pattern.

A pair that hits a transient cluster fault (the fault tests stop the API server or pykueue's
webhooks at times) is run again; a real binary that is not built fails the module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pykueue import __version__
from pykueue.api import keys
from pykueue.devcluster.build import binary_path
from pykueue.devcluster.versions import BINARIES

from .conftest import DevCluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

NODE_LABELS = {"instance-type": "on-demand"}
TRANSIENT = ("connection refused", "failed calling webhook", "currently unable to handle the request",
             ": EOF", "i/o timeout", "TLS handshake timeout", "context deadline exceeded", "etcdserver",
             "the object has been modified", "connection reset by peer")
RETRY_FOR_S = 90.0
RUNS_ON_DIFFERENCE = 3
PARALLEL_PAIRS = 2
AGE_COLUMNS = ("AGE", "EXEC TIME")
JOB_NAME = "batch.kubernetes.io/job-name"


# -- the two binaries ------------------------------------------------------------------------

def real_kueuectl() -> Path:
    binary = next(b for b in BINARIES if b.name == "kubectl-kueue")
    path = binary_path(binary)
    if not path.is_file():
        pytest.fail(f"the real kueuectl (Kueue v0.19.2's kubectl-kueue) is not built: {path} is missing; "
                    "`python -m pykueue.devcluster build` builds it", pytrace=False)
    return path


def our_kueuectl() -> list[str]:
    script = Path(sys.executable).with_name("kubectl-kueue")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "pykueue.kueuectl.main"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def transient(self) -> bool:
        text = (self.out + self.err).lower()
        return any(marker.lower() in text for marker in TRANSIENT)


@dataclass(frozen=True)
class Pair:
    """One command line for both binaries (it must change nothing stored)."""

    args: tuple[str, ...]
    stdin: str | None = None
    env: dict[str, str] | None = None
    retry: bool = True


@dataclass
class World:
    cluster: DevCluster
    real: Path
    ours: list[str]
    namespace: str
    tag: str
    cq: str
    rf: str
    wl_running: str
    wl_pending: str
    problems: list[str] = field(default_factory=list)
    pending: list[Pair] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig), **extra}

    def both(self, args: Sequence[str], *, stdin: str | None = None, env: dict[str, str] | None = None,
             retry: bool = True) -> tuple[Run, Run]:
        """Both binaries at once (so ages agree), again while the cluster has a transient fault."""
        deadline = time.monotonic() + RETRY_FOR_S
        while True:
            real, ours = self._both_once(args, stdin, env or self.env())
            if not retry or not (real.transient() or ours.transient()) or time.monotonic() > deadline:
                return real, ours
            time.sleep(2.0)

    def _both_once(self, args: Sequence[str], stdin: str | None, env: dict[str, str]) -> tuple[Run, Run]:
        procs = [subprocess.Popen([*command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
                 for command in ([str(self.real)], self.ours)]
        runs = []
        for proc in procs:
            out, err = proc.communicate(stdin, timeout=60)
            runs.append(Run(proc.returncode, out, err))
        return runs[0], runs[1]

    def one(self, which: str, args: Sequence[str], env: dict[str, str] | None = None) -> Run:
        command = [str(self.real)] if which == "real" else self.ours
        result = subprocess.run([*command, *args], capture_output=True, text=True, env=env or self.env(),
                                timeout=60, check=False)
        return Run(result.returncode, result.stdout, result.stderr)

    def same(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
             retry: bool = True) -> None:
        """Both binaries print the same for ``args``. The pairs run a few at a time at the next
        ``flush``; a difference is recorded, not raised, so one test reports all of them."""
        self.pending.append(Pair(args, stdin, env, retry))

    def _compare(self, pair: Pair) -> str:
        """The difference of one pair, run again when it differs: the cluster may have moved
        between the two runs (a status written, a cache refreshed)."""
        problem = ""
        for _ in range(RUNS_ON_DIFFERENCE):
            real, ours = self.both(pair.args, stdin=pair.stdin, env=pair.env, retry=pair.retry)
            problem = difference(real, ours, {})
            if not problem:
                return ""
        return f"$ kubectl kueue {' '.join(pair.args)}\n{problem}"

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        with ThreadPoolExecutor(max_workers=PARALLEL_PAIRS) as pool:
            self.problems.extend(p for p in pool.map(self._compare, pending) if p)

    def record(self, args: Sequence[str], real: Run, ours: Run, names: dict[str, str] | None = None) -> None:
        problem = difference(real, ours, names or {})
        if problem:
            self.problems.append(f"$ kubectl kueue {' '.join(args)}\n{problem}")

    def check(self) -> None:
        self.flush()
        problems, self.problems = self.problems, []
        if problems:
            summary = f"{len(problems)} command(s) differ from kueuectl v0.19.2:\n\n"
            pytest.fail(summary + "\n\n".join(problems), pytrace=False)


# -- normalising two runs --------------------------------------------------------------------

_KLOG = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] "(.*)"$')
_RESOURCE_VERSION = re.compile(r'("resourceVersion": |resourceVersion: )"\d+"')
_PER_OBJECT = re.compile(r'("(?:uid|creationTimestamp)": "|^\s*(?:uid|creationTimestamp): "?)[^"\n]*', re.M)


def _table(text: str) -> list[list[str]] | None:
    """A kubectl table as cells (split at the header's column starts), ages blanked."""
    header, *lines = text.rstrip("\n").split("\n")
    if not re.fullmatch(r"[A-Z][A-Z ()]*", header) or "   " not in header:
        return None
    starts = [0] + [m.end() for m in re.finditer(r" {3,}", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[s:e].strip() for s, e in bounds]
    rows = [names]
    for line in lines:
        cells = [line[s:e].strip() for s, e in bounds]
        rows.append(["<age>" if names[i] in AGE_COLUMNS and cell else cell for i, cell in enumerate(cells)])
    return rows


def normalise_out(text: str, names: dict[str, str]) -> str:
    for name, placeholder in names.items():
        text = text.replace(name, placeholder)
    text = _RESOURCE_VERSION.sub(r'\1"<rv>"', text)
    # Server dry runs make a new uid and creation time each time.
    text = _PER_OBJECT.sub(r"\1<per-object>", text)
    table = _table(text) if text.strip() else None
    return json.dumps(table, indent=1) if table is not None else text


def normalise_err(run: Run, names: dict[str, str]) -> str:
    lines = [(_KLOG.sub(r"\1", line)) for line in run.err.splitlines()]
    if "Usage:" in lines:
        lines = lines[:lines.index("Usage:")]  # kueuectl's usage text after usage errors; ours has none
    text = "\n".join(lines)
    for name, placeholder in names.items():
        text = text.replace(name, placeholder)
    return text


def difference(real: Run, ours: Run, names: dict[str, str]) -> str:
    real_names = {k: v for k, v in names.items() if not k.startswith("ours:")}
    our_names = {k[len("ours:"):]: v for k, v in names.items() if k.startswith("ours:")} or real_names
    out = []
    if real.code != ours.code:
        out.append(f"exit status: kueuectl {real.code}, ours {ours.code}")
    if normalise_out(real.out, real_names) != normalise_out(ours.out, our_names):
        out.append(f"stdout of kueuectl:\n{real.out}\nstdout of ours:\n{ours.out}")
    if normalise_err(real, real_names) != normalise_err(ours, our_names):
        out.append(f"stderr of kueuectl:\n{real.err}\nstderr of ours:\n{ours.err}")
    return "\n".join(out)


# -- the world -------------------------------------------------------------------------------

def _job(name: str, parallelism: int, cpu: str) -> str:
    """A Job whose pods run for an hour in kwok (longer than any test)."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    template = {"metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "3600s"}},
                "spec": {"restartPolicy": "Never", "containers": [container]}}
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
                       "spec": {"parallelism": parallelism, "completions": parallelism, "suspend": True,
                                "template": template}})


def _workloads(cluster: DevCluster, namespace: str) -> dict[str, dict[str, Any]]:
    """The namespace's Workloads by the name of the Job owning them."""
    items = cluster.get_json("workloads", "-n", namespace).get("items") or []
    return {ref["name"]: wl for wl in items for ref in wl["metadata"].get("ownerReferences") or ()}


def _condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def settle(world: World) -> None:
    """Wait until the queues' and Workloads' statuses stop changing (both runs must see one state)."""
    def versions() -> str:
        cq = world.cluster.get_json("clusterqueue", world.cq)
        rest = world.cluster.get_json("localqueues,workloads", "-n", world.namespace)
        return json.dumps([cq["metadata"]["resourceVersion"],
                           [i["metadata"]["resourceVersion"] for i in rest.get("items") or ()]])

    last = ""
    stable_since = time.monotonic()
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        now = versions()
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= 1.5:
            return
        time.sleep(0.3)


def api_ready(cluster: DevCluster) -> None:
    """The fault tests stop the API server for up to a minute at times: wait it out."""
    wait_until("the API server to answer", lambda: cluster.kubectl(
        "get", "--raw", "/readyz", check=False).returncode == 0, RETRY_FOR_S)


@pytest.fixture(scope="module")
def world(dev_cluster: DevCluster) -> Iterator[World]:
    real = real_kueuectl()
    api_ready(dev_cluster)
    namespace = dev_cluster.namespace()
    tag = uuid.uuid4().hex[:6]
    name = f"kctl-{tag}"
    labels = {"kueuectl-e2e": tag}
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                       "metadata": {"name": name, "labels": labels}, "spec": {"nodeLabels": NODE_LABELS}})
    quota = [{"name": "cpu", "nominalQuota": "3"}, {"name": "memory", "nominalQuota": "4Gi"}]
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue",
                       "metadata": {"name": name, "labels": labels},
                       "spec": {"cohortName": f"cohort-{tag}", "namespaceSelector": {},
                                "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                                                    "flavors": [{"name": name, "resources": quota}]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace, "labels": labels},
                       "spec": {"clusterQueue": name}})
    try:
        dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=_job("job-running", 2, "1"))
        wait_until("the running job's Workload to be admitted", lambda: _condition(
            _workloads(dev_cluster, namespace).get("job-running") or {}, "Admitted"))
        dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=_job("job-pending", 1, "2"))
        wait_until("the pending job's Workload", lambda: "job-pending" in _workloads(dev_cluster, namespace))

        def running_pods() -> int:
            pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"{JOB_NAME}=job-running")
            return sum((p.get("status") or {}).get("phase") == "Running" for p in pods.get("items") or ())

        wait_until("the running job's pods to run", lambda: running_pods() == 2)
        found = _workloads(dev_cluster, namespace)
        world = World(dev_cluster, real, our_kueuectl(), namespace, tag, name, name,
                      found["job-running"]["metadata"]["name"], found["job-pending"]["metadata"]["name"])
        wait_until("the queues to count the Workloads", lambda: (
            (dev_cluster.get_json("clusterqueue", name).get("status") or {}).get("pendingWorkloads") == 1))
        settle(world)
        yield world
    finally:
        dev_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        for kind in ("clusterqueue", "resourceflavor"):
            dev_cluster.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)


# -- the checks ------------------------------------------------------------------------------

def test_create_in_dry_run(world: World) -> None:
    quota = ["--nominal-quota", "alpha:cpu=9;memory=36Gi,beta:cpu=1500m;memory=1000Mi",
             "--borrowing-limit", "alpha:cpu=1;memory=1Gi", "--lending-limit", "beta:cpu=1;memory=1Gi"]
    for strategy in ("client", "server"):
        dry = f"--dry-run={strategy}"
        world.same("create", "clusterqueue", "kctl-dry", dry)
        world.same("create", "cq", "kctl-dry", dry, "-o", "yaml", *quota, "--cohort", "c1",
                   "--namespace-selector", "team=a,tier=b", "--queuing-strategy", "StrictFIFO",
                   "--reclaim-within-cohort", "Any", "--preemption-within-cluster-queue", "LowerPriority")
        world.same("create", "cq", "kctl-dry", dry, "-o", "json", *quota)
        world.same("create", "localqueue", "lq-dry", "-c", world.cq, dry, "-n", world.namespace)
        world.same("create", "lq", "lq-dry", "-c", world.cq, dry, "-n", world.namespace, "-o", "yaml")
        world.same("create", "resourceflavor", "kctl-dry", dry, "-o", "json", "--node-labels", "a=b,c=d",
                   "--node-taints", "k1=v:NoSchedule,k2:NoExecute",
                   "--tolerations", "k1=v:NoSchedule,k2:NoExecute,k3=v,k4,:PreferNoSchedule")
    world.same("create", "cq", "kctl-dry", "--dry-run=client", "-o", "name")
    world.same("create", "lq", "lq-dry", "-c", "no-such-cq", "--dry-run=client", "-n", world.namespace)
    world.same("create", "lq", "lq-dry", "-c", "no-such-cq", "-i", "--dry-run=client", "-o", "yaml")
    for bad in (["--nominal-quota", "alpha:cpu=1.5"], ["--nominal-quota", "alpha:cpu=1;"],
                ["--nominal-quota", "alpha:cpu=1", "--borrowing-limit", "alpha:memory=1"],
                ["--nominal-quota", "a:cpu=1;memory=1,b:cpu=1"], ["--namespace-selector", "a"],
                ["--dry-run=maybe"], ["-o", "wide"]):
        world.same("create", "cq", "kctl-dry", "--dry-run=client", *bad)
    for bad in ("k=v", "k:Sometimes", "bad key:NoSchedule", "k:NoSchedule,k:NoSchedule", "a/b/c:NoExecute"):
        world.same("create", "rf", "kctl-dry", "--dry-run=client", "--node-taints", bad)
    world.same("create", "rf", "kctl-dry", "--dry-run=client", "--tolerations", "=v")
    world.same("create", "lq", "lq-dry", "--dry-run=client")
    world.same("create", "cq", "--dry-run=client")
    world.check()


def test_create_for_real(world: World, namespace: str) -> None:
    """Each binary creates its own objects: the same LocalQueue name in two namespaces, and
    cluster-scoped objects under two names, compared with the names (and uids, times) masked."""
    real_name, our_name = f"kctl-{world.tag}-real", f"kctl-{world.tag}-ours"
    names = {real_name: "<name>", f"ours:{our_name}": "<name>", world.namespace: "<ns>",
             f"ours:{namespace}": "<ns>"}
    try:
        for args in (["create", "rf", "{name}", "--node-labels", "a=b", "-o", "yaml"],
                     ["create", "cq", "{name}", "--cohort", "x", "--nominal-quota", "{name}:cpu=1",
                      "-o", "json"]):
            real = world.one("real", [a.replace("{name}", real_name) for a in args])
            ours = world.one("ours", [a.replace("{name}", our_name) for a in args])
            world.record(args, real, ours, names)
        args = ["create", "lq", "created", "-c", world.cq]
        real = world.one("real", [*args, "-n", world.namespace])
        ours = world.one("ours", [*args, "-n", namespace])
        world.record(args, real, ours, names)
        args = ["create", "lq", "created-too", "-c", world.cq, "-o", "yaml"]
        real = world.one("real", [*args, "-n", world.namespace])
        ours = world.one("ours", [*args, "-n", namespace])
        world.record(args, real, ours, names)
        # Created twice: the API server's AlreadyExists.
        real = world.one("real", ["create", "lq", "created", "-c", world.cq, "-n", world.namespace])
        ours = world.one("ours", ["create", "lq", "created", "-c", world.cq, "-n", namespace])
        world.record(["create", "lq", "created", "(again)"], real, ours, names)
        # And through the pass-through delete.
        for kind in ("clusterqueue", "resourceflavor"):
            real = world.one("real", ["delete", kind, real_name])
            ours = world.one("ours", ["delete", kind, our_name])
            world.record(["delete", kind], real, ours, names)
        real = world.one("real", ["delete", "lq", "created", "created-too", "-n", world.namespace])
        ours = world.one("ours", ["delete", "lq", "created", "created-too", "-n", namespace])
        world.record(["delete", "lq", "created", "created-too"], real, ours, names)
    finally:
        for name in (real_name, our_name):
            world.cluster.kubectl("delete", "clusterqueue,resourceflavor", name, "--ignore-not-found",
                                  "--wait=false", check=False)
    world.check()


def test_lists_in_every_format(world: World) -> None:
    settle(world)
    ns, label = world.namespace, f"kueuectl-e2e={world.tag}"
    for fmt in ([], ["-o", "yaml"], ["-o", "json"]):
        world.same("list", "clusterqueue", "-l", label, *fmt)
        world.same("list", "localqueue", "-n", ns, *fmt)
        world.same("list", "resourceflavor", "-l", label, *fmt)
        world.same("list", "workload", "-n", ns, *fmt)
    names = "jsonpath={.items[*].metadata.name}"
    for fmt in (["-o", "name"], ["-o", "wide"], ["-o", "kyaml"], ["-o", names]):
        world.same("list", "clusterqueue", "-l", label, *fmt)
        world.same("list", "workload", "-n", ns, *fmt)
    world.same("list", "cq", "-l", label, "--active=true")
    world.same("list", "cq", "-l", label, "--active=false")
    world.same("list", "cq", "--field-selector", f"metadata.name={world.cq}")
    world.same("list", "lq", "-A", "-l", label)
    world.same("list", "lq", "-n", ns, "-c", world.cq)
    world.same("list", "kwl", "-A", "--field-selector", f"metadata.namespace={ns}")
    world.same("list", "kueueworkload", "-n", ns, "--status", "pending")
    world.same("list", "workload", "-n", ns, "--status", "admitted", "--status", "finished")
    world.same("list", "workload", "-n", ns, "-q", "lq", "-c", world.cq)
    world.same("list", "workload", "-n", ns, "--for", "job/job-running")
    world.same("list", "workload", "-n", ns, "--for", "jobs.batch/job-pending", "-o", "yaml")
    world.same("list", "workload", "-n", ns, "--for", "job/no-such-job")
    world.same("list", "workload", "-n", ns, "-o",
               "jsonpath={range .items[*]}{.metadata.name}{'\\t'}{.spec.podSets[0].count}{'\\n'}{end}")
    world.same("list", "workload", "-n", ns, "-o", "jsonpath-as-json={.items[*].spec.queueName}")
    world.same("list", "lq", "-n", "no-such-namespace")
    for fmt in ([], ["-o", "wide"], ["-o", "yaml"], ["-o", "json"], ["-o", "name"],
                ["-o", "jsonpath={.metadata.name}"]):
        world.same("list", "pods", "--for", "job/job-running", "-n", ns, *fmt)
    world.same("list", "po", "--for", "job/job-running", "-A", "-l", f"{JOB_NAME}=job-running")
    world.same("list", "pods", "--for", "job/job-pending", "-n", ns)
    world.same("list", "pods", "--for", "configmap/kube-root-ca.crt", "-n", ns)
    world.same("list", "pods", "--for", "job-running", "-n", ns)
    world.check()


def test_stop_and_resume(world: World) -> None:
    ns = world.namespace
    for dry_run in (["--dry-run=client"], ["--dry-run=server", "-o", "yaml"]):
        world.same("stop", "clusterqueue", world.cq, *dry_run)
        world.same("stop", "lq", "lq", "-n", ns, "--keep-already-running", *dry_run)
        world.same("stop", "workload", world.wl_pending, "-n", ns, *dry_run)
        world.same("resume", "cq", world.cq, *dry_run)
        world.same("resume", "kwl", world.wl_pending, "-n", ns, *dry_run)
    world.same("stop", "cq", "no-such-cq")
    world.same("stop", "workload", "-n", ns)
    world.same("resume", "lq", "lq", "extra", "-n", ns)
    world.flush()
    # For real, one after the other: the second finds the object as the first left it.
    for args in (["stop", "workload", world.wl_pending, "-n", ns],
                 ["resume", "workload", world.wl_pending, "-n", ns],
                 ["stop", "localqueue", "lq", "-n", ns, "--keep-already-running"],
                 ["resume", "localqueue", "lq", "-n", ns],
                 ["stop", "clusterqueue", world.cq, "--keep-already-running"],
                 ["resume", "clusterqueue", world.cq]):
        api_ready(world.cluster)
        real, ours = world.one("real", args), world.one("ours", args)
        world.record(args, real, ours)
    settle(world)
    world.check()


def test_pass_through_to_kubectl(world: World) -> None:
    ns = world.namespace
    world.same("get", "clusterqueue", world.cq, "-o", "yaml")
    world.same("get", "cq", world.cq, "-o", "jsonpath={.spec.cohortName}")
    world.same("get", "localqueue", "-n", ns)
    world.same("get", "lq", "-n", ns, "-o", "name")
    world.same("get", "resourceflavor", world.rf)
    world.same("get", "rf", world.rf, "-o", "json")
    world.same("get", "workload", "-n", ns, "-o", "name")
    world.same("get", "kwl", world.wl_running, "-n", ns, "-o", "jsonpath={.status.admission.clusterQueue}")
    world.same("describe", "cq", world.cq)
    world.same("describe", "localqueue", "lq", "-n", ns)
    world.same("patch", "lq", "lq", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}',
               "--dry-run=server")
    world.same("delete", "rf", world.rf, "--dry-run=server")
    world.same("delete", "lq", "lq", "-n", ns, "--dry-run=client")
    world.same("edit", "cq", world.cq, env=world.env(KUBE_EDITOR="true", EDITOR="true"))
    world.check()


def test_delete_workload(world: World) -> None:
    ns = world.namespace
    world.same("delete", "workload", world.wl_running, "-n", ns, "--dry-run=client")
    world.same("delete", "workload", world.wl_running, "-n", ns, "--dry-run=server")
    world.same("delete", "kwl", "--all", "-n", ns, "--dry-run=client")
    world.same("delete", "workload", "no-such-workload", "-n", ns, "--dry-run=client")
    world.same("delete", "workload", world.wl_running, "-n", ns, stdin="n\n")  # asks, is told no
    world.same("delete", "workload", world.wl_running, "-n", ns, stdin="")
    world.same("delete", "workload", "-n", ns)
    world.same("delete", "workload", "--all", "x", "-n", ns)
    world.same("delete", "workload", "x", "-A")
    world.same("delete", "workload", world.wl_running, "-n", ns, "-o", "yaml")
    world.check()


def test_errors(world: World) -> None:
    for args in (["lst"], ["st"], ["list", "cq", "--bogus"], ["list", "cq", "-Z"], ["list", "lq", "-n"],
                 ["list", "cq", "--active=maybe"], ["list", "pods"], ["version", "extra"],
                 ["--kubeconfig", "/nonexistent/kubeconfig", "list", "cq"],
                 ["--context", "nope", "list", "cq"]):
        world.same(*args)
    world.same("-s", "https://127.0.0.1:1", "--insecure-skip-tls-verify", "list", "cq", retry=False)
    world.check()


def test_help_version_and_completion(world: World) -> None:
    """Help and completion scripts are our own prose: same exit status, something printed.
    Completions themselves are compared through the protocol the scripts use."""
    for args in ([], ["list"], ["get", "wl"], ["list", "cq", "-h"], ["help", "stop"], ["completion", "bash"],
                 ["completion", "zsh"]):
        real, ours = world.both(args)
        if real.code != ours.code or not ours.out.strip() or bool(real.out.strip()) != bool(ours.out.strip()):
            world.problems.append(f"$ kubectl kueue {' '.join(args)}\nexit {real.code}/{ours.code}, "
                                  f"stdout {len(real.out)}/{len(ours.out)} characters")

    real, ours = world.both(["version"])
    first_real, *rest_real = real.out.splitlines() or [""]
    first_ours, *rest_ours = ours.out.splitlines() or [""]
    assert first_real == "Client Version: v0.19.2", real.out
    assert first_ours == f"Client Version: v0.19.2+pykueue.{__version__}", ours.out
    assert (real.code, rest_real, real.err) == (ours.code, rest_ours, ours.err)

    ns = world.namespace
    for words in (["stop", "workload", "-n", ns, ""], ["resume", "workload", "-n", ns, ""],
                  ["stop", "lq", "-n", ns, ""], ["list", "workload", "-n", ns, "-q", ""],
                  [""], ["list", ""], ["create", "lq", "x", "-"], ["list", "cq", "--"], ["--context", ""],
                  ["list", "cq", ""]):
        world.same("__completeNoDesc", *words)
    world.check()


def test_through_kubectl(world: World) -> None:
    """kubectl runs either as its kueue plugin when it is first on PATH."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not on PATH"
    ours_dir = Path(world.ours[0]).parent if len(world.ours) == 1 else None
    if ours_dir is None:
        pytest.fail("kubectl-kueue is not installed as a console script (pip install -e .)", pytrace=False)
    runs = []
    for directory in (world.real.parent, ours_dir):
        env = world.env(PATH=f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")
        result = subprocess.run([kubectl, "kueue", "list", "lq", "-n", world.namespace], capture_output=True,
                                text=True, env=env, timeout=60, check=False)
        runs.append(Run(result.returncode, result.stdout, result.stderr))
    world.record(["(through kubectl)", "list", "lq"], runs[0], runs[1])
    world.check()
