"""``orbitree report``: the figures a paper shows, drawn from one mission log
(:mod:`orbitree.report.run`) or from one campaign directory (:mod:`orbitree.report.campaign`)."""

from __future__ import annotations

from pathlib import Path

from orbitree.report.campaign import campaign_report
from orbitree.report.figures import Report
from orbitree.report.run import run_report
from orbitree.runtime.recorder import read_log


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
