"""Render kueue_perf results: a Markdown table against Kueue's means, and a PNG timeline.

``python -m benchmarks.plot_kueue_perf [RESULT.json ...]`` reads result files written by
``benchmarks.kueue_perf`` (default: every ``benchmarks/results/kueue_perf-*.json``), prints
the table rows for ``benchmarks/README.md`` and writes ``<result>.png``: admitted (blue)
and pending (orange) workloads over time, one panel per QPS setting. The PNG encoder is
a few lines of zlib + struct so no plotting library is needed.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
WIDTH, PANEL_H, MARGIN = 640, 200, 8
COLOURS = {"admitted": (31, 119, 180), "pending": (255, 127, 14)}
AXIS, BACKGROUND = (90, 90, 90), (255, 255, 255)


def png_bytes(pixels: list[bytearray], width: int) -> bytes:
    """An 8-bit RGB PNG from rows of ``width * 3`` bytes."""
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, len(pixels), 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


def timeline_png(timelines: dict[str, list[list[float]]]) -> bytes:
    """One panel per run; x = seconds since generation started, y = workload counts."""
    height = max(1, len(timelines)) * (PANEL_H + MARGIN) + MARGIN
    rows = [bytearray(BACKGROUND * WIDTH) for _ in range(height)]

    def put(x: int, y: int, colour: tuple[int, int, int]) -> None:
        if 0 <= x < WIDTH and 0 <= y < height:
            rows[y][3 * x:3 * x + 3] = bytes(colour)

    for i, points in enumerate(timelines.values()):
        top = MARGIN + i * (PANEL_H + MARGIN)
        bottom = top + PANEL_H - 1
        for x in range(MARGIN, WIDTH - MARGIN):
            put(x, bottom, AXIS)
        for y in range(top, bottom + 1):
            put(MARGIN, y, AXIS)
        if not points:
            continue
        t_max = max(p[0] for p in points) or 1.0
        y_max = max(max(p[1], p[2]) for p in points) or 1
        for series, column in (("pending", 1), ("admitted", 2)):
            prev: tuple[int, int] | None = None
            for p in points:
                x = MARGIN + int((WIDTH - 2 * MARGIN - 1) * p[0] / t_max)
                y = bottom - int((PANEL_H - 1) * p[column] / y_max)
                if prev is not None:  # vertical segment joins the steps
                    for yy in range(min(prev[1], y), max(prev[1], y) + 1):
                        put(x, yy, COLOURS[series])
                    for xx in range(prev[0], x + 1):
                        put(xx, prev[1], COLOURS[series])
                put(x, y, COLOURS[series])
                prev = (x, y)
    return png_bytes(rows, WIDTH)


def _fmt_ratio(value: float | None, ref: float | None) -> str:
    if value is None or not ref:
        return "-"
    return f"{value / ref:.2f}x"


def _runs(metrics: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(row label, run) pairs, the floor's first: ``runs`` is a list now, a dict keyed by
    setting in older results."""
    runs = metrics.get("runs")
    if isinstance(runs, list):
        runs = [*(metrics.get("floor_runs") or ()), *runs]
        return [(str(r.get("label") or f"{r['manager']} {r.get('qps')}/{r.get('burst')}"), r) for r in runs]
    if isinstance(runs, dict):
        return [(f"pykueue {label}", run) for label, run in runs.items()]
    return [("pykueue", metrics)]


def table_rows(result: dict[str, Any]) -> list[str]:
    """Markdown rows: one per run, then Kueue's published mean for the same config."""
    m = result["metrics"]
    out = []
    ref = m.get("reference") or {}
    classes = ("large", "medium", "small")
    for label, run in _runs(m):
        tta = run.get("tta_ms") or {}
        ref_tta = ref.get("tta_ms") or {}
        if run.get("client_limiter") == "per-resource":  # Kueue's harness build: a budget per API kind
            label += " (limiter per resource)"
        cells = [label.replace("kueue ", "Kueue ") if label.startswith("kueue ") else label,
                 f"{run['wall_s']:.0f} ({_fmt_ratio(run['wall_s'], ref.get('wall_s'))})",
                 "-" if run["usage_pct"] is None else
                 f"{run['usage_pct']:.1f} ({_fmt_ratio(run['usage_pct'], ref.get('usage_pct'))})"]
        cells += [f"{tta[c] / 1000:.1f} ({_fmt_ratio(tta[c], ref_tta.get(c))})" if c in tta else "-"
                  for c in classes]
        cells += [f"{run['manager_cpu_s']:.0f}", f"{run['manager_peak_rss_mb']:.0f}",
                  str(run.get("api_requests")), _count(run.get("evictions"))]
        out.append(f"| {m['config']} | " + " | ".join(cells) + " |")
    if ref:
        ref_tta = ref.get("tta_ms") or {}
        cells = ["Kueue (published mean)", f"{ref['wall_s']:.0f}", f"{ref['usage_pct']:.1f}"]
        cells += [f"{ref_tta[c] / 1000:.1f}" if c in ref_tta else "-" for c in classes]
        cells += ["-", "-", "-", "-"]
        out.append(f"| {m['config']} | " + " | ".join(cells) + " |")
    return out


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def compare_rows(result: dict[str, Any]) -> list[str]:
    """Markdown rows of pykueue / Kueue from one ``--compare`` run (medians over its rounds)."""
    m = result["metrics"]
    out = []
    for setting, block in (m.get("compare") or {}).items():
        ratio = block["ratio"]
        tta = ratio.get("tta") or {}
        cells = [f"pykueue / Kueue {setting} ({block['pykueue']['runs']} + {block['kueue']['runs']} runs)",
                 _x(ratio.get("wall")), _x(ratio.get("usage"))]
        cells += [_x(tta.get(c)) for c in ("large", "medium", "small")]
        cells += [_x(ratio.get("manager_cpu")), _x(ratio.get("manager_peak_rss")),
                  _x(ratio.get("api_requests")),
                  f"{_count(block['pykueue'].get('evictions'))} / {_count(block['kueue'].get('evictions'))}"]
        out.append(f"| {m['config']} | " + " | ".join(cells) + " |")
    return out


HEADER = ("| config | run (QPS/burst) | wall s | usage % | TTA large s | TTA medium s | TTA small s "
          "| manager CPU s | peak RSS MB | API requests | evictions |\n" + "|---" * 11 + "|")


def main(argv: list[str] | None = None) -> int:
    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or sorted(
        RESULTS.glob("kueue_perf-*.json"))
    if not paths:
        print("no kueue_perf results: run python -m benchmarks.kueue_perf first", file=sys.stderr)
        return 2
    print(HEADER)
    for path in paths:
        try:
            result = json.loads(path.read_text())
            rows = table_rows(result)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"{path}: not a kueue_perf result ({exc})", file=sys.stderr)
            return 2
        print("\n".join(rows + compare_rows(result)))
        if result.get("timelines"):
            path.with_suffix(".png").write_bytes(timeline_png(result["timelines"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
