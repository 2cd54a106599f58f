"""Per-module cache keys: a change in one Go module rebuilds that module's binaries only."""

from __future__ import annotations

from pathlib import Path

from devcluster.versions import module_key


def _module(root: Path, name: str, require: str) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.26.0\n\nrequire {require}\n")
    (directory / "main.go").write_text("package main\n\nfunc main() {}\n")
    return directory


def test_key_names_the_pin_and_changes_only_with_its_own_module(tmp_path: Path) -> None:
    kube = _module(tmp_path, "kube", "k8s.io/kubernetes v1.36.3")
    _module(tmp_path, "kwok", "sigs.k8s.io/kwok v0.8.0")
    before = {m: module_key(m, tmp_path) for m in ("kube", "kwok")}
    assert before["kube"].startswith("k8s-v1.36.3_")
    assert before["kwok"].startswith("kwok-v0.8.0_")

    _module(tmp_path, "newcomer", "example.com/other v1.0.0")  # a module added beside them
    (kube / "main.go").write_text("package main\n\nfunc main() { println() }\n")
    after = {m: module_key(m, tmp_path) for m in ("kube", "kwok")}
    assert after["kwok"] == before["kwok"]
    assert after["kube"] != before["kube"]
    assert module_key("newcomer", tmp_path).startswith("newcomer_")
