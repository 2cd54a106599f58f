"""kubectl's human-readable tables: Go's text/tabwriter with kubectl's settings.

Cells are joined with tabs and aligned by a port of tabwriter's column-block algorithm
(minimum width 6, padding 3, spaces), so odd cells (a tab inside a value, a line with
fewer cells) land where kubectl puts them. Headers are upper-cased column names; a
``NAMESPACE`` column comes first with ``-A``; columns with a priority show only in wide
output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MIN_WIDTH = 6
PADDING = 3

_TERMINAL_ESCAPES = (("\x1b", "^["), ("\r", "\\r"))


@dataclass(frozen=True)
class Column:
    name: str
    priority: int = 0


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    # The namespace of each row's object, for the NAMESPACE column of -A.
    namespaces: list[str] = field(default_factory=list)


def cell_text(cell: Any) -> str:
    """A cell as kubectl prints it: strings cut at the first line break (with "..."),
    terminal escapes neutralised; other values as Go's fmt.Sprint writes them."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        text = "true" if cell else "false"
    elif isinstance(cell, str):
        cut = min((i for i in (cell.find(c) for c in "\f\n\r") if i >= 0), default=-1)
        text = cell if cut < 0 else cell[:cut] + "..."
    else:
        text = str(cell)
    for raw, escaped in _TERMINAL_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def table_lines(table: Table, *, headers: bool, with_namespace: bool = False,
                wide: bool = False) -> list[str]:
    """The tab-separated lines of one table (no header line when it has no rows)."""
    shown = [i for i, c in enumerate(table.columns) if wide or c.priority == 0]
    lines: list[str] = []
    if headers and table.rows:
        names = (["NAMESPACE"] if with_namespace else []) + [table.columns[i].name.upper() for i in shown]
        lines.append("\t".join(names))
    for index, row in enumerate(table.rows):
        cells = [cell_text(row[i]) if i < len(row) else "" for i in shown if i < len(row)]
        if with_namespace:
            namespace = table.namespaces[index] if index < len(table.namespaces) else ""
            cells.insert(0, cell_text(namespace))
        lines.append("\t".join(cells))
    return lines


def tabwrite(text: str) -> str:
    """Align tab-separated text as kubectl's tabwriter does when flushed: column blocks of
    consecutive lines, the last cell of each line left unpadded, a final line without a
    newline written without one."""
    cells = [line.split("\t") for line in text.split("\n")]
    out: list[str] = []
    _format(cells, 0, len(cells), [], out)
    return "\n".join(out)


def _format(cells: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str]) -> None:
    column = len(widths)
    this = line0
    while this < line1:
        if column >= len(cells[this]) - 1:
            this += 1
            continue
        _write_lines(cells, line0, this, widths, out)
        line0 = this
        width = MIN_WIDTH
        while this < line1 and column < len(cells[this]) - 1:
            width = max(width, len(cells[this][column]) + PADDING)
            this += 1
        _format(cells, line0, this, [*widths, width], out)
        line0 = this
    _write_lines(cells, line0, line1, widths, out)


def _write_lines(cells: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str]) -> None:
    for line in cells[line0:line1]:
        parts: list[str] = []
        for j, text in enumerate(line):
            parts.append(text)
            if j < len(widths) and j < len(line) - 1:
                parts.append(" " * (widths[j] - len(text)))
        out.append("".join(parts))
