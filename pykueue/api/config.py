"""The Kueue manager configuration file (``config.kueue.x-k8s.io/v1beta2`` Configuration).

Unlike the CRDs its defaults are applied in code by Kueue, some depending on other fields
(the managed-jobs namespace selector excludes the configured namespace; the pods-ready
recovery timeout follows the timeout), so those live in :meth:`Configuration.after_defaults`.
Durations are kept as the Go duration strings Kueue reads and prints (``30m0s``).
"""

from __future__ import annotations

import re
from typing import Any

from pykueue.api.fields import Model, f
from pykueue.api.meta import LabelSelector, LabelSelectorRequirement
from pykueue.api.quantity import Quantity

CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIG_API_VERSION = f"{CONFIG_GROUP}/v1beta2"
CONFIG_API_VERSION_V1BETA1 = f"{CONFIG_GROUP}/v1beta1"

DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_WEBHOOK_PORT = 9443
DEFAULT_WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
DEFAULT_METRICS_BIND_ADDRESS = ":8443"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS = ":8081"
DEFAULT_LEADER_ELECTION_ID = "c1f6bfd2.kueue.x-k8s.io"
DEFAULT_CLIENT_QPS = 300.0
DEFAULT_CLIENT_BURST = 500
DEFAULT_FRAMEWORK = "batch/job"
DEFAULT_MULTIKUEUE_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class ControllerWebhook(Model):
    port: int | None = f(default=DEFAULT_WEBHOOK_PORT)
    host: str | None = f()
    cert_dir: str | None = f(default=DEFAULT_WEBHOOK_CERT_DIR)


class CustomMetricLabel(Model):
    name: str = f(required=True)
    source_label_key: str | None = f()
    source_annotation_key: str | None = f()


class LocalQueueMetrics(Model):
    enable: bool | None = f()
    local_queue_selector: LabelSelector | None = f()


class ControllerMetrics(Model):
    bind_address: str | None = f(default=DEFAULT_METRICS_BIND_ADDRESS)
    enable_cluster_queue_resources: bool | None = f()
    custom_labels: list[CustomMetricLabel] | None = f(max_items=8)
    local_queue_metrics: LocalQueueMetrics | None = f(default={"enable": True})


class ControllerHealth(Model):
    health_probe_bind_address: str | None = f(default=DEFAULT_HEALTH_PROBE_BIND_ADDRESS)
    readiness_endpoint_name: str | None = f()
    liveness_endpoint_name: str | None = f()


class LeaderElection(Model):
    """component-base LeaderElectionConfiguration with Kueue's and the recommended defaults."""

    leader_elect: bool | None = f(default=True)
    lease_duration: str | None = f(default="15s")
    renew_deadline: str | None = f(default="10s")
    retry_period: str | None = f(default="2s")
    resource_lock: str | None = f(default="leases")
    resource_name: str | None = f(default=DEFAULT_LEADER_ELECTION_ID)
    resource_namespace: str | None = f()


class ControllerConfiguration(Model):
    group_kind_concurrency: dict[str, int] | None = f()
    # A Go time.Duration, which JSON carries as integer nanoseconds.
    cache_sync_timeout: int | str | None = f()


class TLSOptions(Model):
    min_version: str | None = f()
    cipher_suites: list[str] | None = f()
    curve_preferences: list[str] | None = f()


class InternalCertManagement(Model):
    enable: bool | None = f(default=True)
    webhook_service_name: str | None = f()
    webhook_secret_name: str | None = f()

    def after_defaults(self) -> None:
        if self.enable:
            self.webhook_service_name = self.webhook_service_name or "kueue-webhook-service"
            self.webhook_secret_name = self.webhook_secret_name or "kueue-webhook-server-cert"


class RequeuingStrategy(Model):
    timestamp: str | None = f(default="Eviction", enum=("Eviction", "Creation"))
    backoff_limit_count: int | None = f()
    backoff_base_seconds: int | None = f(default=60)
    backoff_max_seconds: int | None = f(default=3600)


class WaitForPodsReady(Model):
    timeout: str | None = f(default="30m0s")
    block_admission: bool | None = f(default=False)
    requeuing_strategy: RequeuingStrategy | None = f(default={})
    recovery_timeout: str | None = f()
    max_timeout_on_workload: str | None = f(default="2h0m0s")

    def after_defaults(self) -> None:
        if self.recovery_timeout is None:
            self.recovery_timeout = self.timeout


class ClientConnection(Model):
    qps: float | None = f(default=DEFAULT_CLIENT_QPS)
    burst: int | None = f(default=DEFAULT_CLIENT_BURST)


class Integrations(Model):
    frameworks: list[str] | None = f()
    external_frameworks: list[str] | None = f()
    label_keys_to_copy: list[str] | None = f()

    def after_defaults(self) -> None:
        if not self.frameworks:
            self.frameworks = [DEFAULT_FRAMEWORK]


class MultiKueueExternalFramework(Model):
    name: str = f(required=True)


class IncrementalDispatcherConfig(Model):
    step_size: int | None = f(default=3)


class MultiKueue(Model):
    gc_interval: str | None = f(json="gcInterval", default="1m0s")
    origin: str | None = f(default="multikueue")
    worker_lost_timeout: str | None = f(default="15m0s")
    dispatcher_name: str | None = f(default=DEFAULT_MULTIKUEUE_DISPATCHER)
    external_frameworks: list[MultiKueueExternalFramework] | None = f()
    cluster_profile: dict[str, Any] | None = f()
    incremental_dispatcher_config: IncrementalDispatcherConfig | None = f()

    def after_defaults(self) -> None:
        if self.dispatcher_name == INCREMENTAL_DISPATCHER:
            if self.incremental_dispatcher_config is None:
                self.incremental_dispatcher_config = IncrementalDispatcherConfig()
            self.incremental_dispatcher_config.apply_defaults()


class FairSharingConfig(Model):
    preemption_strategies: list[str] | None = f()


class AdmissionFairSharingConfig(Model):
    usage_half_life_time: str | None = f()
    usage_sampling_interval: str | None = f(default="5m0s")
    resource_weights: dict[str, float] | None = f()


class ResourceTransformation(Model):
    input: str = f(required=True)
    strategy: str | None = f(default="Retain", enum=("Retain", "Replace"))
    multiply_by: str | None = f()
    outputs: dict[str, Quantity] | None = f()


class DeviceClassMapping(Model):
    name: str = f(required=True)
    device_class_names: list[str] = f(required=True)


class ResourcesConfig(Model):
    exclude_resource_prefixes: list[str] | None = f()
    transformations: list[ResourceTransformation] | None = f()
    device_class_mappings: list[DeviceClassMapping] | None = f()
    quota_check_strategy: str | None = f(enum=("BlockUndeclared", "IgnoreUndeclared"))


class WorkloadRetentionPolicy(Model):
    after_finished: str | None = f()
    after_deactivated_by_kueue: str | None = f()


class ObjectRetentionPolicies(Model):
    workloads: WorkloadRetentionPolicy | None = f()


class VisibilityServer(Model):
    bind_address: str | None = f()
    bind_port: int | None = f(default=8082)


class TasScheduler(Model):
    """pykueue's own: the kube-scheduler profile, wired to the TAS extender, that pods of
    topology-aware PodSets are sent to (their schedulerName is set at creation)."""

    scheduler_name: str | None = f(default="pykueue-tas-scheduler")


class Dashboard(Model):
    """pykueue's own: the read-only web dashboard of queues and workloads, served on every
    replica at ``bindAddress`` (host:port); off when unset (``--dashboard-bind-address`` also
    turns it on)."""

    bind_address: str | None = f()


class Configuration(Model):
    api_version: str | None = f()
    kind: str | None = f()
    namespace: str | None = f(default=DEFAULT_NAMESPACE)
    webhook: ControllerWebhook | None = f(default={})
    leader_election: LeaderElection | None = f(default={})
    metrics: ControllerMetrics | None = f(default={})
    health: ControllerHealth | None = f(default={})
    pprof_bind_address: str | None = f()
    controller: ControllerConfiguration | None = f()
    tls: TLSOptions | None = f(json="tls")
    manage_jobs_without_queue_name: bool | None = f(default=False)
    managed_jobs_namespace_selector: LabelSelector | None = f()
    internal_cert_management: InternalCertManagement | None = f(default={})
    wait_for_pods_ready: WaitForPodsReady | None = f(default={})
    client_connection: ClientConnection | None = f(default={})
    integrations: Integrations | None = f(default={})
    multi_kueue: MultiKueue | None = f(default={})
    fair_sharing: FairSharingConfig | None = f()
    admission_fair_sharing: AdmissionFairSharingConfig | None = f()
    resources: ResourcesConfig | None = f()
    feature_gates: dict[str, bool] | None = f()
    object_retention_policies: ObjectRetentionPolicies | None = f()
    visibility_server: VisibilityServer | None = f(default={})
    tas_scheduler: TasScheduler | None = f(default={})
    dashboard: Dashboard | None = f()

    def after_defaults(self) -> None:
        if self.managed_jobs_namespace_selector is None:
            self.managed_jobs_namespace_selector = LabelSelector(match_expressions=[
                LabelSelectorRequirement(key=NAMESPACE_NAME_LABEL, operator="NotIn",
                                         values=["kube-system", self.namespace or DEFAULT_NAMESPACE]),
            ])


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string such as ``1h30m`` or ``2.5s``."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return 0.0
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(body) or not body:
        raise ValueError(f"invalid duration {text!r}")
    return sign * total


def format_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String()`` prints it (``1h30m0s``, ``1.5s``,
    ``-1ns``), to the nanosecond."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns < 10**9:
        unit, scale = next((u, s) for u, s in (("ns", 1), ("µs", 10**3), ("ms", 10**6)) if ns < s * 1000)
        return sign + _decimal(ns, scale) + unit
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _decimal(rest, 10**9) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    return f"{whole}." + str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
