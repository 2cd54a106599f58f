"""One benchmark at a time on the dev cluster: the second is refused before it touches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import kueue_perf, status_write_cost
from benchmarks.dev_lock import LOCK_NAME, DevClusterBusy, holding_dev_cluster


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dev-state"
    monkeypatch.setenv("PYKUEUE_DEV_STATE", str(root))
    return root


def test_a_second_holder_is_refused_naming_the_first_and_gets_in_after_it(state: Path) -> None:
    with holding_dev_cluster("kueue_perf"), \
            pytest.raises(DevClusterBusy, match=r"in use by kueue_perf \(pid \d+, since"), \
            holding_dev_cluster("status_write_cost"):
        pass
    with holding_dev_cluster("status_write_cost"):
        assert (state / LOCK_NAME).read_text().startswith("status_write_cost (pid ")
    assert (state / LOCK_NAME).read_text() == ""


def test_a_note_left_by_a_holder_that_died_does_not_lock(state: Path) -> None:
    state.mkdir(parents=True)
    (state / LOCK_NAME).write_text("kueue_perf (pid 1, since 00:00:00)\n")  # no flock held on it
    with holding_dev_cluster("kueue_perf"):
        assert "pid 1," not in (state / LOCK_NAME).read_text()


@pytest.mark.parametrize(("main", "argv", "hint"), [
    (kueue_perf.main, ["--config", "quick", "--qps", "300", "--burst", "500"], "(or give --kubeconfig)"),
    (status_write_cost.main, ["--quick"], "wait for it to finish"),
])
def test_benchmarks_on_the_dev_cluster_stop_at_once_while_another_holds_it(
        main: object, argv: list[str], hint: str, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert callable(main)
    with holding_dev_cluster("another run"):
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert "the dev cluster is in use by another run (pid" in err and hint in err and err.count("\n") == 1
    assert sorted(p.name for p in state.iterdir()) == [LOCK_NAME]  # no cluster was brought up
