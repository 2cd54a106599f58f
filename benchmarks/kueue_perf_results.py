"""The JSON line of ``kueue_perf`` from its runs: the ``runs`` list and the pykueue/Kueue ratios.

Pure (runs in, metrics out), so the shape other tools read is unit-tested without a cluster.
Each run's metrics (as ``kueue_perf.run_once`` measures them, with ``manager`` naming the
mode: ``own``, ``external`` or ``kueue``) become one entry of ``runs`` with ``manager``
``pykueue`` or ``kueue`` and the version that ran. The top-level keys stay those of one
run: the last pykueue run, or the last run when only Kueue ran. With both managers, the
``compare`` object gives, per client setting, each manager's medians over its rounds and
pykueue's value divided by Kueue's (below 1 is less time, CPU, memory or requests for
pykueue; above 1 is more usage, admissions or cycles per minute). Per-class measures
(``tta_ms``, ``tta_p50_ms``, ``tta_p90_ms``, ``admissions_per_min``) get a median and a
ratio per class; ``never_admitted`` a median per class only.

Runs of the floor (``kueue_perf_floor``: admits on sight, no quota) are not managers and
stay out of ``runs``: they go to ``floor_runs``, and ``floor`` gives, per client setting,
the floor's medians and each manager's wall and time to admission over the floor's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

PYKUEUE, KUEUE, FLOOR = "pykueue", "kueue", "floor"
ENTRY_KEYS = ("manager", "version", "qps", "burst", "wall_s", "usage_pct", "tta_ms", "manager_cpu_s",
              "manager_peak_rss_mb", "api_requests", "evictions")
# Measure -> its key among the ratios.
_COMPARED = {"wall_s": "wall", "usage_pct": "usage", "admitted_usage_pct": "admitted_usage",
             "manager_cpu_s": "manager_cpu",
             "manager_peak_rss_mb": "manager_peak_rss", "api_requests": "api_requests",
             "evictions": "evictions", "scheduling_cycles": "scheduling_cycles",
             "cycles_per_min": "cycles_per_min"}
# Per-class measure (class -> value) -> its key among the ratios.
_COMPARED_BY_CLASS = {"tta_ms": "tta", "tta_p50_ms": "tta_p50", "tta_p90_ms": "tta_p90",
                      "admissions_per_min": "admissions_per_min"}
# Per-class measures with medians but no ratio (a count that is mostly 0 on both sides).
_MEDIAN_BY_CLASS = ("never_admitted",)


def setting(qps: float | None, burst: int | None) -> str:
    """``50/100``; ``external`` for a manager whose limits we do not set."""
    return "external" if qps is None else f"{qps:g}/{burst}"


def run_label(manager: str, qps: float | None, burst: int | None, round_no: int = 1) -> str:
    label = f"{manager} {setting(qps, burst)}"
    return label if round_no <= 1 else f"{label} #{round_no}"


def run_entry(manager: str, version: str, metrics: Mapping[str, Any], label: str) -> dict[str, Any]:
    """One ``runs`` entry: the contract's keys first, then the run's other measures."""
    rest = {k: v for k, v in metrics.items() if k not in ENTRY_KEYS and k not in ("reference", "ratio")}
    entry: dict[str, Any] = {"manager": manager, "version": version,
                             **{k: metrics.get(k) for k in ENTRY_KEYS[2:]}}
    entry.update(rest)
    entry["mode"] = metrics.get("manager")
    entry["label"] = label
    return entry


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return None if ours is None or not theirs else round(ours / theirs, 3)


def ratio_to_reference(metrics: Mapping[str, Any], ref: Mapping[str, Any]) -> dict[str, Any]:
    """One run over Kueue's published means; a measure the run has not (the floor's usage:
    it writes no queue status) has no ratio."""
    tta, ref_tta = metrics.get("tta_ms") or {}, ref.get("tta_ms") or {}
    return {"wall": _ratio(metrics.get("wall_s"), ref.get("wall_s")),
            "usage": _ratio(metrics.get("usage_pct"), ref.get("usage_pct")),
            "tta": {c: _ratio(v, ref_tta[c]) for c, v in tta.items() if c in ref_tta}}


def _medians(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {key: _median(r.get(key) for r in runs) for key in _COMPARED}
    for key in (*_COMPARED_BY_CLASS, *_MEDIAN_BY_CLASS):
        classes = sorted({c for r in runs for c in (r.get(key) or {})})
        out[key] = {c: _median((r.get(key) or {}).get(c) for r in runs) for c in classes}
    out["runs"] = len(runs)
    return out


def comparison(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per client setting with both managers: medians of each, and pykueue / Kueue."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(setting(r.get("qps"), r.get("burst")) for r in runs):
        mine, theirs = _in_setting(runs, key, PYKUEUE), _in_setting(runs, key, KUEUE)
        if not mine or not theirs:
            continue
        ours, ref = _medians(mine), _medians(theirs)
        ratio: dict[str, Any] = {name: _ratio(ours[k], ref[k]) for k, name in _COMPARED.items()}
        for measure, name in _COMPARED_BY_CLASS.items():
            ratio[name] = {c: _ratio(v, ref[measure].get(c)) for c, v in ours[measure].items()}
        out[key] = {PYKUEUE: ours, KUEUE: ref, "ratio": ratio}
    return out


def _in_setting(runs: Sequence[Mapping[str, Any]], key: str, manager: str) -> list[Mapping[str, Any]]:
    return [r for r in runs if setting(r.get("qps"), r.get("burst")) == key and r["manager"] == manager]


def floor_comparison(runs: Sequence[Mapping[str, Any]], floor: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per client setting the floor ran in: its medians, and each manager's over them."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(setting(r.get("qps"), r.get("burst")) for r in floor):
        base = _medians(_in_setting(floor, key, FLOOR))
        entry: dict[str, Any] = {FLOOR: base}
        for manager in (PYKUEUE, KUEUE):
            mine = _in_setting(runs, key, manager)
            if mine:
                ours = _medians(mine)
                entry[f"{manager}_over_floor"] = {
                    "wall": _ratio(ours["wall_s"], base["wall_s"]),
                    "tta": {c: _ratio(v, base["tta_ms"].get(c)) for c, v in ours["tta_ms"].items()}}
        out[key] = entry
    return out


def summary(entries: list[dict[str, Any]], top: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON line's metrics: ``top`` (one run's own metrics), ``runs``, ``compare`` and,
    when the floor ran, ``floor_runs`` and ``floor``."""
    metrics = dict(top)
    floor = [e for e in entries if e["manager"] == FLOOR]
    runs = [e for e in entries if e["manager"] != FLOOR]
    metrics["runs"] = runs
    compared = comparison(runs)
    if compared:
        metrics["compare"] = compared
    if floor:
        metrics["floor_runs"] = floor
        metrics["floor"] = floor_comparison(runs, floor)
    versions = {e["manager"]: e["version"] for e in runs}
    if KUEUE in versions:
        metrics["kueue_version"] = versions[KUEUE]
    return metrics


def top_index(entries: Sequence[Mapping[str, Any]]) -> int:
    """Which run the top-level keys describe: the last pykueue run, else the last run."""
    mine = [i for i, e in enumerate(entries) if e["manager"] == PYKUEUE]
    return mine[-1] if mine else len(entries) - 1
