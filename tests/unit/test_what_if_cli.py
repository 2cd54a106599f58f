"""The CLI edge of explain and simulate --cluster: argument errors are one line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.cli import main


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_explain_rejects_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-n", "ns", "deployment/web"]) == 1
    assert "expected workload/NAME" in _one_line_error(capsys)


def test_explain_with_a_missing_kubeconfig_fails_in_one_line(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    assert main(["explain", "-n", "ns", "job/j", "--kubeconfig", str(tmp_path / "none")]) == 1
    assert "not found" in _one_line_error(capsys)


def test_until_admitted_needs_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("kind: Namespace\napiVersion: v1\nmetadata: {name: x}\n")
    assert main(["simulate", "--until-admitted", str(path)]) == 2
    assert "needs --cluster" in _one_line_error(capsys)


def test_cluster_mode_refuses_scenario_documents(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: pykueue.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
                    "spec: {steps: [{runUntilIdle: {}}]}\n")
    assert main(["simulate", "--cluster", "--kubeconfig", str(tmp_path / "none"), str(path)]) == 2
    assert "job manifests" in _one_line_error(capsys)


def test_cluster_mode_with_an_unreadable_kubeconfig_exits_1(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}\nspec: {}\n")
    assert main(["simulate", "--cluster", "--kubeconfig", str(tmp_path / "none"), str(path)]) == 1
    assert "kubeconfig" in _one_line_error(capsys)
