"""One benchmark at a time on the dev cluster: the second is refused before it touches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import kueue_perf, status_write_cost
from benchmarks.dev_lock import DevClusterUnavailable, holding_dev_cluster, lock_path


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dev-state"
    monkeypatch.setenv("PYKUEUE_DEV_STATE", str(root))
    return root


def test_a_second_holder_is_refused_naming_the_first_and_gets_in_after_it(state: Path) -> None:
    with holding_dev_cluster("kueue_perf"), \
            pytest.raises(DevClusterUnavailable, match=r"in use by kueue_perf \(pid \d+, since"), \
            holding_dev_cluster("status_write_cost"):
        pass
    with holding_dev_cluster("status_write_cost"):
        assert lock_path().read_text().startswith("status_write_cost (pid ")
    assert lock_path().read_text() == ""


def test_the_lock_lives_beside_the_state_directory_and_outlasts_its_removal(state: Path) -> None:
    assert lock_path().parent == state.parent
    with holding_dev_cluster("kueue_perf"):
        state.mkdir(parents=True)
        state.rmdir()  # what dev down does to the state directory
        with pytest.raises(DevClusterUnavailable, match="in use by kueue_perf"), holding_dev_cluster("other"):
            pass


def test_a_failing_holder_releases_the_lock(state: Path) -> None:
    with pytest.raises(RuntimeError, match="run failed"), holding_dev_cluster("kueue_perf"):
        raise RuntimeError("run failed")
    with holding_dev_cluster("status_write_cost"):
        pass


def test_a_lock_file_that_cannot_be_opened_is_a_clear_error(state: Path) -> None:
    lock_path().parent.mkdir(parents=True, exist_ok=True)
    lock_path().mkdir()  # a directory where the file should be
    with pytest.raises(DevClusterUnavailable, match=r"cannot open the dev cluster's lock .*: Is a dir"), \
            holding_dev_cluster("kueue_perf"):
        pass


def test_a_note_left_by_a_holder_that_died_does_not_lock(state: Path) -> None:
    lock_path().parent.mkdir(parents=True, exist_ok=True)
    lock_path().write_text("kueue_perf (pid 1, since 00:00:00)\n")  # no flock held on it
    with holding_dev_cluster("kueue_perf"):
        assert "pid 1," not in lock_path().read_text()


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
    assert not state.exists()  # no cluster was brought up
