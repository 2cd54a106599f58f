"""Configuration ``resources.transformations`` (with ``multiplyBy``) and excluded prefixes.

The ``kueue_*`` cases are Kueue v0.19.2's ``pkg/workload/workload_test.go`` (TestNewInfo,
the ``transform*`` cases): a Workload's total requests per pod set (per pod times count)
after the Configuration's transformations, read here through ``config_from`` and
``workload_from`` as the core reads them.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.core.config import CoreConfig, config_from
from pykueue.manager.core.objects import workload_from
from pykueue.manager.core.resources import INT64_MAX, pod_requests

Requests = dict[str, str]


def _config(*transformations: dict[str, Any], excluded: tuple[str, ...] = ()) -> CoreConfig:
    resources: dict[str, Any] = {"transformations": list(transformations)}
    if excluded:
        resources["excludeResourcePrefixes"] = list(excluded)
    return config_from({"resources": resources})


def _totals(config: CoreConfig, *podsets: tuple[str, int, Requests]) -> dict[str, dict[str, int]]:
    """Per pod set, its total requests as Kueue's amounts (per pod times count)."""
    obj = {"kind": "Workload", "metadata": {"name": "transform", "namespace": "ns"}, "spec": {
        "podSets": [{"name": name, "count": count, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": requests}}]}}} for name, count, requests in podsets]}}
    wl = workload_from(obj, 0.0, config.transformations, config.excluded_prefixes)
    return {ps.name: {r: v * ps.count for r, v in ps.requests.items()} for ps in wl.podsets}


def _t(input: str, strategy: str | None, outputs: Requests, multiply_by: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"input": input, "outputs": outputs}
    if strategy is not None:
        out["strategy"] = strategy
    if multiply_by:
        out["multiplyBy"] = multiply_by
    return out


def test_kueue_transform_resources() -> None:
    mem, credits = "example.com/accelerator-memory", "example.com/credits"
    cores, vmem = "nvidia.com/total-vgpucores", "nvidia.com/total-vgpumem"
    config = _config(
        _t("nvidia.com/mig-1g.5gb", "Replace", {mem: "5Ki", credits: "10"}),
        _t("nvidia.com/mig-2g.10gb", "Replace", {mem: "10Ki", credits: "15"}),
        _t("nvidia.com/gpu", "Retain", {mem: "40Ki", credits: "100"}),
        _t("nvidia.com/vgpucores", "Replace", {cores: "1"}, "nvidia.com/vgpu"),
        _t("nvidia.com/vgpumem", "Replace", {vmem: "1"}, "nvidia.com/vgpu"))
    vgpu = "nvidia.com/vgpu"
    assert _totals(config,
                   ("a", 1, {"nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-2g.10gb": "1", "cpu": "1"}),
                   ("b", 2, {"nvidia.com/gpu": "1", "cpu": "2"}),
                   ("c", 1, {vgpu: "2", "nvidia.com/vgpucores": "20", "nvidia.com/vgpumem": "1024"}),
                   ("d", 2, {vgpu: "2", "nvidia.com/vgpucores": "30", "nvidia.com/vgpumem": "2048"}),
                   ) == {
        "a": {"cpu": 1000, mem: 20 * 1024, credits: 35},
        "b": {"cpu": 4 * 1000, mem: 80 * 1024, credits: 200, "nvidia.com/gpu": 2},
        "c": {"nvidia.com/vgpu": 2, cores: 2 * 20, vmem: 2 * 1024},
        "d": {"nvidia.com/vgpu": 2 * 2, cores: 2 * 2 * 30, vmem: 2 * 2 * 2048},
    }


# A negative output factor writes a per-unit allowance: the charge is what the request
# exceeds it by (Kueue's transformAllowanceAboveIt, ...ExactlyAtIt, ...UnderIt).
OVERAGE = "quota.example.com/gpu-memory-overage"
ALLOWANCE = (_t("nvidia.com/gpumem", "Replace", {OVERAGE: "1"}, "nvidia.com/gpu"),
             _t("nvidia.com/gpu", "Retain", {OVERAGE: "-1024"}))


@pytest.mark.parametrize(("case", "gpumem", "overage"), [
    ("kueue_transformAllowanceAboveIt", "2048", 2048),
    ("kueue_transformAllowanceExactlyAtIt", "1024", 0),
    ("kueue_transformAllowanceUnderIt", "512", 0),
])
def test_kueue_transform_allowance(case: str, gpumem: str, overage: int) -> None:
    assert _totals(_config(*ALLOWANCE), ("a", 1, {"nvidia.com/gpumem": gpumem, "nvidia.com/gpu": "2"})) == {
        "a": {OVERAGE: overage, "nvidia.com/gpu": 2}}


def test_kueue_transform_allowance_does_not_reach_a_direct_request() -> None:
    """An allowance is spent against what the transformations generate, never against a
    request the pod set made directly under the same name."""
    config = _config(_t("example.com/credit", "Replace", {"example.com/gpu": "-1"}))
    assert _totals(config, ("a", 1, {"example.com/gpu": "8", "example.com/credit": "3"})) == {
        "a": {"example.com/gpu": 8}}


def test_kueue_transform_output_sharing_a_name_with_a_request_is_added() -> None:
    config = _config(_t("example.com/credit", "Replace", {"example.com/gpu": "1"}))
    assert _totals(config, ("a", 1, {"example.com/gpu": "1", "example.com/credit": "1"})) == {
        "a": {"example.com/gpu": 2}}


def test_kueue_transform_output_sharing_a_name_with_its_retained_input_is_added() -> None:
    config = _config(_t("example.com/gpu", "Retain", {"example.com/gpu": "5"}))
    assert _totals(config, ("a", 1, {"example.com/gpu": "1"})) == {"a": {"example.com/gpu": 6}}


def test_kueue_transform_retain_with_multiply_by() -> None:
    """Retain keeps the input as requested; the multiplier only scales the outputs."""
    config = _config(_t("example.com/gpumem", "Retain", {"example.com/gpumem-quota": "1"}, "example.com/gpu"))
    assert _totals(config, ("a", 1, {"example.com/gpumem": "1024", "example.com/gpu": "2"})) == {
        "a": {"example.com/gpumem": 1024, "example.com/gpumem-quota": 2048, "example.com/gpu": 2}}


def test_kueue_transform_retain_with_multiply_by_under_one() -> None:
    """A multiplier below one (500m cpu) halves the output; no strategy means Retain."""
    config = _config(_t("example.com/gpumem", None, {"example.com/gpumem-quota": "1"}, "cpu"))
    assert _totals(config, ("a", 1, {"example.com/gpumem": "1024", "cpu": "500m"})) == {
        "a": {"example.com/gpumem": 1024, "example.com/gpumem-quota": 512, "cpu": 500}}


def test_kueue_transform_output_sharing_a_name_with_its_retained_input_is_added_to_the_request() -> None:
    """(Kueue's ...IsAddedToTheAmountRequested.) 1 requested against a multiplier of 2: 2
    generated and 1 retained, not 2 and 2."""
    config = _config(_t("example.com/gpu", "Retain", {"example.com/gpu": "1"}, "example.com/node"))
    assert _totals(config, ("a", 1, {"example.com/gpu": "1", "example.com/node": "2"})) == {
        "a": {"example.com/gpu": 3, "example.com/node": 2}}


def test_kueue_transform_product_past_the_range_is_not_floored_away() -> None:
    config = _config(_t("example.com/credit", "Replace", {"example.com/gpu": "10000000000"}))
    assert _totals(config, ("a", 1, {"example.com/credit": "10000000000"})) == {
        "a": {"example.com/gpu": INT64_MAX}}


def test_kueue_transform_milli_values() -> None:
    config = _config(_t("cpu", "Replace", {"example.com/cpu-credits": "3000"}),
                     _t("memory", "Replace", {"example.com/memory-credits": "3m"}))
    # 100m * 3000 = 300; 100M * 3m = 300k
    assert _totals(config, ("main", 1, {"cpu": "100m", "memory": "100M"})) == {
        "main": {"example.com/cpu-credits": 300, "example.com/memory-credits": 300 * 1000}}


# -- pykueue's own cases -------------------------------------------------------------------


def test_generated_outputs_are_summed_exactly_before_rounding() -> None:
    """0.5 and -0.3 generated for one name make 0.2, rounded up to 1 (rounding each first
    would give 1 and 0)."""
    config = _config(_t("example.com/a", "Replace", {"example.com/out": "500m"}),
                     _t("example.com/b", "Replace", {"example.com/out": "-300m"}))
    assert _totals(config, ("a", 1, {"example.com/a": "1", "example.com/b": "1"})) == {
        "a": {"example.com/out": 1}}


def test_a_multiplier_under_an_excluded_prefix_does_not_count() -> None:
    """Excluded resources are dropped before the transformations: a multiplyBy naming one
    finds nothing to multiply by, as one naming a resource the pod does not request."""
    config = _config(_t("example.com/gpumem", "Replace", {"example.com/quota": "1"}, "vendor.io/gpu"),
                     excluded=("vendor.io/",))
    assert _totals(config, ("a", 1, {"example.com/gpumem": "100", "vendor.io/gpu": "4"})) == {
        "a": {"example.com/quota": 100}}
    config = _config(_t("example.com/gpumem", "Replace", {"example.com/quota": "1"}, "example.com/absent"))
    assert _totals(config, ("a", 1, {"example.com/gpumem": "100"})) == {"a": {"example.com/quota": 100}}


def test_pod_requests_are_summed_before_they_are_rounded() -> None:
    """Two containers asking 500u of cpu each make 1m (Kueue sums the quantities, then takes
    the milli-value), not 1m each."""
    spec = {"containers": [{"resources": {"requests": {"cpu": "500u"}}},
                           {"resources": {"requests": {"cpu": "500u"}}}]}
    assert pod_requests(spec) == {"cpu": 1}


def test_multiply_by_is_read_from_the_configuration() -> None:
    (tr,) = _config(_t("a", None, {"b": "2"}, "c")).transformations.values()
    assert (tr.input, tr.replace, tr.multiply_by) == ("a", False, "c")
    assert str(dict(tr.outputs)["b"]) == "2"
