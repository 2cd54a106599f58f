"""kubectl's tables: tabwriter alignment, cells, headers and ages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pykueue.kueuectl.ages import age, human_duration
from pykueue.kueuectl.printers.table import Column, Table, cell_text, table_lines, tabwrite


def test_columns_are_at_least_six_wide_with_three_spaces_of_padding() -> None:
    assert tabwrite("NAME\tCOHORT\tAGE\nkx-cq\tco\t1s\ncq-e2e-53245000\t\t3m\n") == (
        "NAME              COHORT   AGE\n"
        "kx-cq             co       1s\n"
        "cq-e2e-53245000            3m\n")


def test_the_last_cell_is_not_padded_and_a_final_partial_line_keeps_no_newline() -> None:
    assert tabwrite("a\tb\nxyz") == "a     b\nxyz"


def test_a_line_without_tabs_ends_a_column_block() -> None:
    assert tabwrite("a\tb\n\nlonger-name\tc\n") == "a     b\n\nlonger-name   c\n"


@pytest.mark.parametrize(("cell", "text"), [
    ("two\nlines", "two..."), ("esc\x1b", "esc^["), (True, "true"), (3, "3"), (None, ""), ("cr\rlf", "cr..."),
])
def test_cells(cell: object, text: str) -> None:
    assert cell_text(cell) == text


def test_headers_namespace_column_and_wide_columns() -> None:
    table = Table([Column("Name"), Column("Pending Workloads"), Column("Node", priority=1)],
                  [["a", 1, "n1"]], ["ns1"])
    assert table_lines(table, headers=True) == ["NAME\tPENDING WORKLOADS", "a\t1"]
    assert table_lines(table, headers=True, with_namespace=True, wide=True) == [
        "NAMESPACE\tNAME\tPENDING WORKLOADS\tNODE", "ns1\ta\t1\tn1"]
    assert table_lines(Table([Column("Name")], []), headers=True) == []


@pytest.mark.parametrize(("seconds", "text"), [
    (-3, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (600, "10m"),
    (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"), (47 * 3600, "47h"),
    (48 * 3600, "2d"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (730 * 86400, "2y"), (731 * 86400, "2y1d"),
    (8 * 365 * 86400, "8y"),
])
def test_human_durations(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_age_of_an_object() -> None:
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert age((now - timedelta(seconds=75)).strftime("%Y-%m-%dT%H:%M:%SZ"), now) == "75s"
    assert age(None, now) == "292y"  # Go's saturated Duration for a zero creation time
