"""Freed quota is written before the admissions that reuse it (ReleaseOrder)."""

from __future__ import annotations

import logging

import pytest

from pykueue.manager.runtime.controllers.release_order import ReleaseOrder


def test_an_admission_waits_for_the_release_before_it_and_is_retried_after() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    token = order.token("ns/a")
    assert not order.may_write("ns/b")
    assert order.written("ns/a", token) == {"ns/b"}
    assert order.may_write("ns/b")
    assert order.unwritten == 0


def test_releases_after_the_admission_do_not_hold_it_back() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    order.released({"ns/c"})
    assert not order.may_write("ns/b")
    assert order.written("ns/a", order.token("ns/a")) == {"ns/b"}
    assert order.may_write("ns/b")  # ns/c, released later, is still unwritten
    assert order.unwritten == 1


def test_nothing_unwritten_means_no_wait() -> None:
    order = ReleaseOrder()
    order.admitted({"ns/b"})
    assert order.may_write("ns/b")


def test_a_workload_readmitted_into_its_own_room_does_not_wait_for_itself() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/a"})
    token = order.token("ns/a")
    assert order.may_write("ns/a")
    assert order.written("ns/a", token) == set()
    assert order.unwritten == 0


def test_a_write_rendered_before_a_newer_release_does_not_count_for_it() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    stale = order.token("ns/a")
    order.released({"ns/a"})  # released again while the first write was in flight
    order.admitted({"ns/b"})
    assert order.written("ns/a", stale) == set()
    assert not order.may_write("ns/b")
    assert order.written("ns/a", order.token("ns/a")) == {"ns/b"}


def test_a_write_with_no_release_owed_confirms_nothing() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    assert order.written("ns/x", None) == set()
    assert not order.may_write("ns/b")


def test_a_slow_release_holds_admissions_until_written_and_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """Letting the admission go first would show more admitted than the quota: it waits for
    as long as the release's write takes (an API outage), and the wait is logged once."""
    now = [0.0]
    order = ReleaseOrder(max_wait_s=10.0, clock=lambda: now[0])
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    now[0] = 9.0
    assert not order.may_write("ns/b")
    with caplog.at_level(logging.WARNING):
        now[0] = 60.0
        assert not order.may_write("ns/b")
        now[0] = 120.0
        assert not order.may_write("ns/b")
    assert [r.getMessage() for r in caplog.records if "ns/a" in r.getMessage()] == [
        "the release of ns/a is not written after 10s; admissions reusing its quota wait for it"]
    assert order.written("ns/a", order.token("ns/a")) == {"ns/b"}
    assert order.may_write("ns/b")
    assert order.unwritten == 0


def test_a_changed_admission_still_waits_only_for_the_releases_before_its_reservation() -> None:
    """Releases keep coming while an admission waits; a later change of the same reservation
    (a condition, a message) must not make it wait for those too, or it never gets written."""
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    order.released({"ns/c"})
    order.admitted({"ns/b"})  # changed again, same reservation
    assert not order.may_write("ns/b")
    order.written("ns/a", order.token("ns/a"))
    assert order.may_write("ns/b"), "ns/c was released after ns/b's reservation"


def test_a_reservation_released_and_taken_again_waits_for_the_releases_before_the_new_one() -> None:
    order = ReleaseOrder()
    order.released({"ns/a"})
    order.admitted({"ns/b"})
    order.released({"ns/b", "ns/c"})  # ns/b's reservation is gone ...
    order.admitted({"ns/b"})  # ... and it is reserved again, possibly in ns/c's room
    order.written("ns/a", order.token("ns/a"))
    assert not order.may_write("ns/b")
    order.written("ns/c", order.token("ns/c"))
    assert order.may_write("ns/b")
