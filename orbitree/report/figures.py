"""What every report is made of: figure entries, the report, its ``index.md``, saving a figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

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
    headline: str = ""  # first line under the title: why a run did not succeed


def save_figure(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI)
    return path


def write_index(result: Report, out: Path) -> Path:
    lines = [f"# {result.title}", ""]
    if result.headline:
        lines += [result.headline, ""]
    lines += [f"Source: `{result.source}`", ""]
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
