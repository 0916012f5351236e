"""``orbitree report``: the figures a paper shows, drawn from one mission log or one campaign.

**One run** (an ``orbitree-log/1`` file, see :mod:`orbitree.recorder`) gives, in ``DIR``:

* ``error_convergence.png`` — the servo error ``/servo/error`` per axis against mission time:
  translation x, y, z in mm, rotation rx, ry, rz in deg, and ``‖e‖`` (``/servo/error_norm``),
  with a vertical line at the *capture-range moment* (below);
* ``gain.png`` — the adaptive gain λ (``/servo/gain``) against time;
* ``wrench.png`` — forces and torques ``/robot/<name>/wrench`` (TCP frame) with the docking
  phase shaded: the intervals in which a node of kind (or name) ``admittance_dock`` was RUNNING,
  read from the status changes in the log (and, in another colour, those of ``capture``: the
  hooks closing); the time axis is zoomed on capture and docking (2 s either side) when there is
  a docking phase;
* ``index.md`` — the run's key figures, the figures, and a note for every figure skipped.

Blackboard values reach the log only when written and only if they match the mission's
``record: {keys: [...]}`` globs; a figure whose keys are missing is skipped with a note, never an
error.

**Capture-range moment**: the first mission time at which the TCP is inside the capture
envelope (:mod:`orbitree.skills.capture`; the envelope named by the ``approach`` / ``capture``
node, ``sirom`` by default). Two ways, the first that the log allows:

1. *envelope error* (exact): :func:`~orbitree.skills.capture.envelope_error` of the latest
   ``/robot/<robot>/tcp_pose`` and ``/target/<target>/pose_base`` (the vision estimate, as the
   ``capture`` leaf uses it), checked with :func:`~orbitree.skills.capture.inside` at each tick
   where either was written — when both keys are recorded;
2. *servo error* (approximation): the PBVS error is the offset of the camera from the approach's
   aim point, which has envelope error ``(0, 0, standoff, 0, 0, 0)``; so ``e + (0, 0, standoff,
   0, 0, 0)`` is checked against the per-axis limits. The x, y and rotation limits are
   symmetric, so the camera axes' signs do not matter; the approximation lies in taking the
   camera's axes for the target's (the camera looks along the docking axis) and in ignoring the
   lever arm between camera and TCP.

The index says which one was used.

**A campaign** (a directory holding ``summary.csv`` and ``campaign.json`` from
``orbitree campaign``) gives ``final_error.png`` (final error per case and axis against the
envelope limits, one dot per run), ``success.png`` (outcomes per case) and ``wall_time.png``
(histogram of the wall time per run), and an ``index.md``.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend).
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from orbitree.recorder import Log, read_log
from orbitree.skills.capture import AXES, ENVELOPES, CaptureEnvelope, EnvelopeError, envelope_error, inside

DOCK_KIND = "admittance_dock"
CAPTURE_KIND = "capture"
DOCK_MARGIN_S = 2.0
DPI = 120
AXIS_LABELS = {
    "x_mm": "x (mm)",
    "y_mm": "y (mm)",
    "z_mm": "z (mm)",
    "rx_deg": "rx (deg)",
    "ry_deg": "ry (deg)",
    "rz_deg": "rz (deg)",
}
STATUS_COLOURS = {"SUCCESS": "tab:green", "FAILURE": "tab:orange", "ABORTED": "tab:red", "error": "tab:gray"}


@dataclass
class FigureEntry:
    """One figure of a report: written to ``file``, or skipped with ``note`` saying why."""

    name: str
    caption: str
    file: Path | None = None
    note: str = ""


@dataclass
class Report:
    title: str
    source: Path
    figures: list[FigureEntry]
    facts: list[tuple[str, str]] = field(default_factory=list)
    index: Path | None = None
    tables: list[tuple[str, list[str], list[list[Any]]]] = field(default_factory=list)  # title, header, rows


def report(path: str | Path, out_dir: str | Path) -> Report:
    """Draw the report of a mission log, or of a campaign directory (with ``summary.csv``).

    Raises ``FileNotFoundError`` / ``ValueError`` when ``path`` is neither.
    """
    path = Path(path)
    if path.is_dir():
        if not (path / "summary.csv").is_file():
            raise ValueError(f"{path}: a directory without summary.csv is not a campaign")
        return campaign_report(path, out_dir)
    return run_report(read_log(path), out_dir, source=path)


# --------------------------------------------------------------------------- one run: data


@dataclass
class Series:
    """Samples of one blackboard key: times (n,) and values (n, ...)."""

    t: np.ndarray
    values: np.ndarray


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, dict) and "matrix" in value:  # a StampedPose as the recorder logs it
        value = value["matrix"]
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return array if array.size and np.isfinite(array).all() else None


def series(log: Log, key: str, shape: tuple[int, ...] = ()) -> Series | None:
    """Every recorded value of ``key`` of the given shape, with its tick time; None if there are none."""
    times, values = [], []
    for tick in log.ticks:
        bb = tick.get("bb")
        if not bb or key not in bb:
            continue
        array = _as_array(bb[key])
        if array is None or array.shape != shape:
            continue
        times.append(float(tick["t"]))
        values.append(array)
    if not times:
        return None
    return Series(np.asarray(times), np.asarray(values))


def _nodes(log: Log, kind: str) -> list[dict[str, Any]]:
    return [n for n in log.header.get("nodes", []) if n.get("kind") == kind or n.get("name") == kind]


def _param(log: Log, kinds: Iterable[str], name: str) -> str | None:
    for kind in kinds:
        for node in _nodes(log, kind):
            value = node.get("params", {}).get(name)
            if isinstance(value, str):
                return value
    return None


def running_intervals(log: Log, node_ids: set[int]) -> list[tuple[float, float]]:
    """(start, end) mission times in which any of ``node_ids`` was RUNNING, from the status changes.

    An interval still open at the end of the log ends at the last tick.
    """
    opened: dict[int, float] = {}
    out: list[tuple[float, float]] = []
    for tick in log.ticks:
        for key, status in tick.get("status", {}).items():
            node = int(key)
            if node not in node_ids:
                continue
            if status == "RUNNING":
                opened.setdefault(node, float(tick["t"]))
            elif node in opened:
                out.append((opened.pop(node), float(tick["t"])))
    end = float(log.ticks[-1]["t"]) if log.ticks else 0.0
    out.extend((start, end) for start in opened.values())
    return sorted(out)


def docking_intervals(log: Log) -> list[tuple[float, float]]:
    return running_intervals(log, {int(n["id"]) for n in _nodes(log, DOCK_KIND)})


def envelope_of(log: Log) -> CaptureEnvelope:
    """The envelope named by the mission's approach / capture node (``sirom`` when unnamed)."""
    name = _param(log, ("capture", "approach"), "envelope") or "sirom"
    return ENVELOPES.get(name, ENVELOPES["sirom"])


@dataclass(frozen=True)
class CaptureMoment:
    t: float | None  # mission time, s; None when the TCP never entered the envelope (or unknown)
    method: str  # how it was found, for the index


def capture_moment(log: Log) -> CaptureMoment:
    """First mission time inside the capture envelope (see the module docstring for the method)."""
    envelope = envelope_of(log)
    robot = _param(log, ("approach", "capture", DOCK_KIND), "robot")
    target = _param(log, ("approach", "capture", DOCK_KIND), "target")
    if robot and target:
        moment = _moment_from_poses(log, envelope, f"/robot/{robot}/tcp_pose", f"/target/{target}/pose_base")
        if moment is not None:
            return moment
    error = series(log, "/servo/error", (6,))
    if error is None:
        return CaptureMoment(None, "unknown: the log has neither the TCP and target poses nor /servo/error")
    aim = np.array([0.0, 0.0, envelope.standoff, 0.0, 0.0, 0.0])
    method = (
        f"servo error + standoff against the {envelope.name or 'capture'} envelope's per-axis limits "
        "(approximation: the TCP and target poses are not both recorded)"
    )
    for t, e in zip(error.t, error.values, strict=True):
        if inside(envelope, EnvelopeError.from_si(e + aim)):
            return CaptureMoment(float(t), method)
    return CaptureMoment(None, method)


def _moment_from_poses(log: Log, envelope: CaptureEnvelope, tcp_key: str, target_key: str) -> CaptureMoment | None:
    tcp = target = None
    seen = False
    method = f"envelope error of {tcp_key} and {target_key} against the {envelope.name or 'capture'} envelope"
    for tick in log.ticks:
        bb = tick.get("bb") or {}
        changed = False
        for key in (tcp_key, target_key):
            if key in bb:
                array = _as_array(bb[key])
                if array is not None and array.shape == (4, 4):
                    tcp, target = (array, target) if key == tcp_key else (tcp, array)
                    changed = True
        if not changed or tcp is None or target is None:
            continue
        seen = True
        try:
            error = envelope_error(tcp, target)
        except ValueError:  # not a rigid transform: skip the sample
            continue
        if inside(envelope, error):
            return CaptureMoment(float(tick["t"]), method)
    return CaptureMoment(None, method) if seen else None


# --------------------------------------------------------------------------- one run: figures


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI)
    return path


def _mark(ax: Any, moment: CaptureMoment) -> None:
    if moment.t is not None:
        label = f"capture range, t = {moment.t:.3f} s"
        ax.axvline(moment.t, color="k", linestyle="--", linewidth=1.0, label=label)


def _shade(ax: Any, intervals: list[tuple[float, float]], label: str, colour: str) -> None:
    for i, (start, end) in enumerate(intervals):
        ax.axvspan(start, end, color=colour, alpha=0.12, label=label if i == 0 else None)


def error_figure(log: Log, moment: CaptureMoment, out: Path) -> FigureEntry:
    entry = FigureEntry("error_convergence", "Servo error per axis; dashed: capture-range moment")
    error = series(log, "/servo/error", (6,))
    if error is None:
        entry.note = "skipped: no /servo/error in the log (no approach ran, or record.keys does not match it)"
        return entry
    norm = series(log, "/servo/error_norm")
    panels = 3 if norm is not None else 2
    fig = Figure(figsize=(9, 2.6 * panels), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True)
    for i, name in enumerate("xyz"):
        axes[0].plot(error.t, error.values[:, i] * 1e3, label=name)
    for i, name in enumerate(("rx", "ry", "rz")):
        axes[1].plot(error.t, np.degrees(error.values[:, 3 + i]), label=name)
    axes[0].set_ylabel("translation error (mm)")
    axes[1].set_ylabel("rotation error (deg)")
    if norm is not None:
        axes[2].plot(norm.t, norm.values, color="k", label="‖e‖")
        axes[2].set_yscale("log" if np.all(norm.values > 0) else "linear")
        axes[2].set_ylabel("‖e‖ (m, rad)")
    else:
        entry.note = "no /servo/error_norm in the log: ‖e‖ panel left out"
    for ax in axes:
        _mark(ax, moment)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("mission time (s)")
    fig.suptitle(f"{log.header.get('mission', '')}: error convergence")
    entry.file = _save(fig, out / "error_convergence.png")
    return entry


def gain_figure(log: Log, moment: CaptureMoment, out: Path) -> FigureEntry:
    entry = FigureEntry("gain", "Adaptive gain λ of the visual servo over time")
    gain = series(log, "/servo/gain")
    if gain is None:
        entry.note = "skipped: no /servo/gain in the log (no approach ran, or record.keys does not match it)"
        return entry
    fig = Figure(figsize=(9, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(gain.t, gain.values, color="tab:blue", label="λ")
    _mark(ax, moment)
    ax.set_xlabel("mission time (s)")
    ax.set_ylabel("λ (1/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(f"{log.header.get('mission', '')}: adaptive gain")
    entry.file = _save(fig, out / "gain.png")
    return entry


def _wrench_key(log: Log) -> str | None:
    robot = _param(log, (DOCK_KIND,), "robot")
    if robot:
        return f"/robot/{robot}/wrench"
    for tick in log.ticks:
        for key in tick.get("bb") or {}:
            if key.startswith("/robot/") and key.endswith("/wrench"):
                return key
    return None


def wrench_figure(log: Log, out: Path) -> FigureEntry:
    entry = FigureEntry("wrench", "Forces and torques at the wrist (TCP frame); shaded: capture and docking")
    key = _wrench_key(log)
    wrench = series(log, key, (6,)) if key else None
    if wrench is None:
        entry.note = "skipped: no /robot/<name>/wrench in the log (no F/T sensor, or record.keys misses it)"
        return entry
    intervals = docking_intervals(log)
    capturing = running_intervals(log, {int(n["id"]) for n in _nodes(log, CAPTURE_KIND)})
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for i, name in enumerate(("Fx", "Fy", "Fz")):
        axes[0].plot(wrench.t, wrench.values[:, i], label=name)
    for i, name in enumerate(("Tx", "Ty", "Tz")):
        axes[1].plot(wrench.t, wrench.values[:, 3 + i], label=name)
    axes[0].set_ylabel("force (N)")
    axes[1].set_ylabel("torque (N·m)")
    for ax in axes:
        _shade(ax, capturing, "capture (hooks closing)", "tab:orange")
        _shade(ax, intervals, "docking", "tab:purple")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    if intervals:
        low = max(min(s for s, _ in intervals + capturing) - DOCK_MARGIN_S, float(wrench.t[0]))
        high = min(intervals[-1][1] + DOCK_MARGIN_S, float(wrench.t[-1]))
        if high > low:
            axes[1].set_xlim(low, high)
    else:
        entry.note = f"no {DOCK_KIND} node ran: the whole run is shown"
    axes[-1].set_xlabel("mission time (s)")
    fig.suptitle(f"{log.header.get('mission', '')}: {key}")
    entry.file = _save(fig, out / "wrench.png")
    return entry


def run_report(log: Log, out_dir: str | Path, source: str | Path = "") -> Report:
    """Write the figures and ``index.md`` of one run to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    moment = capture_moment(log)
    figures = [error_figure(log, moment, out), gain_figure(log, moment, out), wrench_figure(log, out)]
    summary = (log.footer or {}).get("summary") or {}
    facts = [
        ("mission", str(log.header.get("mission", ""))),
        ("seed", str(log.header.get("seed", ""))),
        ("status", f"{summary.get('status', 'unknown (no footer)')} {summary.get('reason', '')}".strip()),
        ("mission time", f"{log.ticks[-1]['t']:.3f} s, {len(log.ticks)} ticks" if log.ticks else "no ticks"),
        ("capture-range moment", f"{moment.t:.3f} s" if moment.t is not None else "never"),
        ("capture-range method", moment.method),
    ]
    for key in ("final_error", "in_capture_envelope", "max_contact_force_n"):
        if summary.get(key) is not None:
            facts.append((key, _fact(summary[key])))
    intervals = docking_intervals(log)
    if intervals:
        facts.append(("docking", ", ".join(f"{a:.3f}–{b:.3f} s" for a, b in intervals)))
    if log.truncated:
        facts.append(("note", "the log's last line was cut off (the run was interrupted)"))
    result = Report(f"Run report: {log.header.get('mission', '')}", Path(source), figures, facts)
    result.index = write_index(result, out)
    return result


def _fact(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def write_index(result: Report, out: Path) -> Path:
    lines = [f"# {result.title}", "", f"Source: `{result.source}`", ""]
    if result.facts:
        lines += ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in result.facts), ""]
    for title, header, rows in result.tables:
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
        lines.append("")
    for fig in result.figures:
        lines.append(f"## {fig.caption}")
        lines.append("")
        if fig.file is not None:
            lines.append(f"![{fig.name}]({fig.file.name})")
            lines.append("")
        if fig.note:
            lines.append(f"*{fig.note}*")
            lines.append("")
    path = out / "index.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- campaigns


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
    entry.file = _save(fig, out / "final_error.png")
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
    entry.file = _save(fig, out / "success.png")
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
    entry.file = _save(fig, out / "wall_time.png")
    return entry


def campaign_figures(rows: list[dict[str, str]], envelope: dict[str, Any] | None, out: Path) -> list[FigureEntry]:
    if not rows:
        return [FigureEntry("campaign", "Campaign figures", note="skipped: no runs in summary.csv")]
    return [final_error_figure(rows, envelope, out), success_figure(rows, out), wall_time_figure(rows, out)]


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
