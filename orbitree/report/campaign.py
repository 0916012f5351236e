"""The report of a campaign directory (``summary.csv`` and ``campaign.json`` from ``orbitree
campaign``): ``final_error.png`` (final error per case and axis against the envelope limits, one
dot per run), ``success.png`` (outcomes per case), ``wall_time.png`` (histogram of the wall time
per run), and an ``index.md`` with the aggregate figures and the outcome per injected fault kind.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from orbitree.report.figures import AXIS_LABELS, STATUS_COLOURS, FigureEntry, Report, save_figure, write_index
from orbitree.skills.capture import AXES


def read_summary_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _case_order(rows: list[dict[str, str]]) -> list[str]:
    return list(dict.fromkeys(row["case"] for row in rows))


def _case_ticks(ax: Any, cases: list[str]) -> None:
    step = max(1, math.ceil(len(cases) / 30))
    ticks = list(range(0, len(cases), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([cases[i] for i in ticks], rotation=90, fontsize="x-small")
    ax.set_xlim(-0.6, len(cases) - 0.4)


def final_error_figure(rows: list[dict[str, str]], envelope: dict[str, Any] | None, out: Path) -> FigureEntry:
    entry = FigureEntry("final_error", "Final error per case and axis; band: capture envelope limits")
    columns = [f"final_error.{axis}" for axis in AXES]
    if not any(_number(row.get(c)) is not None for row in rows for c in columns):
        entry.note = "skipped: no run has a final error (the mission has no capture step)"
        return entry
    cases = _case_order(rows)
    position = {case: i for i, case in enumerate(cases)}
    fig = Figure(figsize=(max(9, 0.25 * len(cases) + 4), 7), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True)
    for ax, axis, column in zip(axes.flat, AXES, columns, strict=True):
        points = [(position[row["case"]], _number(row.get(column))) for row in rows]
        xs = np.array([x for x, y in points if y is not None], dtype=float)
        ys = np.array([y for x, y in points if y is not None], dtype=float)
        colours: Any = "tab:blue"
        if envelope:
            low, high = envelope["lower"][axis], envelope["upper"][axis]
            ax.axhspan(low, high, color="tab:green", alpha=0.1)
            for limit in (low, high):
                ax.axhline(limit, color="tab:green", linestyle="--", linewidth=1.0)
            colours = np.where((ys >= low - 1e-9) & (ys <= high + 1e-9), "tab:green", "tab:red")
        ax.scatter(xs, ys, s=14, c=colours, zorder=3)
        ax.set_ylabel(AXIS_LABELS[axis])
        ax.grid(True, alpha=0.3)
        _case_ticks(ax, cases)
    if not envelope:
        entry.note = "no envelope known for this campaign: limits not drawn"
    name = f" ({envelope['name']} envelope)" if envelope else ""
    legend = "; green: within the axis' limits, red: outside" if envelope else ""
    fig.suptitle(f"final error per case and axis{name}{legend}")
    entry.file = save_figure(fig, out / "final_error.png")
    return entry


def success_figure(rows: list[dict[str, str]], out: Path) -> FigureEntry:
    entry = FigureEntry("success", "Outcome of the runs of each case")
    cases = _case_order(rows)
    counts = {case: Counter() for case in cases}
    for row in rows:
        counts[row["case"]][row["status"]] += 1
    statuses = [s for s in STATUS_COLOURS if any(c[s] for c in counts.values())]
    statuses += sorted({s for c in counts.values() for s in c} - set(statuses))
    fig = Figure(figsize=(max(9, 0.25 * len(cases) + 3), 4), layout="constrained")
    ax = fig.subplots()
    bottom = np.zeros(len(cases))
    for status in statuses:
        heights = np.array([counts[case][status] for case in cases], dtype=float)
        ax.bar(range(len(cases)), heights, bottom=bottom, label=status, color=STATUS_COLOURS.get(status))
        bottom += heights
    _case_ticks(ax, cases)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("runs")
    ax.legend(loc="upper right", fontsize="small")
    ok = sum(c["SUCCESS"] for c in counts.values())
    fig.suptitle(f"success per case: {ok} of {len(rows)} runs succeeded")
    entry.file = save_figure(fig, out / "success.png")
    return entry


def wall_time_figure(rows: list[dict[str, str]], out: Path) -> FigureEntry:
    entry = FigureEntry("wall_time", "Wall time per run")
    times = np.array([t for row in rows if (t := _number(row.get("wall_time_s"))) is not None])
    if times.size == 0:
        entry.note = "skipped: no wall times in summary.csv"
        return entry
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.hist(times, bins=min(30, max(5, int(math.sqrt(times.size)) + 1)), color="tab:blue", alpha=0.8)
    ax.axvline(float(np.median(times)), color="k", linestyle="--", label=f"median {np.median(times):.2f} s")
    ax.set_xlabel("wall time per run (s)")
    ax.set_ylabel("runs")
    ax.legend(fontsize="small")
    entry.file = save_figure(fig, out / "wall_time.png")
    return entry


def campaign_figures(rows: list[dict[str, str]], envelope: dict[str, Any] | None, out: Path) -> list[FigureEntry]:
    if not rows:
        return [FigureEntry("campaign", "Campaign figures", note="skipped: no runs in summary.csv")]
    figures = [final_error_figure(rows, envelope, out), success_figure(rows, out), wall_time_figure(rows, out)]
    if "grapple.docked" in rows[0]:  # a grapple campaign: the frontier
        from orbitree.report.grapple import frontier_figure

        figures.append(frontier_figure(rows, out))
    return figures


def campaign_report(campaign_dir: str | Path, out_dir: str | Path) -> Report:
    """Figures and ``index.md`` of a campaign directory written by ``orbitree campaign``."""
    source = Path(campaign_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_summary_csv(source / "summary.csv")
    meta_path = source / "campaign.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    figures = campaign_figures(rows, meta.get("envelope"), out)
    result = Report(f"Campaign report: {meta.get('campaign', source.name)}", source, figures, campaign_facts(meta),
                    tables=campaign_tables(meta))
    result.index = write_index(result, out)
    return result


FAULT_OUTCOMES = ("success", "safe_abort", "violation", "error")


def campaign_tables(meta: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """The outcome per injected fault kind (``fault_outcomes`` of ``campaign.json``), if any."""
    faults = meta.get("fault_outcomes")
    if not faults:
        return []
    rows = [[kind, *(counts.get(k, 0) for k in FAULT_OUTCOMES)] for kind, counts in sorted(faults.items())]
    return [("Outcome per injected fault kind (violation: ground truth crossed a safety limit)",
             ["fault", *FAULT_OUTCOMES], rows)]


def campaign_facts(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """The aggregate figures of ``campaign.json`` as (label, text) rows, for tables and indexes."""
    if not meta:
        return []
    facts = [
        ("runs", f"{meta.get('runs')} of {meta.get('planned_runs')} ({meta.get('cases')} cases × "
                 f"{meta.get('cycles')} cycles)"),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in (meta.get("statuses") or {}).items()) or "none"),
    ]
    if meta.get("success_rate") is not None:
        facts.append(("success rate", f"{100 * meta['success_rate']:.1f} %"))
    if meta.get("in_capture_envelope_rate") is not None:
        rate = 100 * meta["in_capture_envelope_rate"]
        facts.append(("inside capture envelope", f"{rate:.1f} % of the runs that reached capture"))
    for axis, worst in (meta.get("worst_final_error") or {}).items():
        facts.append((f"worst |final error| {axis}", f"{worst['value']:+.3f} ({worst['run']})"))
    if meta.get("in_capture_envelope_true_rate") is not None:
        rate = 100 * meta["in_capture_envelope_true_rate"]
        facts.append(("inside envelope (ground truth)", f"{rate:.1f} % of the runs that reached capture"))
    for axis, worst in (meta.get("worst_final_error_true") or {}).items():
        facts.append((f"worst |true final error| {axis}", f"{worst['value']:+.3f} ({worst['run']})"))
    if meta.get("limit_violations") is not None:
        facts.append(("runs crossing a safety limit", str(meta["limit_violations"])))
    peak = meta.get("peak_contact_force_n")
    if peak:
        facts.append(("peak contact force", f"{peak['value']:.2f} N ({peak['run']})"))
    peak = meta.get("peak_contact_force_true_n")
    if peak:  # a faulty sensor can read more (a spike) or less (a bias, a dropout) than there is
        facts.append(("peak contact force (ground truth)", f"{peak['value']:.2f} N ({peak['run']})"))
    wall = meta.get("wall_time_s") or {}
    if wall:
        facts.append(("wall time per run", f"median {wall.get('median')} s, total {wall.get('total')} s"))
        facts.append(("campaign wall time", f"{wall.get('elapsed')} s on {meta.get('workers')} workers"))
    if meta.get("interrupted"):
        facts.append(("interrupted", f"yes: {meta.get('cancelled')} runs not started"))
    return facts
