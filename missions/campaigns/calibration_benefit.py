"""Does calibrating first undo a kinematic and a hand-eye error? The flagship, three ways, side by side.

    python missions/campaigns/calibration_benefit.py -o out/calibration          # 3 placements x 2 seeds
    python missions/campaigns/calibration_benefit.py --plan -o out/calibration_plan  # write and check only

The simulated world is given a fixed, significant error of each kind (issue 14): the camera's
bracket as built (``robots.arm.camera.true_mount``) 2.0 mm and 0.7 deg off the mount the mission
believes, and the arm built with the link errors of ``missions/calibrate_kinematics.yaml``
(``kinematic_errors.offsets``: 0.5-0.8 mm on a2, a3, d4, 0.03-0.05 deg on four angles), on top of
the world's usual per-run draws (lens, board, 0.1 mm / 0.01 deg on every link). For each seed it
then calibrates as a bench would, in this order:

1. ``missions/calibrate_kinematics.yaml`` on that arm (circle point, laser tracker) -> kinematics file;
2. ``missions/calibrate_camera.yaml`` on that arm and camera, its controller using the kinematics
   file (so the hand-eye solve gets true TCP poses) -> intrinsics and ``cam2tcp`` file;

and for each placement (ISO 9283 campaign cases) and seed runs ``missions/sirom_dock.yaml``:

* ``uncalibrated``: the errors, the mission's nominal mount, intrinsics and DH table;
* ``calibrated``: the same world, ``camera.calibration``, ``camera.mount`` and ``kinematics``
  naming the seed's two files;
* ``ideal``: no camera calibration error (lens, bracket) and no kinematic error; the board's
  print and marker errors, the exposure, latency and wrist sensor stay as they are in all three.

A seed is one world: the arm, lens and board as built are drawn from it (the same draws in the
calibration missions and the dock). Every step is an ``orbitree campaign`` (files written into
OUT: ``kinematics.yaml``, ``camera.yaml``, ``dock.yaml``), so each run has its log and row there.
At the end it writes ``results.csv`` (one row per dock: the final error at capture by ground truth
and as estimated, the outcome), ``calibration.csv`` (what each seed's calibration found against
the world as built), ``final_error.png`` and ``index.md`` into ``--docs`` (default OUT).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
MISSIONS = ROOT / "missions"
ISO_CAMPAIGN = MISSIONS / "campaigns" / "sirom_iso9283.yaml"

# the injected errors (fixed for every seed); the nominal mount is the flagship's
NOMINAL_MOUNT = {"xyz": [0, "-120 mm", "-20 mm"], "rpy": [0, 40, 90]}
TRUE_MOUNT = {"xyz": ["1.1 mm", "-121.3 mm", "-19.0 mm"], "rpy": [0.55, 40.55, 90.5]}  # 1.97 mm, 0.71 deg off
KINEMATIC_OFFSETS = {"a2": "0.8 mm", "a3": "-0.6 mm", "d4": "0.5 mm", "theta2": "0.05 deg",
                     "alpha1": "0.04 deg", "beta2": "0.03 deg", "alpha4": "-0.04 deg"}
ERRORS = {"robots.arm.camera.true_mount": TRUE_MOUNT, "robots.arm.kinematic_errors.offsets": KINEMATIC_OFFSETS}
IDEAL = {"robots.arm.camera.focal_error": 0, "robots.arm.camera.principal_point_error": 0,
         "robots.arm.camera.distortion_error": 0, "robots.arm.camera.mount_error": 0,
         "robots.arm.camera.mount_angle_error": 0, "robots.arm.kinematic_errors": {"length": 0, "angle": 0}}

VARIANTS = ("uncalibrated", "calibrated", "ideal")
PLACEMENTS = ("p10", "p24", "p44")  # of the ISO 9283 campaign: x -0.78 to -0.58 m, y -0.3 to 0.1 m
SEEDS = (1, 2)
AXES = ("x_mm", "y_mm", "z_mm", "rx_deg", "ry_deg", "rz_deg")


def iso_cases(ids: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The target placement and start of each ISO 9283 case named in ``ids``."""
    cases = {c["id"]: c["set"] for c in yaml.safe_load(ISO_CAMPAIGN.read_text(encoding="utf-8"))["cases"]}
    missing = [i for i in ids if i not in cases]
    if missing:
        raise SystemExit(f"{ISO_CAMPAIGN}: no case {', '.join(missing)}")
    return {i: cases[i] for i in ids}


def leaf_key(mission: Path, leaf: str, param: str) -> str:
    """The ``--set`` key of ``param`` of the (only) ``leaf`` among the root sequence's children."""
    tree = yaml.safe_load(mission.read_text(encoding="utf-8"))["tree"]
    children = tree["sequence"]["children"]
    index = next(i for i, child in enumerate(children) if leaf in child)
    return f"tree.sequence.children.{index}.{leaf}.{param}"


def seed_files(out: Path, seed: int) -> dict[str, Path]:
    base = (out / "calibration" / f"seed{seed}").resolve()
    return {"kinematics": base / "kinematics.yaml", "camera": base / "camera.yaml", "images": base / "images"}


def calibration_campaigns(out: Path, seeds: tuple[int, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two calibration campaigns (kinematics first, then the camera using its file), one case a seed."""
    kin_mission, cam_mission = MISSIONS / "calibrate_kinematics.yaml", MISSIONS / "calibrate_camera.yaml"
    kin_out = leaf_key(kin_mission, "identify_kinematics", "output")
    views_dir = leaf_key(cam_mission, "calibration_views", "dir")
    cam_dir, cam_out = (leaf_key(cam_mission, "calibrate_camera", p) for p in ("dir", "output"))
    kinematics = {"campaign": "calibrate-kinematics", "mission": str(kin_mission), "cycles": 1, "logs": "failures",
                  "set": dict(ERRORS), "cases": []}
    camera = {"campaign": "calibrate-camera", "mission": str(cam_mission), "cycles": 1, "logs": "failures",
              "set": dict(ERRORS), "cases": []}
    for seed in seeds:
        files = {k: str(v) for k, v in seed_files(out, seed).items()}
        kinematics["cases"].append({"id": f"s{seed}", "set": {"seed": seed, kin_out: files["kinematics"]}})
        camera["cases"].append({"id": f"s{seed}", "set": {
            "seed": seed, "robots.arm.kinematics": files["kinematics"], views_dir: files["images"],
            cam_dir: files["images"], cam_out: files["camera"]}})
    return kinematics, camera


def dock_campaign(out: Path, placements: tuple[str, ...], seeds: tuple[int, ...],
                  variants: tuple[str, ...] = VARIANTS) -> dict[str, Any]:
    """The flagship for every placement x seed x variant."""
    cases = []
    for pid, where in iso_cases(placements).items():
        for seed in seeds:
            files = seed_files(out, seed)
            for variant in variants:
                overrides: dict[str, Any] = {"seed": seed, **where}
                if variant in ("uncalibrated", "calibrated"):
                    overrides.update(ERRORS)
                if variant == "calibrated":
                    overrides.update({"robots.arm.camera.calibration": str(files["camera"]),
                                      "robots.arm.camera.mount": str(files["camera"]),
                                      "robots.arm.kinematics": str(files["kinematics"])})
                if variant == "ideal":
                    overrides.update(IDEAL)
                cases.append({"id": f"{pid}-s{seed}-{variant}", "set": overrides})
    return {"campaign": "calibration-benefit", "mission": str(MISSIONS / "sirom_dock.yaml"), "cycles": 1,
            "logs": "failures", "envelope": "sirom", "set": {"max_duration": "120 s"}, "cases": cases}


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # every case written out in full
        return True


def write_campaign(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=120)
    path.write_text(text, encoding="utf-8")
    return path


def run(path: Path, out: Path, workers: int, progress: bool) -> list[dict[str, Any]]:
    """Load (every case checked) and run one campaign; its rows, in plan order."""
    from orbitree.campaign.local import run_campaign
    from orbitree.campaign.outputs import print_table
    from orbitree.campaign.spec import load_campaign

    result = run_campaign(load_campaign(path), out, workers=workers, progress=progress)
    print_table(result)
    return result.rows


# ---- the tables and the figure ------------------------------------------------------------------------------


def dock_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per dock: case parts, outcome, ground-truth and estimated final errors."""
    out = []
    for row in rows:
        placement, seed, variant = row["case"].split("-")
        summary = row.get("summary") or {}
        truth, estimate = summary.get("final_error_true") or {}, summary.get("final_error") or {}
        flat: dict[str, Any] = {"placement": placement, "seed": int(seed.removeprefix("s")), "variant": variant,
                                "status": row["status"], "docked": row["status"] == "SUCCESS",
                                "reason": row["reason"], "in_capture_envelope": summary.get("in_capture_envelope")}
        flat.update({f"true_{a}": truth.get(a) for a in AXES})
        flat.update({f"estimated_{a}": estimate.get(a) for a in AXES})
        flat["true_peak_force_n"] = summary.get("true_max_contact_force_n")
        flat["wall_time_s"] = row.get("wall_time_s")
        out.append(flat)
    return out


def calibration_rows(kin_rows: list[dict[str, Any]], cam_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per seed: the largest identified-minus-built link error and the hand-eye result against the bracket."""
    out = []
    for kin, cam in zip(kin_rows, cam_rows, strict=True):
        found = (kin.get("summary") or {}).get("kinematic_calibration") or {}
        ident, truth = found.get("identified", {}), found.get("truth", {})
        lengths = [abs(ident[k] - truth[k]) for k in ident if k in truth and k[0] in "ad"]
        angles = [abs(ident[k] - truth[k]) for k in ident if k in truth and k[0] not in "ad"]
        cc = (cam.get("summary") or {}).get("camera_calibration") or {}
        method = cc.get("method")
        mount = (cc.get("mount_error") or {}).get(method, {})
        out.append({
            "seed": kin["seed"], "kinematics_status": kin["status"], "camera_status": cam["status"],
            "links_identified": len(ident),
            "link_length_error_max_mm": round(max(lengths), 4) if lengths else None,  # the summary's mm, deg
            "link_angle_error_max_deg": round(max(angles), 5) if angles else None,
            "handeye_method": method, "handeye_error_mm": mount.get("mm"), "handeye_error_deg": mount.get("deg"),
            "nominal_mount_error_mm": (cc.get("nominal_mount_error") or {}).get("mm"),
            "nominal_mount_error_deg": (cc.get("nominal_mount_error") or {}).get("deg"),
            "fx_error_px": None if "truth" not in cc else round(cc["fx"] - cc["truth"]["fx"], 3),
            "reprojection_rms_px": cc.get("rms_px"),
        })
    return out


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, Any]]:
    """``results.csv`` back, numbers as floats, ``docked`` as a bool."""
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            parsed: dict[str, Any] = dict(row)
            for key, value in row.items():
                if key.startswith(("true_", "estimated_")) or key in ("wall_time_s",):
                    parsed[key] = float(value) if value not in ("", None) else None
            parsed["seed"] = int(row["seed"])
            parsed["docked"] = row["docked"] == "True"
            out.append(parsed)
    return out


def aggregate(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant: docked / runs, and per axis the mean and largest |ground-truth final error|
    (z: its mean and range, since the aim is 5 mm out)."""
    out: dict[str, dict[str, Any]] = {}
    for variant in VARIANTS:
        mine = [r for r in rows if r["variant"] == variant]
        if not mine:
            continue
        entry: dict[str, Any] = {"runs": len(mine), "docked": sum(r["docked"] for r in mine)}
        for axis in AXES:
            values = [r[f"true_{axis}"] for r in mine if r[f"true_{axis}"] is not None]
            if not values:
                continue
            if axis == "z_mm":
                entry[axis] = {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}
            else:
                entry[axis] = {"mean_abs": statistics.fmean(abs(v) for v in values),
                               "max_abs": max(abs(v) for v in values)}
        lateral = [float(np.hypot(r["true_x_mm"], r["true_y_mm"])) for r in mine if r["true_x_mm"] is not None]
        if lateral:
            entry["lateral_mm"] = {"mean": statistics.fmean(lateral), "max": max(lateral)}
        out[variant] = entry
    return out


def figure(rows: list[dict[str, Any]], path: Path) -> None:
    """Ground-truth final error at capture per axis: each case's three variants side by side."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    cases = list(dict.fromkeys((r["placement"], r["seed"]) for r in rows))
    colours = {"uncalibrated": "tab:red", "calibrated": "tab:blue", "ideal": "tab:green"}
    shift = {"uncalibrated": -0.22, "calibrated": 0.0, "ideal": 0.22}
    fig = Figure(figsize=(12, 7.5), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True)
    labels = {"x_mm": "x (mm)", "y_mm": "y (mm)", "z_mm": "z (mm, aim 5 mm out)", "rx_deg": "rx (deg)",
              "ry_deg": "ry (deg)", "rz_deg": "rz (deg)"}
    for ax, axis in zip(axes.flat, AXES, strict=True):
        for r in rows:
            value = r[f"true_{axis}"]
            if value is None:
                continue
            i = cases.index((r["placement"], r["seed"]))
            c = colours[r["variant"]]
            ax.plot(i + shift[r["variant"]], value, "o", color=c, mfc=c if r["docked"] else "none", ms=7)
        ax.axhline(5.0 if axis == "z_mm" else 0.0, color="0.6", lw=0.8, ls="--")
        ax.set_ylabel(labels[axis])
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xticks(range(len(cases)), [f"{p}\nseed {s}" for p, s in cases], fontsize=8)
    handles = [Line2D([], [], marker="o", ls="", color=c, label=v) for v, c in colours.items()]
    handles.append(Line2D([], [], marker="o", ls="", color="0.3", mfc="none", label="not docked"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4)
    fig.suptitle("SIROM docking: final error at capture by ground truth, with a 1.97 mm / 0.71 deg hand-eye "
                 "and 0.5-0.8 mm link error", fontsize=10)
    fig.savefig(path, dpi=110)


def _f(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def index_md(rows: list[dict[str, Any]], calibration: list[dict[str, Any]], wall_s: float | None) -> str:
    agg = aggregate(rows)
    lines = ["# Calibration benefit: the flagship with a hand-eye and a kinematic error", "",
             "Generated by `missions/campaigns/calibration_benefit.py` (its docstring says what each variant is).",
             "Final error at capture by ground truth (`final_error_true`): x, y in mm (0 is centred), z in mm",
             "(the final approach aims 5 mm out), angles in degrees. Injected: the camera's bracket as built",
             f"`{json.dumps(TRUE_MOUNT)}` against the nominal `{json.dumps(NOMINAL_MOUNT)}` (1.97 mm, 0.71 deg),",
             f"link errors `{json.dumps(KINEMATIC_OFFSETS)}`.", ""]
    if wall_s is not None:
        lines += [f"Wall time of the whole sequence: {wall_s / 60:.1f} min.", ""]
    lines += ["## Per variant", "",
              "| variant | docked | mean abs x | max abs x | mean abs y | max abs y | lateral mean | lateral max "
              "| z mean (min-max) | max abs rx | max abs ry | max abs rz |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for variant, e in agg.items():
        if "x_mm" not in e:
            lines.append(f"| {variant} | {e['docked']}/{e['runs']} |" + " |" * 10)
            continue
        cells = [f"{e['docked']}/{e['runs']}", _f(e["x_mm"]["mean_abs"]), _f(e["x_mm"]["max_abs"]),
                 _f(e["y_mm"]["mean_abs"]), _f(e["y_mm"]["max_abs"]), _f(e["lateral_mm"]["mean"]),
                 _f(e["lateral_mm"]["max"]),
                 f"{_f(e['z_mm']['mean'])} ({_f(e['z_mm']['min'])}-{_f(e['z_mm']['max'])})",
                 *(_f(e[a]["max_abs"], 3) for a in ("rx_deg", "ry_deg", "rz_deg"))]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines += ["", "![final error](final_error.png)", "", "## Every run, side by side", "",
              "| placement | seed | variant | outcome | x | y | z | rx | ry | rz |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        outcome = "docked" if r["docked"] else f"{r['status']}: {r['reason']}"
        lines.append(f"| {r['placement']} | {r['seed']} | {r['variant']} | {outcome} | "
                     + " | ".join(_f(r[f"true_{a}"], 2 if a.endswith("mm") else 3) for a in AXES) + " |")
    if calibration:
        lines += ["", "## What each seed's calibration found", "",
                  "| seed | link lengths (max error) | link angles (max error) | hand-eye method | its error "
                  "| nominal mount's error | fx error | reprojection rms |", "|---|---|---|---|---|---|---|---|"]
        for c in calibration:
            lines.append(f"| {c['seed']} | {c['link_length_error_max_mm']} mm "
                         f"| {c['link_angle_error_max_deg']} deg | {c['handeye_method']} "
                         f"| {c['handeye_error_mm']} mm, {c['handeye_error_deg']} deg "
                         f"| {c['nominal_mount_error_mm']} mm, {c['nominal_mount_error_deg']} deg "
                         f"| {c['fx_error_px']} px | {c['reprojection_rms_px']} px |")
    return "\n".join(lines) + "\n"


def write_docs(rows: list[dict[str, Any]], calibration: list[dict[str, Any]], docs: Path,
               wall_s: float | None = None) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    write_csv(rows, docs / "results.csv")
    if calibration:
        write_csv(calibration, docs / "calibration.csv")
    figure(rows, docs / "final_error.png")
    (docs / "index.md").write_text(index_md(rows, calibration, wall_s), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    import time

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", type=Path, required=True, help="campaign files, runs, calibration files")
    parser.add_argument("--docs", type=Path, help="where the tables and figure go (default: OUT)")
    parser.add_argument("--placements", nargs="+", default=list(PLACEMENTS), help="ISO 9283 case ids")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plan", action="store_true",
                        help="write the campaign files and check every mission they run (the calibrated docks "
                             "once their files exist), run nothing")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    out: Path = args.out
    placements, seeds = tuple(args.placements), tuple(args.seeds)
    kinematics, camera = calibration_campaigns(out, seeds)
    kin_path = write_campaign(kinematics, out / "kinematics.yaml")
    cam_path = write_campaign(camera, out / "camera.yaml")
    if args.plan:
        from orbitree.campaign.spec import load_campaign

        have = all(seed_files(out, s)["camera"].is_file() and seed_files(out, s)["kinematics"].is_file()
                   for s in seeds)
        variants = VARIANTS if have else ("uncalibrated", "ideal")
        dock_path = write_campaign(dock_campaign(out, placements, seeds, variants), out / "dock.yaml")
        # the camera campaign and the calibrated docks read the calibration files: checked once they exist
        paths = (kin_path, *([cam_path] if have else []), dock_path)
        checked = {p.name: len(load_campaign(p).cases) for p in paths}
        print(f"checked {checked} in {out}" + ("" if have else "; the camera calibration and the calibrated "
                                               "docks wait for the calibration files"))
        return 0
    started = time.monotonic()
    progress = not args.no_progress
    kin_rows = run(kin_path, out / "runs_kinematics", args.workers, progress)
    cam_rows = run(cam_path, out / "runs_camera", args.workers, progress)
    failed = [r["run"] for r in (*kin_rows, *cam_rows) if r["status"] != "SUCCESS"]
    if failed:
        print(f"calibration failed: {failed}; see {out}", file=sys.stderr)
        return 1
    dock_path = write_campaign(dock_campaign(out, placements, seeds), out / "dock.yaml")
    rows = dock_rows(run(dock_path, out / "runs_dock", args.workers, progress))
    calibration = calibration_rows(kin_rows, cam_rows)
    write_docs(rows, calibration, args.docs or out, time.monotonic() - started)
    print(index_md(rows, calibration, time.monotonic() - started))
    return 0


if __name__ == "__main__":
    from orbitree.language.errors import MissionError

    try:
        sys.exit(main())
    except MissionError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)
