"""What the job kind registry decides, the install files say: the webhook configurations
(generated, ``make manifests``), the chart's webhook rows and the shipped frameworks list.
A kind added to the registry and forgotten here fails these tests instead of leaving its
jobs silently unsuspended."""

from __future__ import annotations

import re
from typing import Any

import yaml

from pykueue.devcluster.addons import DEV_CONFIG
from pykueue.manager.jobs.registry import shipped_frameworks
from pykueue.webhook.app import routes
from pykueue.webhook.configurations import HookRow, configurations, render, rows
from tests.conftest import REPO

WEBHOOKS = REPO / "manifests" / "06-webhooks.yaml"
CHART = REPO / "charts" / "pykueue"
# One row of the chart's table: (list "job" "batch" "v1" (list "jobs") "CREATE" "CREATE UPDATE" true)
CHART_ROW = re.compile(r'\(list "(\w+)" "([^"]*)" "(\w+)" \(list ([^)]*)\) '
                       r'"([A-Z ]*)" "([A-Z ]*)" (true|false)\)')


def test_the_webhook_manifest_is_generated_from_the_registry() -> None:
    assert WEBHOOKS.read_text() == render(), "manifests/06-webhooks.yaml is stale: run `make manifests`"


def test_every_registered_hook_is_served_and_fails_closed() -> None:
    served = set(routes())
    hooks = [h for doc in configurations() for h in doc["webhooks"]]
    assert {h["clientConfig"]["service"]["path"] for h in hooks} <= served
    assert all(h["failurePolicy"] == "Fail" for h in hooks)


def _chart_rows() -> list[HookRow]:
    text = (CHART / "templates" / "webhooks.yaml").read_text()
    found = []
    for name, group, version, resources, mutate, validate, job in CHART_ROW.findall(text):
        found.append(HookRow(name, group, version, "", tuple(re.findall(r'"([^"]+)"', resources)),
                             tuple(mutate.split()), tuple(validate.split()), job == "true"))
    return found


def _without_kind(row: HookRow) -> tuple[Any, ...]:
    return (row.name, row.group, row.version, row.resources, row.mutate, row.validate, row.job_kind)


def test_the_charts_webhook_rows_are_the_registrys() -> None:
    assert [_without_kind(r) for r in _chart_rows()] == [_without_kind(r) for r in rows()]


def _frameworks(config_text: str) -> list[str]:
    config = yaml.safe_load(config_text)
    return list(config["integrations"]["frameworks"])


def test_the_shipped_configurations_enable_every_registered_kind() -> None:
    (config_map,) = (d for d in yaml.safe_load_all((REPO / "manifests" / "03-config.yaml").read_text())
                     if d and d.get("kind") == "ConfigMap")
    assert _frameworks(config_map["data"]["controller_manager_config.yaml"]) == shipped_frameworks()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["managerConfig"]["integrations"]["frameworks"] == shipped_frameworks()
    assert DEV_CONFIG["integrations"]["frameworks"] == shipped_frameworks()
