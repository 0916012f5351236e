"""``orbitree report``: the figures a paper shows, drawn from one mission log or one campaign.

**One run** (an ``orbitree-log/1`` file, see :mod:`orbitree.runtime.recorder`) gives, in ``DIR``:

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

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from orbitree.language.keys import (
    SERVO_ERROR,
    SERVO_ERROR_NORM,
    SERVO_GAIN,
    robot_key,
    robot_of_wrench_key,
    target_key,
)
from orbitree.report.figures import FigureEntry, Report, save_figure, write_index
from orbitree.runtime.recorder import Log
from orbitree.skills.capture import ENVELOPES, CaptureEnvelope, EnvelopeError, envelope_error, inside

DOCK_KIND = "admittance_dock"
CAPTURE_KIND = "capture"
DOCK_MARGIN_S = 2.0
GRAPPLE_KINDS = ("track", "grapple", "despin", "dock_pull")
GRAPPLE_PHASES = (("track", "tab:blue"), ("grapple", "tab:orange"), ("despin", "tab:red"),
                  ("dock_pull", "tab:purple"))


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
        moment = _moment_from_poses(log, envelope, robot_key(robot, "tcp_pose"), target_key(target, "pose_base"))
        if moment is not None:
            return moment
    error = series(log, SERVO_ERROR, (6,))
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


def _mark(ax: Any, moment: CaptureMoment) -> None:
    if moment.t is not None:
        label = f"capture range, t = {moment.t:.3f} s"
        ax.axvline(moment.t, color="k", linestyle="--", linewidth=1.0, label=label)


def _shade(ax: Any, intervals: list[tuple[float, float]], label: str, colour: str) -> None:
    for i, (start, end) in enumerate(intervals):
        ax.axvspan(start, end, color=colour, alpha=0.12, label=label if i == 0 else None)


def error_figure(log: Log, moment: CaptureMoment, out: Path) -> FigureEntry:
    entry = FigureEntry("error_convergence", "Servo error per axis; dashed: capture-range moment")
    error = series(log, SERVO_ERROR, (6,))
    if error is None:
        entry.note = "skipped: no /servo/error in the log (no approach ran, or record.keys does not match it)"
        return entry
    norm = series(log, SERVO_ERROR_NORM)
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
    entry.file = save_figure(fig, out / "error_convergence.png")
    return entry


def gain_figure(log: Log, moment: CaptureMoment, out: Path) -> FigureEntry:
    entry = FigureEntry("gain", "Adaptive gain λ of the visual servo over time")
    gain = series(log, SERVO_GAIN)
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
    entry.file = save_figure(fig, out / "gain.png")
    return entry


def _wrench_key(log: Log) -> str | None:
    robot = _param(log, (DOCK_KIND,), "robot")
    if robot:
        return robot_key(robot, "wrench")
    for tick in log.ticks:
        for key in tick.get("bb") or {}:
            if robot_of_wrench_key(key):
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
    entry.file = save_figure(fig, out / "wrench.png")
    return entry


def _grapple_keys(log: Any, prefix: str, suffix: str) -> list[str]:
    found: set[str] = set()
    for tick in log.ticks:
        for key in tick.get("bb") or {}:
            if key.startswith(prefix) and key.endswith(suffix):
                found.add(key)
    return sorted(found)


def grapple_figure(log: Any, out: Path) -> FigureEntry:
    entry = FigureEntry("grapple", "Spin rate, stand-off per arm, contact forces per arm and internal force; "
                                   "shaded: track, grapple, despin, dock")
    spins = _grapple_keys(log, "/target/", "/spin_rate")
    forces = [k for k in _grapple_keys(log, "/grapple/", "/force")]
    if not spins and not forces:
        entry.note = "skipped: no /grapple/* or /target/*/spin_rate in the log (no grapple ran)"
        return entry
    fig = Figure(figsize=(10, 9), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    for key in spins:
        s = series(log, key)
        if s is not None:
            axes[0].plot(s.t, s.values * 60.0 / (2.0 * np.pi), label=key.split("/")[2])
    axes[0].set_ylabel("spin (rpm)")
    for key in _grapple_keys(log, "/grapple/", "/standoff"):
        s = series(log, key)
        if s is not None:
            axes[1].plot(s.t, s.values * 1e3, label=key.split("/")[2])
    axes[1].set_ylabel("stand-off (mm)")
    for key in forces:
        s = series(log, key, (3,))
        if s is not None:
            axes[2].plot(s.t, np.linalg.norm(s.values, axis=1), label=key.split("/")[2])
    axes[2].set_ylabel("force on the target (N)")
    internal = series(log, "/grapple/internal_force")
    if internal is not None:
        axes[3].plot(internal.t, internal.values, color="k", label="internal")
    axes[3].set_ylabel("internal force (N)")
    for kind, colour in GRAPPLE_PHASES:
        intervals = running_intervals(log, {int(n["id"]) for n in _nodes(log, kind) if n.get("kind") == kind})
        for ax in axes:
            _shade(ax, intervals, kind, colour)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes[-1].set_xlabel("mission time (s)")
    fig.suptitle(f"{log.header.get('mission', '')}: grapple, despin, dock")
    entry.file = save_figure(fig, out / "grapple.png")
    return entry


def run_report(log: Log, out_dir: str | Path, source: str | Path = "") -> Report:
    """Write the figures and ``index.md`` of one run to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    moment = capture_moment(log)
    figures = [error_figure(log, moment, out), gain_figure(log, moment, out), wrench_figure(log, out)]
    if any(n.get("kind") in GRAPPLE_KINDS for n in log.header.get("nodes", [])):
        figures.append(grapple_figure(log, out))
    summary = (log.footer or {}).get("summary") or {}
    facts = [
        ("mission", str(log.header.get("mission", ""))),
        ("seed", str(log.header.get("seed", ""))),
        ("status", f"{summary.get('status', 'unknown (no footer)')} {summary.get('reason', '')}".strip()),
        ("mission time", _mission_time(log, summary)),
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
    if summary.get("status") not in (None, "SUCCESS"):
        result.headline = f"**{summary['status']}**: {summary.get('reason', '')}"
    result.index = write_index(result, out)
    return result


def _mission_time(log: Log, summary: dict[str, Any]) -> str:
    """Mission time and ticks as the run counted them (the record written when the tree is halted
    repeats the last tick's number: it is not a tick)."""
    if not log.ticks:
        return "no ticks"
    ticks = summary.get("ticks", len({tick["n"] for tick in log.ticks}))
    return f"{log.ticks[-1]['t']:.3f} s, {ticks} ticks"


def _fact(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
