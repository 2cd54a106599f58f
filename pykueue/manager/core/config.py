"""The subset of Kueue's Configuration (config.kueue.x-k8s.io) the core obeys, defaulted as
Kueue v0.19.2 defaults it.

``waitForPodsReady`` follows the Configuration's apiVersion, as Kueue's decoding does:
in ``v1beta2`` (and with no apiVersion, as with no configuration file at all) it is on
unless the ``DisableWaitForPodsReady`` gate is set, the section only tuning it (timeout
30m when unset); a ``v1beta1`` Configuration keeps it off unless ``enable: true`` (timeout
5m and blockAdmission true when unset). ``enable: false`` also turns it off in a
Configuration without apiVersion (scenario files use that spelling). Durations are
Go-style strings ("5m", "1h30m").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykueue.api.config import CONFIG_API_VERSION_V1BETA1
from pykueue.api.config import parse_duration as go_duration
from pykueue.api.field_errors import aggregate, duplicate, invalid, not_supported
from pykueue.api.fields import FieldError
from pykueue.api.quantity import Quantity, QuantityError

from .admission_fair_sharing import AfsConfig, config_from_dict
from .features import gate_enabled
from .resources import Transformation
from .settings import IMMEDIATE, SchedulingSettings
from .tas.node_health import NodeFailureRules

OVERLAPPING_FLAVORS_GATE = "TASHandleOverlappingFlavors"
BALANCED_PLACEMENT_GATE = "TASBalancedPlacement"

TIERED_REASONS_GATE = "UnadmittedWorkloadsObservability"
WORKLOAD_SLICES_GATE = "ElasticJobsViaWorkloadSlices"
PRIORITIZE_PREEMPTORS_GATE = "PrioritizePreemptorWorkloads"
DISABLE_WAIT_FOR_PODS_READY_GATE = "DisableWaitForPodsReady"
QUOTA_CHECK_STRATEGY_GATE = "QuotaCheckStrategy"
IGNORE_UNDECLARED = "IgnoreUndeclared"
# In the order Kueue's validation lists them.
QUOTA_CHECK_STRATEGIES = (IGNORE_UNDECLARED, "BlockUndeclared")
TRANSFORMATION_STRATEGIES = ("Retain", "Replace")
QUOTA_CHECK_PATH = "resources.quotaCheckStrategy"
# Kueue's waitForPodsReady timeout when the section leaves it unset: v1beta2, v1beta1.
DEFAULT_PODS_READY_TIMEOUT = "30m"
V1BETA1_PODS_READY_TIMEOUT = "5m"


class ConfigError(ValueError):
    pass


def parse_duration(value: Any) -> float:
    """Go duration ("30s", "5m", "1h30m") or a plain number of seconds -> seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        return go_duration(str(value))
    except ValueError as exc:
        raise ConfigError(f"invalid duration {value!r}") from exc


@dataclass(frozen=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_limit_count: int | None = None
    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0

    def delay(self, count: int) -> float:
        """Exponential backoff before the ``count``-th requeue (count >= 1)."""
        return float(min(self.backoff_base_seconds * 2 ** (count - 1), self.backoff_max_seconds))


@dataclass(frozen=True)
class WaitForPodsReady:
    timeout: float = 300.0
    block_admission: bool = False
    recovery_timeout: float | None = None
    requeuing: RequeuingStrategy = RequeuingStrategy()


@dataclass(frozen=True)
class CoreConfig:
    wait_for_pods_ready: WaitForPodsReady | None = None
    requeuing: RequeuingStrategy = RequeuingStrategy()  # also used for admission-check retries
    partial_admission: bool = True
    transformations: dict[str, Transformation] = field(default_factory=dict)
    excluded_prefixes: tuple[str, ...] = ()
    # Configuration resources.quotaCheckStrategy IgnoreUndeclared (gate QuotaCheckStrategy, beta
    # and on in v0.19.2): a resource no resource group of the ClusterQueue covers is left out
    # of flavor assignment and quota instead of keeping the workload out (BlockUndeclared).
    ignore_undeclared: bool = False
    # Configuration fairSharing.preemptionStrategies; None when fair sharing is off.
    fair_sharing: tuple[str, ...] | None = None
    # Configuration admissionFairSharing; None when off.
    admission_fair_sharing: AfsConfig | None = None
    # How eagerly the core requeues (see ``settings``): at once unless a process sets the
    # tuned values (the manager runtime: ``settings.TUNED``).
    scheduling: SchedulingSettings = IMMEDIATE
    # Kueue's SchedulingEquivalenceHashing (on by default in Kueue): one NoFit verdict parks
    # every queued workload of the same shape in a BestEffortFIFO queue until the next requeue.
    equivalence_hashing: bool = True
    # Kueue frees an evicted workload's quota only once its job reports no active pods
    # (the job reconciler calls ``QueueingCore.job_stopped``); until then it still counts.
    # The manager runtime sets this; simulate has no pods, so its jobs stop at once.
    hold_quota_until_stopped: bool = False
    # A reservation nobody outside the core has seen yet (its status write has not started)
    # is taken back when it is chosen as a preemption victim, instead of being evicted: its
    # job never started, so there is no Evicted condition to show and nothing to stop. The
    # manager runtime sets this and calls ``QueueingCore.publish`` as a write starts; in
    # simulate every reservation takes effect at once.
    withdraw_unpublished: bool = False
    # Kueue's UnadmittedWorkloadsObservability gate (beta, off by default in v0.19.2):
    # tiered QuotaReserved=False reasons and the unadmitted-workloads metrics.
    tiered_reasons: bool = False
    # Kueue's PrioritizePreemptorWorkloads gate (alpha, off by default in v0.19.2): a
    # workload waiting for its victims goes first in a scheduling cycle (before the
    # non-borrowing ones; first in a fair-sharing tournament too), and with no candidates
    # left it holds what it needs even where its queue may always reclaim.
    prioritize_preemptors: bool = False
    # Kueue's AdmissionGatedBy gate (beta, on by default): the admission-gated-by annotation
    # keeps a workload out of its queue.
    admission_gated_by: bool = True
    # Kueue's ElasticJobsViaWorkloadSlices gate (beta, on by default since v0.18): a slice
    # annotated as the replacement of an admitted one counts that one's quota as its own.
    workload_slices: bool = True
    # Kueue's ReclaimablePods gate (beta, on by default since v0.15): pods a job reports as
    # reclaimable (status.reclaimablePods) need no quota.
    reclaimable_pods: bool = True
    # Kueue's TASHandleOverlappingFlavors gate (beta, on by default since v0.18): TAS usage
    # on a node counts in every flavor whose topology ends at nodes, whichever flavor took it.
    tas_overlapping_flavors: bool = True
    # Kueue's TASBalancedPlacement gate (alpha, off by default): a preferred TAS request is
    # spread evenly over the fewest domains that hold it, when it can be.
    tas_balanced_placement: bool = False
    # Kueue's FlavorFungibilityPreserveScanProgress gate (beta, on by default): a workload's
    # flavor scan progress survives a skip in the cycle, an update of the Workload and the
    # next cycle whatever was released meanwhile.
    preserve_scan_progress: bool = True
    # Kueue's TAS node failure gates (``tas.node_health``): when a node is lost to a workload.
    tas_node_failure: NodeFailureRules = field(default_factory=NodeFailureRules)
    # An AdmissionCheck with no Active condition is taken as Active: scenario files leave
    # the condition out for a controller assumed to run. The manager runtime and the live
    # what-if read checks as Kueue does (inactive until their controller says Active), so
    # a check nothing serves keeps its ClusterQueue inactive.
    unreported_checks_active: bool = True


def _resources(obj: dict[str, Any],
               gates: dict[str, Any]) -> tuple[dict[str, Transformation], tuple[str, ...], bool]:
    """The ``resources`` section: transformations by input, excluded prefixes, and whether
    undeclared resources are ignored (``quotaCheckStrategy: IgnoreUndeclared`` under the
    QuotaCheckStrategy gate). Kueue v0.19.2's checks (``pkg/config/validation.go``) word the
    errors: an unsupported strategy, an input transformed twice, and with the gate on an
    unknown quotaCheckStrategy or IgnoreUndeclared together with excludeResourcePrefixes."""
    res = obj.get("resources") or {}
    if not isinstance(res, dict):
        raise ConfigError("resources is not a mapping")
    errors: list[FieldError] = []
    transformations: dict[str, Transformation] = {}
    for i, t in enumerate(res.get("transformations") or ()):
        if not isinstance(t, dict):
            raise ConfigError(f"resources.transformations[{i}] is not a mapping")
        try:
            outputs = tuple((str(k), Quantity.parse(v)) for k, v in (t.get("outputs") or {}).items())
        except (QuantityError, ValueError) as exc:
            raise ConfigError(f"invalid transformation output: {exc}") from exc
        strategy = t.get("strategy") or "Retain"  # Kueue defaults an unset or empty one
        if strategy not in TRANSFORMATION_STRATEGIES:
            errors.append(not_supported(f"resources.transformations[{i}].strategy", strategy,
                                        _supported(TRANSFORMATION_STRATEGIES)))
        name = str(t.get("input") or "")
        if name in transformations:
            errors.append(duplicate(f"resources.transformations[{i}].input", name))
        else:
            transformations[name] = Transformation(name, strategy == "Replace", outputs,
                                                   str(t.get("multiplyBy") or ""))
    excluded = tuple(str(p) for p in res.get("excludeResourcePrefixes") or ())
    strategy = res.get("quotaCheckStrategy")
    ignore = False
    if strategy is not None and gate_enabled(gates, QUOTA_CHECK_STRATEGY_GATE):
        if excluded and strategy == IGNORE_UNDECLARED:
            errors.append(invalid(QUOTA_CHECK_PATH, strategy, "excludeResourcePrefixes is not allowed when "
                                  "quotaCheckStrategy is IgnoreUndeclared"))
        if strategy not in QUOTA_CHECK_STRATEGIES:
            errors.append(not_supported(QUOTA_CHECK_PATH, strategy, _supported(QUOTA_CHECK_STRATEGIES)))
        ignore = strategy == IGNORE_UNDECLARED
    if errors:
        raise ConfigError(aggregate(errors))
    return transformations, excluded, ignore


def _supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def config_from(obj: dict[str, Any] | None) -> CoreConfig:
    """The core's settings from a Kueue Configuration dict, with Kueue v0.19.2's defaults
    (no Configuration at all is Kueue's defaults too)."""
    obj = {} if obj is None else obj
    if not isinstance(obj, dict):
        raise ConfigError("config is not a mapping")
    gates = obj.get("featureGates") or {}
    if not isinstance(gates, dict):
        gates = {}
    transformations, excluded, ignore_undeclared = _resources(obj, gates)
    if gate_enabled(gates, BALANCED_PLACEMENT_GATE) and not gate_enabled(gates, "TopologyAwareScheduling"):
        need = f"{BALANCED_PLACEMENT_GATE} requires TopologyAwareScheduling to be enabled"
        raise ConfigError(str(invalid("featureGates", BALANCED_PLACEMENT_GATE, need)))
    fs = obj.get("fairSharing")
    strategies = (fs or {}).get("preemptionStrategies") if isinstance(fs, dict) else None
    fair = None if not isinstance(fs, dict) or fs.get("enable") is False else tuple(
        str(x) for x in strategies or ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
    if fair is not None:
        allowed = (("LessThanOrEqualToFinalShare",), ("LessThanInitialShare",),
                   ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
        if fair not in allowed:
            raise ConfigError(f"invalid fairSharing.preemptionStrategies {list(fair)}")
    try:
        afs = config_from_dict(obj.get("admissionFairSharing"), parse_duration)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    common: dict[str, Any] = dict(
        transformations=transformations, excluded_prefixes=excluded, ignore_undeclared=ignore_undeclared,
        fair_sharing=fair,
        admission_fair_sharing=afs, tiered_reasons=gate_enabled(gates, TIERED_REASONS_GATE),
        admission_gated_by=gate_enabled(gates, "AdmissionGatedBy"),
        workload_slices=gate_enabled(gates, WORKLOAD_SLICES_GATE),
        reclaimable_pods=gate_enabled(gates, "ReclaimablePods"),
        prioritize_preemptors=gate_enabled(gates, PRIORITIZE_PREEMPTORS_GATE),
        partial_admission=gate_enabled(gates, "PartialAdmission"),
        tas_overlapping_flavors=gate_enabled(gates, OVERLAPPING_FLAVORS_GATE),
        tas_balanced_placement=gate_enabled(gates, BALANCED_PLACEMENT_GATE),
        preserve_scan_progress=gate_enabled(gates, "FlavorFungibilityPreserveScanProgress"),
        tas_node_failure=NodeFailureRules.from_gates(gates))
    wfpr = wait_for_pods_ready_section(obj)
    if wfpr is None:
        return CoreConfig(**common)
    v1beta1 = obj.get("apiVersion") == CONFIG_API_VERSION_V1BETA1
    rs = wfpr.get("requeuingStrategy") or {}
    limit = rs.get("backoffLimitCount")
    strategy = RequeuingStrategy(
        timestamp=rs.get("timestamp", "Eviction"),
        backoff_limit_count=None if limit is None else int(limit),
        backoff_base_seconds=float(rs.get("backoffBaseSeconds", 60)),
        backoff_max_seconds=float(rs.get("backoffMaxSeconds", 3600)),
    )
    recovery = wfpr.get("recoveryTimeout")
    timeout = parse_duration(wfpr.get("timeout") or (V1BETA1_PODS_READY_TIMEOUT if v1beta1 else "0s"))
    if timeout == 0 and not v1beta1:  # v1beta2 takes a zero timeout for an unset one
        timeout = parse_duration(DEFAULT_PODS_READY_TIMEOUT)
    return CoreConfig(
        wait_for_pods_ready=WaitForPodsReady(
            timeout=timeout,
            block_admission=bool(wfpr.get("blockAdmission", v1beta1)),
            recovery_timeout=None if recovery is None else parse_duration(recovery),
            requeuing=strategy,
        ),
        requeuing=strategy,
        **common,
    )


def wait_for_pods_ready_section(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Configuration's ``waitForPodsReady`` as Kueue v0.19.2 reads it: None when it is
    off, else the section (possibly empty: every field at its default)."""
    obj = obj or {}
    gates = obj.get("featureGates")
    if gate_enabled(gates if isinstance(gates, dict) else None, DISABLE_WAIT_FOR_PODS_READY_GATE):
        return None
    section = obj.get("waitForPodsReady")
    if section is not None and not isinstance(section, dict):
        raise ConfigError("waitForPodsReady is not a mapping")
    if obj.get("apiVersion") == CONFIG_API_VERSION_V1BETA1:
        return section if section is not None and section.get("enable") is True else None
    if section is None:
        return {}
    return None if section.get("enable") is False else section
