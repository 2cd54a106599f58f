"""Kueue's metric families: names, label names and buckets exactly as ../shared/spec/ops-perf.md §1.

The spec's tables are parsed and compared, row by row, with what the registry actually exposes,
so a typo in a name, a missing label or a wrong bucket bound fails here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import itertools
import math
import platform
import re
import sys
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from pykueue.manager.runtime.metrics import (
    B14,
    B16,
    DEF,
    FAMILIES,
    NOT_DECLARED,
    WCL,
    Kind,
    KueueMetrics,
    ReplicaRole,
)

NONE = "\u2013"  # the spec's en dash for "no buckets"
BUCKET_FAMILIES = {"B14": B14, "B16": B16, "DEF": DEF, "WCL": WCL}


def parse_spec_metrics(spec: str) -> dict[str, tuple[str, tuple[str, ...], str]]:
    """name -> (type, label names without replica_role, bucket family or "") from §1's tables."""
    section = spec.split("## 1. Prometheus metrics", 1)[1].split("\n## 2.", 1)[0]
    rows: dict[str, tuple[str, tuple[str, ...], str]] = {}
    header: list[str] = []
    previous_labels: tuple[str, ...] = ()
    for line in section.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if not header:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        name = re.match(r"`([a-z_]+)`", cells[0])
        assert name, line
        label_col = next(i for i, h in enumerate(header) if "abels" in h)
        raw = cells[label_col]
        if raw == "same":
            labels = previous_labels
        else:
            raw = re.sub(r"\([^)]*\)", "", raw)
            labels = tuple(m.group(1) for piece in raw.split(",")
                           if (m := re.match(r"\s*([a-z_]+)", piece)))
        if "Extra labels" in header[label_col]:
            labels = ("name", "namespace", *labels)
        previous_labels = labels
        kind = cells[1].split("(")[0].strip().lower()
        bucket_col = next((i for i, h in enumerate(header) if h == "Buckets"), None)
        buckets = cells[bucket_col].split()[0] if bucket_col is not None else NONE
        rows[name.group(1)] = (kind, labels, "" if buckets == NONE else buckets)
    return rows


@pytest.fixture(scope="module")
def spec_rows(shared_dir: Path) -> dict[str, tuple[str, tuple[str, ...], str]]:
    return parse_spec_metrics((shared_dir / "spec" / "ops-perf.md").read_text())


def exercise_every_family(metrics: KueueMetrics) -> None:
    """One series per family, so every family shows up in the exposition with its labels."""
    for family in FAMILIES:
        metric = metrics.metric(family.name)
        values = [f"v{i}" for i in range(len(family.labels))]
        child = metric.labels(*values, metrics.role.value) if family.replica_role else metric.labels(*values)
        if family.kind is Kind.COUNTER:
            child.inc()
        elif family.kind is Kind.GAUGE:
            child.set(1)
        else:
            child.observe(3.0)


def exposed(metrics: KueueMetrics) -> dict[str, Any]:
    families = {}
    for fam in text_string_to_metric_families(metrics.exposition().decode()):
        families[fam.name + ("_total" if fam.type == "counter" else "")] = fam
    return families


def test_the_code_defines_the_specs_families_but_those_kueue_v0_19_2_lacks(
        spec_rows: dict[str, tuple[str, tuple[str, ...], str]]) -> None:
    """The spec was read off Kueue's main branch; two of its families came after v0.19.2."""
    assert len(spec_rows) == 64
    assert set(NOT_DECLARED) <= set(spec_rows)
    assert {f.name for f in FAMILIES} == set(spec_rows) - set(NOT_DECLARED)


def test_types_labels_and_bucket_families_match_the_spec(
        spec_rows: dict[str, tuple[str, tuple[str, ...], str]]) -> None:
    metrics = KueueMetrics()
    exercise_every_family(metrics)
    families = exposed(metrics)
    for name, (kind, labels, bucket_family) in spec_rows.items():
        if name in NOT_DECLARED:
            continue
        fam = families[name]
        assert fam.type == kind, name
        expected_labels = set(labels) | ({"replica_role"} if name != "kueue_build_info" else set())
        for sample in fam.samples:
            assert set(sample.labels) - {"le"} == expected_labels, (name, sample)
        if kind == "histogram":
            bounds = [float(s.labels["le"]) for s in fam.samples if s.name.endswith("_bucket")]
            assert bounds == [*BUCKET_FAMILIES[bucket_family], math.inf], name


def test_bucket_families_have_kueues_exact_bounds() -> None:
    assert B14 == (1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)
    assert B16[-2:] == (20480, 40960) and B16[:14] == B14
    assert DEF == (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
    assert len(WCL) == 11 and WCL[0] == 0.01 and WCL[-1] == pytest.approx(10.24)
    assert all(b == pytest.approx(2 * a) for a, b in itertools.pairwise(WCL))


def test_exposition_has_no_created_series_and_uses_a_private_registry() -> None:
    first, second = KueueMetrics(), KueueMetrics()  # a global registry would reject the second
    exercise_every_family(first)
    text = first.exposition().decode()
    assert "_created" not in text
    assert second.exposition() != text.encode()
    assert REGISTRY.get_sample_value("kueue_admission_attempts_total", {"result": "success",
                                                                       "replica_role": "standalone"}) is None


def sample(metrics: KueueMetrics, name: str, labels: dict[str, str]) -> float | None:
    value = metrics.registry.get_sample_value(name, {**labels, "replica_role": metrics.role.value})
    return None if value is None else float(value)


def test_helpers_write_the_right_series() -> None:
    m = KueueMetrics(ReplicaRole.LEADER)
    m.report_pending("cq", active=3, inadmissible=2)
    m.admitted_workload("cq", "high", wait_s=30.0, checks_wait_s=4.0, local_queue=("team", "lq"))
    m.pods_ready("cq", "high", since_created_s=50.0, since_admitted_s=20.0, local_queue=("team", "lq"))
    m.evicted("cq", "Preempted", "", "high", first_for_reason=True, local_queue=("team", "lq"))
    m.evicted("cq", "Preempted", "", "high")
    m.preempted("other-cq", "InCohortReclamation")
    m.cluster_queue_resources("co", "cq", "default", "cpu", nominal=8, reservation=6, usage=4)
    assert sample(m, "kueue_pending_workloads", {"cluster_queue": "cq", "status": "active"}) == 3
    assert sample(m, "kueue_pending_workloads", {"cluster_queue": "cq", "status": "inadmissible"}) == 2
    cq_pc = {"cluster_queue": "cq", "priority_class": "high"}
    assert sample(m, "kueue_admitted_workloads_total", cq_pc) == 1
    assert sample(m, "kueue_admission_wait_time_seconds_bucket", {**cq_pc, "le": "20.0"}) == 0
    assert sample(m, "kueue_admission_wait_time_seconds_bucket", {**cq_pc, "le": "40.0"}) == 1
    assert sample(m, "kueue_admission_checks_wait_time_seconds_sum", cq_pc) == 4.0
    lq_pc = {"name": "lq", "namespace": "team", "priority_class": "high"}
    assert sample(m, "kueue_local_queue_admitted_workloads_total", lq_pc) == 1
    assert sample(m, "kueue_local_queue_ready_wait_time_seconds_sum", lq_pc) == 50.0
    assert sample(m, "kueue_admitted_until_ready_wait_time_seconds_sum", cq_pc) == 20.0
    ev = {**cq_pc, "reason": "Preempted", "underlying_cause": ""}
    assert sample(m, "kueue_evicted_workloads_total", ev) == 2
    assert sample(m, "kueue_evicted_workloads_once_total", ev) == 1
    assert sample(m, "kueue_preempted_workloads_total",
                  {"preempting_cluster_queue": "other-cq", "reason": "InCohortReclamation"}) == 1
    res = {"cohort": "co", "cluster_queue": "cq", "flavor": "default", "resource": "cpu"}
    assert sample(m, "kueue_cluster_queue_nominal_quota", res) == 8
    assert sample(m, "kueue_cluster_queue_borrowing_limit", res) == math.inf


def test_cluster_queue_status_is_one_on_exactly_one_status() -> None:
    m = KueueMetrics()
    m.cluster_queue_status("cq", "pending")
    m.cluster_queue_status("cq", "active")
    values = {s: sample(m, "kueue_cluster_queue_status", {"cluster_queue": "cq", "status": s})
              for s in ("pending", "active", "terminating")}
    assert values == {"pending": 0, "active": 1, "terminating": 0}
    with pytest.raises(ValueError):
        m.cluster_queue_status("cq", "Active")


def test_becoming_leader_relabels_and_clears_follower_gauges() -> None:
    m = KueueMetrics(ReplicaRole.FOLLOWER)
    m.report_pending("cq", 1, 0)
    m.admission_attempt(True, 0.1)
    m.set_role(ReplicaRole.LEADER)
    assert m.registry.get_sample_value("kueue_pending_workloads", {
        "cluster_queue": "cq", "status": "active", "replica_role": "follower"}) is None
    assert m.registry.get_sample_value("kueue_admission_attempts_total", {
        "result": "success", "replica_role": "follower"}) == 1
    m.report_pending("cq", 4, 0)
    assert sample(m, "kueue_pending_workloads", {"cluster_queue": "cq", "status": "active"}) == 4


def test_forgetting_a_queue_removes_its_series_only() -> None:
    m = KueueMetrics()
    for cq in ("a", "b"):
        m.report_pending(cq, 1, 1)
        m.admitted_workload(cq, "", 1.0)
        m.withdrawn(cq, 2)
    m.report_local_queue_pending("ns", "lq", 1, 0)
    m.report_local_queue_pending("ns", "other", 1, 0)
    m.forget_cluster_queue("a")
    m.forget_local_queue("ns", "lq")
    text = m.exposition().decode()
    assert 'cluster_queue="a"' not in text and 'cluster_queue="b"' in text
    assert m.registry.get_sample_value("pykueue_withdrawn_reservations_total", {"cluster_queue": "b"}) == 2
    assert 'name="lq"' not in text and 'name="other"' in text


def test_build_info_is_set_at_creation_with_our_version_and_outlives_a_role_change() -> None:
    m = KueueMetrics(ReplicaRole.FOLLOWER)
    [sample_] = exposed(m)["kueue_build_info"].samples
    try:
        version = f"v{importlib.metadata.version('pykueue')}"
    except importlib.metadata.PackageNotFoundError:
        version = "v0.0.0-unknown"
    assert sample_.value == 1
    assert sample_.labels["git_version"] == version
    assert sample_.labels["go_version"] == f"python{platform.python_version()}"
    assert sample_.labels["platform"].startswith(f"{sys.platform}/")
    assert set(sample_.labels) == {"git_version", "git_commit", "build_date", "go_version", "compiler",
                                   "platform"}  # no replica_role, as in Kueue
    m.set_role(ReplicaRole.LEADER)  # clears the follower's gauges, not this one
    assert [s.labels for s in exposed(m)["kueue_build_info"].samples] == [sample_.labels]


def _attribute_uses(paths: list[Path]) -> set[str]:
    used: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
    return used


def test_every_declared_family_is_written_by_a_helper_the_product_calls() -> None:
    """A family no code sets is an empty promise on /metrics: each one is named by a helper of
    ``KueueMetrics``, and some helper naming it is called outside the tests."""
    root = Path(__file__).resolve().parents[3]
    source = root / "pykueue" / "manager" / "runtime" / "metrics.py"
    [cls] = [n for n in ast.walk(ast.parse(source.read_text()))
             if isinstance(n, ast.ClassDef) and n.name == "KueueMetrics"]
    writers: dict[str, set[str]] = {}
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and not method.name.startswith("forget"):
            for node in ast.walk(method):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    writers.setdefault(node.value, set()).add(method.name)
    package = root / "pykueue"  # its own modules, the manager, the webhook and the extender
    product = [p for p in package.rglob("*.py")
               if p.relative_to(package).parts[0] not in ("api", "kube", "certs", "devcluster")]
    called = _attribute_uses(product)
    for family in FAMILIES:
        helpers = writers.get(family.name, set())
        assert helpers, f"{family.name}: no helper writes it"
        assert helpers & called, f"{family.name}: {sorted(helpers)} never called"


def _samples_of(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], str]:
    """Every sample of a page, its value as a string (NaN compares); ``le`` as a number (Go
    writes ``1``, prometheus_client ``1.0``)."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = tuple(sorted((k, str(float(v)) if k == "le" else v) for k, v in s.labels.items()))
            out[(s.name, labels)] = str(float(s.value))
    return out


def test_the_page_has_exactly_prometheus_clients_samples() -> None:
    """The page is written by pykueue's own renderer; prometheus_client's (the reference for
    the same registry) must find the same samples in it, escapes and odd values included."""
    metrics = KueueMetrics()
    exercise_every_family(metrics)
    metrics.report_pending('a "quoted"\\queue\nwith a newline', 3, 0)
    metrics.cluster_queue_resources("c", "cq", "f", "cpu", nominal=0.25, reservation=1e20, usage=0,
                                    borrowing_limit=None, lending_limit=math.nan)
    for seconds in (0.5, 3.0, 3.0, 99999.0):
        metrics.admitted_workload("cq", "high", seconds, checks_wait_s=seconds / 3)
    metrics.waited("workload-status", 2e-7)
    metrics.withdrawn("cq", 4)
    page = metrics.exposition().decode()
    reference = prometheus_client.generate_latest(metrics.registry).decode()
    assert _samples_of(page) == _samples_of(reference)
    assert len(_samples_of(page)) > 350
    assert 'kueue_admission_wait_time_seconds_bucket{cluster_queue="cq",priority_class="high",' \
           'replica_role="standalone",le="5"} 3\n' in page
    helps = [line.split()[2] for line in page.splitlines() if line.startswith("# TYPE ")]
    assert helps == [line.split()[2] for line in reference.splitlines() if line.startswith("# TYPE ")]
