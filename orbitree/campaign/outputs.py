"""The outputs of ``orbitree campaign``: ``summary.csv``, ``campaign.json``, ``faults.csv``, the
plots and ``index.md``, and the table printed at the end (the runs themselves:
:mod:`orbitree.campaign.local`)."""

from __future__ import annotations

import csv
import json
import os
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from orbitree.campaign.runs import CampaignResult
from orbitree.campaign.spec import Campaign
from orbitree.skills.capture import AXES, ENVELOPES, EnvelopeError

FIXED_COLUMNS = ["run", "case", "cycle", "seed", "status", "reason", "sim_time_s", "wall_time_s"]
SUMMARY_SKIP = {"mission", "status", "reason", "seed", "sim_time_s", "wall_time_s"}



def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys; lists stay whole (written as JSON)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool | list | tuple | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def write_csv(rows: list[dict[str, Any]], path: Path) -> list[str]:
    flat = [{k: v for k, v in flatten(row["summary"]).items() if k not in SUMMARY_SKIP} for row in rows]
    extra = list(dict.fromkeys(k for f in flat for k in f))
    columns = [*FIXED_COLUMNS, *extra, "overrides", "log"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row, fields in zip(rows, flat, strict=True):
            values = {**{c: row[c] for c in FIXED_COLUMNS}, **fields}
            values["overrides"] = "; ".join(row["overrides"])
            values["log"] = os.path.relpath(row["log"], path.parent) if row["log"] else ""
            writer.writerow([_cell(values.get(c)) for c in columns])
    return columns


def _worst(rows: list[dict[str, Any]], pick: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
    best = None
    for row in rows:
        value = pick(row["summary"] or {})
        number = isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)
        if number and (best is None or abs(value) > abs(best["value"])):
            best = {"value": value, "run": row["run"]}
    return best


def _exceeded(row: dict[str, Any], campaign: Campaign) -> list[str]:
    """Safety limits ground truth crossed in a run (simulation: the ``true_*`` summary fields)."""
    s = row["summary"] or {}
    limits = s.get("safety_limits")  # the run's own limits, overrides included
    if limits is None:
        model = campaign.safety
        if model is None:
            return []
        limits = {"max_force_n": model.max_force, "max_tcp_speed_mps": model.max_tcp_speed}
    out = []
    if (s.get("true_max_contact_force_n") or 0.0) > limits["max_force_n"]:
        out.append("force")
    if (s.get("true_max_tcp_speed_mps") or 0.0) > limits["max_tcp_speed_mps"]:
        out.append("tcp_speed")
    if (s.get("true_workspace_exit_m") or 0.0) > 0.0:
        out.append("workspace")
    return out


def fault_outcomes(rows: list[dict[str, Any]], campaign: Campaign) -> dict[str, dict[str, int]]:
    """Per injected fault kind: runs that succeeded, stopped safely (ABORTED or FAILURE with no
    limit crossed), crossed a limit (``violation``) or crashed (``error``)."""
    table: dict[str, dict[str, int]] = {}
    for row in rows:
        kinds = sorted({f["kind"] for f in (row["summary"] or {}).get("faults") or []})
        if row["status"] == "error":
            outcome = "error"
        elif _exceeded(row, campaign):
            outcome = "violation"
        elif row["status"] == "SUCCESS":
            outcome = "success"
        else:
            outcome = "safe_abort"
        for kind in kinds or (["none"] if any((r["summary"] or {}).get("faults") for r in rows) else []):
            counts = table.setdefault(kind, {"success": 0, "safe_abort": 0, "violation": 0, "error": 0})
            counts[outcome] += 1
    return table


def aggregate(campaign: Campaign, result: CampaignResult, workers: int) -> dict[str, Any]:
    rows = result.rows
    statuses = Counter(r["status"] for r in rows)
    captures = [r["summary"].get("in_capture_envelope") for r in rows if r["summary"]]
    captures = [c for c in captures if isinstance(c, bool)]
    worst = {}
    for axis in AXES:
        found = _worst(rows, lambda s, a=axis: (s.get("final_error") or {}).get(a))
        if found is not None:
            worst[axis] = found
    worst_true = {}
    for axis in AXES:
        found = _worst(rows, lambda s, a=axis: (s.get("final_error_true") or {}).get(a))
        if found is not None:
            worst_true[axis] = found
    truths = [r["summary"].get("in_capture_envelope_true") for r in rows if r["summary"]]
    truths = [c for c in truths if isinstance(c, bool)]
    walls = [r["wall_time_s"] for r in rows]
    envelope = None
    if campaign.envelope:
        env = ENVELOPES[campaign.envelope]
        envelope = {
            "name": campaign.envelope,
            "lower": EnvelopeError.from_si(np.asarray(env.lower)).as_dict(),
            "upper": EnvelopeError.from_si(np.asarray(env.upper)).as_dict(),
        }
    return {
        "campaign": campaign.name,
        "file": str(campaign.file),
        "mission": os.path.normpath(campaign.mission),
        "cases": result.cases,
        "cycles": campaign.model.cycles,
        "planned_runs": result.planned,
        "runs": len(rows),
        "cancelled": result.planned - len(rows),
        "interrupted": result.interrupted,
        "workers": workers,
        "statuses": dict(statuses),
        "success_rate": round(statuses["SUCCESS"] / len(rows), 4) if rows else None,
        "in_capture_envelope_rate": round(sum(captures) / len(captures), 4) if captures else None,
        "worst_final_error": worst or None,
        "in_capture_envelope_true_rate": round(sum(truths) / len(truths), 4) if truths else None,
        "worst_final_error_true": worst_true or None,
        "limit_violations": sum(bool(_exceeded(r, campaign)) for r in rows),
        "fault_outcomes": fault_outcomes(rows, campaign) or None,
        "peak_contact_force_n": _worst(rows, lambda s: s.get("max_contact_force_n")),
        "peak_contact_force_true_n": _worst(rows, lambda s: s.get("true_max_contact_force_n")),
        "wall_time_s": {
            "median": round(statistics.median(walls), 3) if walls else None,
            "total": round(sum(walls), 3),
            "elapsed": round(result.elapsed_s, 3),
        },
        "envelope": envelope,
    }


def write_outputs(campaign: Campaign, result: CampaignResult, out: Path) -> None:
    from orbitree.report.campaign import campaign_facts, campaign_figures, campaign_tables, read_summary_csv
    from orbitree.report.figures import Report, write_index

    write_csv(result.rows, out / "summary.csv")
    (out / "campaign.json").write_text(json.dumps(result.aggregate, indent=2) + "\n", encoding="utf-8")
    tables = campaign_tables(result.aggregate)
    for _, header, rows in tables:
        with (out / "faults.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
    figures = campaign_figures(read_summary_csv(out / "summary.csv"), result.aggregate["envelope"], out)
    write_index(Report(f"Campaign report: {campaign.name}", out, figures, campaign_facts(result.aggregate),
                       tables=tables), out)


def print_table(result: CampaignResult, file: Any = None) -> None:
    """The aggregate figures as a rich table (stdout by default)."""
    from rich.console import Console
    from rich.table import Table

    from orbitree.report.campaign import campaign_facts

    table = Table(title=f"campaign {result.aggregate.get('campaign', '')}", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value")
    for label, value in campaign_facts(result.aggregate):
        table.add_row(label, value)
    Console(file=file).print(table)
    faults = result.aggregate.get("fault_outcomes")
    if faults:
        per_kind = Table(title="outcome per injected fault kind")
        for column in ("fault", "success", "safe abort", "violation", "error"):
            per_kind.add_column(column, justify="left" if column == "fault" else "right")
        for kind, counts in sorted(faults.items()):
            per_kind.add_row(kind, *(str(counts[k]) for k in ("success", "safe_abort", "violation", "error")))
        Console(file=file).print(per_kind)
