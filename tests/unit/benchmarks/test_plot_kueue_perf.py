"""The README table and PNG timeline renderer of kueue_perf results."""

from __future__ import annotations

import struct
import zlib

from benchmarks.plot_kueue_perf import compare_rows, table_rows, timeline_png


def test_png_is_decodable_with_expected_size_and_colours() -> None:
    data = timeline_png({"50/100": [[0, 5, 0, 0], [1, 3, 2, 0], [2, 0, 1, 4]], "300/500": []})
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 640 and height == 2 * (200 + 8) + 8
    idat_len = struct.unpack(">I", data[33:37])[0]
    raw = zlib.decompress(data[41:41 + idat_len])
    assert len(raw) == height * (1 + width * 3)
    assert bytes((255, 127, 14)) in raw and bytes((31, 119, 180)) in raw  # pending and admitted drawn


def test_table_rows_show_ratios_to_kueues_means() -> None:
    run = {"wall_s": 175.5, "usage_pct": 55.9, "tta_ms": {"small": 107734, "medium": 38384, "large": 8250},
           "manager_cpu_s": 90.2, "manager_peak_rss_mb": 120.4, "api_requests": 40000, "evictions": 12}
    ref = {"wall_s": 351.0, "usage_pct": 55.9, "tta_ms": {"small": 215468, "medium": 76768, "large": 16501}}
    rows = table_rows({"metrics": {"config": "baseline", "reference": ref, "runs": {"300/500": run}}})
    assert rows[0] == ("| baseline | pykueue 300/500 | 176 (0.50x) | 55.9 (1.00x) | 8.2 (0.50x) "
                       "| 38.4 (0.50x) | 107.7 (0.50x) | 90 | 120 | 40000 | 12 |")
    assert rows[1].startswith("| baseline | Kueue (published mean) | 351 | 55.9 | 16.5 | 76.8 | 215.5 |")


def test_kueue_runs_name_their_limiter_and_compare_rows_give_both_eviction_counts() -> None:
    def run(manager: str, limiter: str, evictions: int) -> dict[str, object]:
        return {"manager": manager, "label": f"{manager} 50/100", "client_limiter": limiter, "wall_s": 300.0,
                "usage_pct": 90.0, "tta_ms": {}, "manager_cpu_s": 50.0, "manager_peak_rss_mb": 270.0,
                "api_requests": 17000, "evictions": evictions}

    medians = {"runs": 1, "evictions": 3.0}
    result = {"metrics": {"config": "baseline",
                          "runs": [run("pykueue", "shared", 3), run("kueue", "per-resource", 11)],
                          "compare": {"50/100": {"pykueue": medians, "kueue": {**medians, "evictions": 11.5},
                                                 "ratio": {"wall": 0.9, "tta": {}}}}}}
    rows = table_rows(result)
    assert rows[0].startswith("| baseline | pykueue 50/100 | 300 ") and rows[0].endswith("| 17000 | 3 |")
    assert rows[1].startswith("| baseline | Kueue 50/100 (limiter per resource) | 300 ")
    assert compare_rows(result) == [
        "| baseline | pykueue / Kueue 50/100 (1 + 1 runs) | 0.90x | - | - | - | - | - | - | - | 3 / 11.5 |"]
