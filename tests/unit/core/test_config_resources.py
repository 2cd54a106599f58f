"""The Configuration's ``resources`` section checked as Kueue v0.19.2 checks it.

The ``kueue_*`` cases are ``pkg/config/validation_test.go`` (TestValidate): the
transformation and quotaCheckStrategy cases, with the messages ``field.Error`` prints.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.core.config import ConfigError, config_from


def _resources(resources: dict[str, Any], gates: dict[str, bool] | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"resources": resources}
    if gates is not None:
        cfg["featureGates"] = gates
    return cfg


def test_kueue_invalid_transformation_strategy() -> None:
    with pytest.raises(ConfigError) as err:
        config_from(_resources({"transformations": [{"input": "cpu", "strategy": "invalid"}]}))
    assert str(err.value) == ('resources.transformations[0].strategy: Unsupported value: "invalid": '
                              'supported values: "Retain", "Replace"')


def test_kueue_invalid_transformation_inputs() -> None:
    with pytest.raises(ConfigError) as err:
        config_from(_resources({"transformations": [
            {"input": "cpu", "strategy": "Retain"}, {"input": "memory", "strategy": "Retain"},
            {"input": "cpu", "strategy": "Retain"}]}))
    assert str(err.value) == 'resources.transformations[2].input: Duplicate value: "cpu"'


def test_kueue_valid_transformations() -> None:
    cfg = config_from(_resources({"transformations": [{"input": "cpu", "strategy": "Retain"},
                                                      {"input": "memory", "strategy": "Replace"}]}))
    assert [(t.input, t.replace) for t in cfg.transformations.values()] == [("cpu", False), ("memory", True)]


def test_kueue_quota_check_strategy_ignore_undeclared_not_allowed_with_exclude_resource_prefixes() -> None:
    with pytest.raises(ConfigError) as err:
        config_from(_resources({"quotaCheckStrategy": "IgnoreUndeclared",
                                "excludeResourcePrefixes": ["foo.com/device"]}))
    assert str(err.value) == ('resources.quotaCheckStrategy: Invalid value: "IgnoreUndeclared": '
                              "excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
                              "IgnoreUndeclared")


def test_kueue_quota_check_strategy_ignore_undeclared_allowed_without_exclude_resource_prefixes() -> None:
    assert config_from(_resources({"quotaCheckStrategy": "IgnoreUndeclared"})).ignore_undeclared


def test_kueue_quota_check_strategy_block_undeclared_allowed_with_exclude_resource_prefixes() -> None:
    cfg = config_from(_resources({"quotaCheckStrategy": "BlockUndeclared",
                                  "excludeResourcePrefixes": ["foo.com/device"]}))
    assert not cfg.ignore_undeclared and cfg.excluded_prefixes == ("foo.com/device",)


def test_kueue_quota_check_strategy_with_unsupported_value() -> None:
    with pytest.raises(ConfigError) as err:
        config_from(_resources({"quotaCheckStrategy": "test"}))
    assert str(err.value) == ('resources.quotaCheckStrategy: Unsupported value: "test": '
                              'supported values: "IgnoreUndeclared", "BlockUndeclared"')


def test_kueue_quota_check_strategy_validation_skipped_when_feature_gate_disabled() -> None:
    cfg = config_from(_resources({"quotaCheckStrategy": "test"}, {"QuotaCheckStrategy": False}))
    assert not cfg.ignore_undeclared


# -- pykueue's own cases -------------------------------------------------------------------


def test_ignore_undeclared_needs_the_gate() -> None:
    """Kueue passes the strategy to its scheduler only with the gate on (cmd/kueue/main.go)."""
    assert not config_from(_resources({"quotaCheckStrategy": "IgnoreUndeclared"},
                                      {"QuotaCheckStrategy": False})).ignore_undeclared
    assert not config_from(_resources({})).ignore_undeclared
    assert not config_from(None).ignore_undeclared


def test_several_errors_are_listed_together() -> None:
    with pytest.raises(ConfigError) as err:
        config_from(_resources({"transformations": [{"input": "cpu", "strategy": "Swap"}, {"input": "cpu"}],
                                "quotaCheckStrategy": "Other"}))
    assert str(err.value) == (
        '[resources.transformations[0].strategy: Unsupported value: "Swap": supported values: "Retain", '
        '"Replace", resources.transformations[1].input: Duplicate value: "cpu", '
        'resources.quotaCheckStrategy: Unsupported value: "Other": supported values: "IgnoreUndeclared", '
        '"BlockUndeclared"]')


def test_an_empty_strategy_is_retain() -> None:
    cfg = config_from(_resources({"transformations": [{"input": "cpu", "strategy": ""}]}))
    (tr,) = cfg.transformations.values()
    assert not tr.replace
