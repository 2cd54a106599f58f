"""``create``'s quota, taint and toleration specs, with kueuectl's merges and errors."""

from __future__ import annotations

import pytest

from pykueue.kueuectl.commands.specs import SpecError, resource_groups, taints, tolerations


def test_flavors_with_the_same_resources_share_a_group() -> None:
    alpha = [{"name": "cpu", "nominalQuota": "9", "borrowingLimit": "1"},
             {"name": "memory", "nominalQuota": "36Gi", "borrowingLimit": "1Gi"}]
    beta = [{"name": "cpu", "nominalQuota": "1500m", "lendingLimit": "1"},
            {"name": "memory", "nominalQuota": "1000Mi", "lendingLimit": "1Gi"}]
    assert resource_groups(["alpha:cpu=9;memory=36Gi", "beta:cpu=1500m;memory=1000Mi"],
                           ["alpha:cpu=1;memory=1Gi"], ["beta:cpu=1000m;memory=1Gi"]) == [{
        "coveredResources": ["cpu", "memory"],
        "flavors": [{"name": "alpha", "resources": alpha}, {"name": "beta", "resources": beta}]}]


def test_flavors_covering_other_resources_get_groups_of_their_own() -> None:
    groups = resource_groups(["alpha:cpu=1", "beta:cpu=2;memory=1", "gamma:nvidia.com/gpu=3"], [], [])
    assert [g["coveredResources"] for g in groups] == [["cpu"], ["cpu", "memory"], ["nvidia.com/gpu"]]


def test_a_limit_alone_leaves_a_zero_nominal_quota() -> None:
    assert resource_groups([], ["alpha:cpu=1"], []) == [
        {"coveredResources": ["cpu"], "flavors": [{"name": "alpha", "resources": [
            {"name": "cpu", "borrowingLimit": "1"}]}]}]


@pytest.mark.parametrize(("nominal", "borrowing", "message"), [
    (["alpha:cpu=1.5"], [], "invalid resources specification"),
    (["Alpha:cpu=1"], [], "invalid resources specification"),
    (["alpha"], [], "invalid resources specification"),
    (["alpha:cpu=1;"], [], "invalid resource quota"),
    (["alpha:cpu=abc"], [], "invalid resource quota"),
    (["alpha:cpu=1"], ["alpha:memory=1"], "invalid flavor"),
    (["alpha:cpu=1;memory=1", "beta:cpu=1"], [], "invalid resource group"),
])
def test_bad_quota_specs(nominal: list[str], borrowing: list[str], message: str) -> None:
    with pytest.raises(SpecError, match=f"^{message}$"):
        resource_groups(nominal, borrowing, [])


def test_a_long_invalid_spec_is_rejected_quickly() -> None:
    with pytest.raises(SpecError):
        resource_groups(["alpha:" + "a." * 5000 + "=1!"], [], [])


def test_taints_and_tolerations() -> None:
    assert taints(["k1=v:NoSchedule", "k2:NoExecute"]) == [
        {"key": "k1", "value": "v", "effect": "NoSchedule"}, {"key": "k2", "effect": "NoExecute"}]
    assert tolerations(["k1=v:NoSchedule", "k3=v", "k4", ":PreferNoSchedule"]) == [
        {"key": "k1", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
        {"key": "k3", "operator": "Equal", "value": "v"}, {"key": "k4", "operator": "Exists"},
        {"operator": "Exists", "effect": "PreferNoSchedule"}]


@pytest.mark.parametrize(("spec", "message"), [
    ("", "invalid taint spec"),
    ("k=v", "invalid taint spec: k=v"),
    ("a:b:c", "invalid taint spec: a:b:c"),
    ("k:Sometimes", "invalid taint effect: Sometimes, unsupported taint effect"),
    ("k:NoSchedule,k:NoSchedule", None),
    ("bad key:NoSchedule",
     "invalid taint spec: bad key:NoSchedule, name part must consist of alphanumeric characters, '-', '_' or "
     "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
     "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
])
def test_bad_taints(spec: str, message: str | None) -> None:
    specs = spec.split(",") if message is None else [spec]
    duplicate = "duplicated taints with the same key and effect: {k  NoSchedule <nil>}"
    expected = duplicate if message is None else message
    with pytest.raises(SpecError) as raised:
        taints(specs)
    assert str(raised.value) == expected


def test_a_toleration_needs_a_key_for_its_value() -> None:
    with pytest.raises(SpecError, match=r"^invalid toleration spec: =v$"):
        tolerations(["=v"])
