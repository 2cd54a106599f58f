"""The control-plane components: their files, flags and health endpoints.

This module only *describes* the cluster (what to write, which argv to run, where to
probe); ``cluster.py`` decides when. Every listener binds 127.0.0.1 on a port chosen at
start, every connection between components is TLS with certificates from ``pki.py``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import kubeconfig
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR
from pykueue.devcluster.pki import Authority, write_signing_key
from pykueue.devcluster.ports import LOOPBACK, free_ports

SERVICE_CIDR = "10.0.0.0/24"
# First address of SERVICE_CIDR: the ``kubernetes`` Service, which the serving cert must name.
KUBERNETES_SERVICE_IP = "10.0.0.1"
POD_CIDR = "10.244.0.0/16"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
FRONT_PROXY_CLIENT = "front-proxy-client"

# Controllers needed by batch workloads and namespaces. Node lifecycle is left out on
# purpose: kwok nodes need no taint management, and on a loaded machine a late heartbeat
# would otherwise taint nodes and evict pods in the middle of a test.
CONTROLLERS = (
    "job-controller",
    "cronjob-controller",
    "garbage-collector-controller",
    "pod-garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "disruption-controller",
    "ttl-after-finished-controller",
)

KWOK_STAGES = DEV_MANIFESTS_DIR / "kwok-stages.yaml"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    etcd_metrics: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(*free_ports(len(dataclasses.fields(cls))))

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ports:
        return cls(**{f.name: int(data[f.name]) for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class Extender:
    """A scheduler extender (pykueue's TAS extender) wired into kube-scheduler."""

    url: str
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    bind_verb: str = "bind"
    ca_file: str | None = None

    def to_config(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "urlPrefix": self.url,
            "filterVerb": self.filter_verb,
            "prioritizeVerb": self.prioritize_verb,
            "bindVerb": self.bind_verb,
            "weight": 1,
            "enableHTTPS": self.url.startswith("https://"),
            "nodeCacheCapable": False,
            "ignorable": False,
        }
        if self.ca_file is not None:
            entry["tlsConfig"] = {"caFile": self.ca_file}
        return entry


@dataclass(frozen=True)
class Layout:
    """Files of one cluster inside the state directory."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    def pem(self, name: str) -> Path:
        return self.pki / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.pki / f"{name}.key"

    def component_kubeconfig(self, component: str) -> Path:
        return self.root / f"{component}.kubeconfig"

    @property
    def scheduler_config(self) -> Path:
        return self.root / "kube-scheduler.yaml"

    @property
    def kwok_home(self) -> Path:
        return self.root / "kwok-home"


@dataclass(frozen=True)
class Component:
    name: str
    argv: list[str]
    health_url: str
    # The API server's /readyz needs a client certificate; the others allow it anonymously.
    health_needs_client_cert: bool = False
    env: dict[str, str] | None = None


def apiserver_url(ports: Ports) -> str:
    return f"https://{LOOPBACK}:{ports.apiserver}"


def write_pki_and_configs(layout: Layout, ports: Ports, extender: Extender | None) -> None:
    """Everything the components read at start: certificates, kubeconfigs, configs."""
    for directory in (layout.root, layout.pki, layout.logs, layout.etcd_data, layout.kwok_home):
        directory.mkdir(parents=True, exist_ok=True)
    # The state directory holds private keys: readable by the owner only.
    for private in (layout.root, layout.pki, layout.etcd_data):
        os.chmod(private, 0o700)
    ca = Authority("pykueue-dev-ca")
    ca.write(layout.pem("ca"), layout.key("ca"))
    front_proxy_ca = Authority("pykueue-dev-front-proxy-ca")
    front_proxy_ca.write(layout.pem("front-proxy-ca"))
    write_signing_key(layout.key("sa"), layout.pki / "sa.pub")

    loopback_names = ("localhost",)
    ca.issue("etcd", dns_names=loopback_names, ip_addresses=(LOOPBACK,), server=True,
             client=True).write(layout.pem("etcd"), layout.key("etcd"))
    ca.issue("kube-apiserver-etcd-client", client=True).write(
        layout.pem("apiserver-etcd-client"), layout.key("apiserver-etcd-client"))
    ca.issue("kube-apiserver",
             dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                        "kubernetes.default.svc.cluster.local"),
             ip_addresses=(LOOPBACK, KUBERNETES_SERVICE_IP), server=True).write(
        layout.pem("apiserver"), layout.key("apiserver"))
    front_proxy_ca.issue(FRONT_PROXY_CLIENT, client=True).write(
        layout.pem("front-proxy-client"), layout.key("front-proxy-client"))
    for name in ("kube-controller-manager", "kube-scheduler"):
        ca.issue(name, dns_names=loopback_names, ip_addresses=(LOOPBACK,), server=True).write(
            layout.pem(f"{name}-serving"), layout.key(f"{name}-serving"))

    server = apiserver_url(ports)
    identities = {
        # (kubeconfig file, user, groups): the components use their built-in RBAC identities;
        # kwok fakes kubelets for every node and gets the admin identity.
        "admin": ("kubernetes-admin", ("system:masters",)),
        "kube-controller-manager": ("system:kube-controller-manager", ()),
        "kube-scheduler": ("system:kube-scheduler", ()),
        "kwok": ("kwok-controller", ("system:masters",)),
    }
    for component, (user, groups) in identities.items():
        path = layout.admin_kubeconfig if component == "admin" else layout.component_kubeconfig(component)
        credentials = ca.issue(user, organizations=groups, client=True)
        if component == "admin":
            credentials.write(layout.pem("admin"), layout.key("admin"))
        kubeconfig.write(path, server, ca.cert_pem, user, credentials)
    write_scheduler_config(layout, extender)


def write_scheduler_config(layout: Layout, extender: Extender | None) -> None:
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(layout.component_kubeconfig("kube-scheduler")),
                             "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    if extender is not None:
        config["extenders"] = [extender.to_config()]
    layout.scheduler_config.write_text(yaml.safe_dump(config, sort_keys=False))


def components(binaries: Mapping[str, Path], layout: Layout, ports: Ports) -> list[Component]:
    """In start order: etcd, then the API server, then its clients."""
    pem, key = layout.pem, layout.key
    etcd_url = f"https://{LOOPBACK}:{ports.etcd_client}"
    peer_url = f"http://{LOOPBACK}:{ports.etcd_peer}"
    etcd = Component("etcd", [
        str(binaries["etcd"]),
        "--name=pykueue-dev",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={etcd_url}",
        f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=pykueue-dev={peer_url}",
        f"--listen-metrics-urls=http://{LOOPBACK}:{ports.etcd_metrics}",
        f"--cert-file={pem('etcd')}", f"--key-file={key('etcd')}",
        f"--trusted-ca-file={pem('ca')}", "--client-cert-auth=true",
        # A throwaway test cluster: durability is not worth an fsync per write.
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ], f"http://{LOOPBACK}:{ports.etcd_metrics}/health")

    apiserver = Component("kube-apiserver", [
        str(binaries["kube-apiserver"]),
        f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}",
        f"--secure-port={ports.apiserver}",
        f"--cert-dir={layout.pki}",
        f"--tls-cert-file={pem('apiserver')}", f"--tls-private-key-file={key('apiserver')}",
        f"--client-ca-file={pem('ca')}",
        f"--etcd-servers={etcd_url}",
        f"--etcd-cafile={pem('ca')}", f"--etcd-certfile={pem('apiserver-etcd-client')}",
        f"--etcd-keyfile={key('apiserver-etcd-client')}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,"
        "DefaultTolerationSeconds,Priority,ResourceQuota,NodeRestriction,"
        "MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
        # Without node-lifecycle-controller nobody would lift the not-ready taint that
        # this plugin puts on every new Node, and pods would never schedule.
        "--disable-admission-plugins=TaintNodesByCondition",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={layout.pki / 'sa.pub'}",
        f"--service-account-signing-key-file={key('sa')}",
        "--allow-privileged=true",
        # The ``kubernetes`` Service cannot point at a loopback address (Endpoints validation
        # rejects it) and nothing in a kwok cluster dials it; do not retry forever in the log.
        "--endpoint-reconciler-type=none",
        # Aggregation layer: the API server proxies APIService-backed APIs (pykueue's
        # visibility API) with the front-proxy identity and requestheader headers.
        f"--requestheader-client-ca-file={pem('front-proxy-ca')}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pem('front-proxy-client')}",
        f"--proxy-client-key-file={key('front-proxy-client')}",
        # Route APIServices through their Service's ClusterIP resolver, not its endpoints:
        # that resolver also accepts a Service of type ExternalName (``localhost``), which is
        # how an aggregated server running on the host is reached. Endpoint routing would need
        # an Endpoints address on loopback, which validation rejects.
        "--enable-aggregator-routing=false",
        # The limits Kueue's performance runner uses, so benchmarks compare like for like.
        "--max-requests-inflight=5000",
        "--max-mutating-requests-inflight=2500",
        "--profiling=false",
    ], f"{apiserver_url(ports)}/readyz", health_needs_client_cert=True)

    cm_kubeconfig = str(layout.component_kubeconfig("kube-controller-manager"))
    controller_manager = Component("kube-controller-manager", [
        str(binaries["kube-controller-manager"]),
        f"--kubeconfig={cm_kubeconfig}",
        f"--authentication-kubeconfig={cm_kubeconfig}",
        f"--authorization-kubeconfig={cm_kubeconfig}",
        f"--bind-address={LOOPBACK}", f"--secure-port={ports.controller_manager}",
        f"--cert-dir={layout.pki}",
        f"--tls-cert-file={pem('kube-controller-manager-serving')}",
        f"--tls-private-key-file={key('kube-controller-manager-serving')}",
        f"--root-ca-file={pem('ca')}",
        f"--service-account-private-key-file={key('sa')}",
        "--use-service-account-credentials=true",
        f"--controllers={','.join(CONTROLLERS)}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--leader-elect=false",
        "--kube-api-qps=200", "--kube-api-burst=400",
        "--profiling=false",
    ], f"https://{LOOPBACK}:{ports.controller_manager}/healthz")

    sched_kubeconfig = str(layout.component_kubeconfig("kube-scheduler"))
    scheduler = Component("kube-scheduler", [
        str(binaries["kube-scheduler"]),
        f"--config={layout.scheduler_config}",
        f"--authentication-kubeconfig={sched_kubeconfig}",
        f"--authorization-kubeconfig={sched_kubeconfig}",
        f"--bind-address={LOOPBACK}", f"--secure-port={ports.scheduler}",
        f"--cert-dir={layout.pki}",
        f"--tls-cert-file={pem('kube-scheduler-serving')}",
        f"--tls-private-key-file={key('kube-scheduler-serving')}",
    ], f"https://{LOOPBACK}:{ports.scheduler}/healthz")

    kwok = Component("kwok", [
        str(binaries["kwok"]),
        f"--config={KWOK_STAGES}",
        f"--kubeconfig={layout.component_kubeconfig('kwok')}",
        "--manage-nodes-with-label-selector=type=kwok",
        f"--cidr={POD_CIDR}",
        f"--node-ip={LOOPBACK}",
        f"--server-address={LOOPBACK}:{ports.kwok}",
    ], f"http://{LOOPBACK}:{ports.kwok}/healthz",
        # kwok also reads ~/.kwok/kwok.yaml when present; a private HOME keeps a user's
        # own kwok configuration out of the dev cluster.
        env={**os.environ, "HOME": str(layout.kwok_home)})

    return [etcd, apiserver, controller_manager, scheduler, kwok]
