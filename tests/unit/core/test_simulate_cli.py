"""``pykueue simulate``: output contract and exit codes on invalid input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.cli import main

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: rf}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: rf, resources: [{name: cpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
"""

WORKLOAD = """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  queueName: lq
  podSets:
  - {name: main, count: %d, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}
"""


def _run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    f = tmp_path / "s.yaml"
    f.write_text(text)
    code = main(["simulate", *flags, str(f)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_output_has_the_contract_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, SETUP + WORKLOAD % 2, capsys, "--json")
    assert code == 0
    data = json.loads(out)
    wl = data["workloads"]["ns/w"]
    assert set(wl) >= {"status", "clusterQueue", "owner", "podSets", "evictions", "reason"}
    assert set(wl["podSets"]["main"]) == {"count", "flavors", "topologyAssignment"}
    assert data["clusterQueues"]["cq"] == {"usage": {"rf": {"cpu": "2"}}, "pending": 0, "admitted": 1}


def test_table_output_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, SETUP + WORKLOAD % 3, capsys)
    assert code == 0
    assert out.splitlines()[0].split() == ["WORKLOAD", "STATUS", "CLUSTERQUEUE", "PODSETS", "REASON"]
    assert "ns/w" in out and "Pending" in out and "maximum capacity (3 > 2)" in out


@pytest.mark.parametrize(("text", "needle"), [
    ("kind: Gadget\nmetadata: {name: x}\n", "unsupported kind"),
    (SETUP.replace("nominalQuota: 2", "nominalQuota: two"), "invalid quantity"),
    ("kind: [unclosed\n", "malformed YAML"),
    (SETUP + "---\nkind: Scenario\napiVersion: pykueue.dev/v1alpha1\nmetadata: {name: s}\n"
     "spec: {steps: [{finish: ns/nothing}]}\n", "no workload or job ns/nothing"),
    (SETUP + "---\nkind: Scenario\napiVersion: pykueue.dev/v1alpha1\nmetadata: {name: s}\n"
     "spec: {steps: [{delete: {kind: LocalQueue, namespace: ns, name: nope}}]}\n", "delete: no LocalQueue"),
    (SETUP + WORKLOAD % 1 + "---\nkind: Scenario\napiVersion: pykueue.dev/v1alpha1\nmetadata: {name: s}\n"
     "spec: {steps: [{checkState: {workload: ns/w, check: absent, state: Ready}}]}\n",
     "no admission check absent"),
    (SETUP + "---\nkind: Scenario\napiVersion: pykueue.dev/v1alpha1\nmetadata: {name: s}\n"
     "spec: {steps: [{jump: 1}]}\n", "invalid step"),
    (SETUP + "---\nkind: Scenario\napiVersion: pykueue.dev/v1alpha1\nmetadata: {name: s}\n"
     "spec: {steps: [{advance: soon}]}\n", "invalid advance"),
])
def test_invalid_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, needle: str) -> None:
    code, out, err = _run(tmp_path, text, capsys)
    assert code == 2
    assert out == ""
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_missing_cluster_queue_is_a_reason_not_an_error(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = SETUP.replace("clusterQueue: cq}", "clusterQueue: elsewhere}") + WORKLOAD % 1
    code, out, _ = _run(tmp_path, text, capsys, "--json")
    assert code == 0
    assert json.loads(out)["workloads"]["ns/w"]["reason"] == "ClusterQueue elsewhere doesn't exist"


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "absent.yaml")]) == 2
    assert "absent.yaml" in capsys.readouterr().err
