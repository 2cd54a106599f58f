"""Our own Workload writes until the informer shows them (``WriteEchoes``)."""

from __future__ import annotations

from typing import Any

from pykueue.manager.runtime.controllers.write_echoes import WriteEchoes, compare_versions

KEY = "ns/w"


def _wl(rv: str, state: str) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": rv}, "status": {"state": state}}


def test_versions_compare_as_integers_only_when_both_are_well_formed() -> None:
    assert compare_versions("9", "10") == -1
    assert compare_versions("10", "10") == 0
    assert compare_versions("100", "99") == 1
    for odd in ("", "0", "012", "a1", "1.5", "-3", "\uff11\uff12"):
        assert compare_versions(odd, "5") is None
        assert compare_versions("5", odd) is None


def test_two_writes_faster_than_the_watch_leave_the_second_as_the_copy_to_write_over() -> None:
    """Admitted (rv 2), evicted (rv 3), then the echo of the admission arrives: the copy to
    write over is still the eviction. Taking the echo (admitted) instead would skip the
    next admission as already stored while the API shows the workload evicted."""
    echoes = WriteEchoes()
    informer = _wl("1", "pending")
    admitted, evicted = _wl("2", "admitted"), _wl("3", "evicted")
    echoes.wrote(KEY, informer, admitted, cached=informer)
    assert echoes.copy_to_write_over(KEY, informer) == (admitted, True)
    echoes.wrote(KEY, admitted, evicted, cached=informer)
    echoes.seen(KEY, admitted)  # the first echo
    assert echoes.covers(KEY, admitted)
    assert echoes.copy_to_write_over(KEY, admitted) == (evicted, True)
    echoes.seen(KEY, evicted)
    assert KEY not in echoes
    assert echoes.copy_to_write_over(KEY, evicted) == (evicted, True)


def test_an_echo_that_came_before_the_response_keeps_nothing() -> None:
    echoes = WriteEchoes()
    written = _wl("2", "admitted")
    echoes.wrote(KEY, _wl("1", "pending"), written, cached=written)
    assert KEY not in echoes


def test_a_later_writers_version_is_news_and_ends_the_wait() -> None:
    echoes = WriteEchoes()
    base, ours = _wl("1", "pending"), _wl("2", "admitted")
    echoes.wrote(KEY, base, ours, cached=base)
    theirs = _wl("4", "check-ready")  # our echo (rv 2) was missed, e.g. across a relist
    assert not echoes.covers(KEY, theirs)
    assert echoes.copy_to_write_over(KEY, theirs) == (theirs, True)
    assert KEY not in echoes


def test_without_integer_versions_only_known_older_copies_are_passed_over() -> None:
    echoes = WriteEchoes()
    base, first, second = _wl("a", "pending"), _wl("b", "admitted"), _wl("c", "evicted")
    echoes.wrote(KEY, base, first, cached=base)
    echoes.wrote(KEY, first, second, cached=base)
    assert echoes.copy_to_write_over(KEY, base) == (second, True)
    assert echoes.copy_to_write_over(KEY, first) == (second, True)  # superseded by our second write
    unknown = _wl("x", "something")
    assert echoes.covers(KEY, unknown)
    assert echoes.copy_to_write_over(KEY, unknown) == (unknown, False)  # may be stale: no skipping
    echoes.seen(KEY, second)
    assert KEY not in echoes


def test_a_deleted_workload_is_forgotten() -> None:
    echoes = WriteEchoes()
    echoes.wrote(KEY, _wl("1", "pending"), _wl("2", "admitted"), cached=None)
    assert KEY in echoes
    echoes.forget(KEY)
    assert KEY not in echoes and not echoes.covers(KEY, _wl("1", "pending"))
