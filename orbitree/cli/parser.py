"""The ``orbitree`` command line's argument parser: every subcommand, its options and the
examples and exit codes its ``--help`` ends with (``EXAMPLES`` and the epilogs).

``orbitree.cli.main`` parses with ``_parser()`` and hands the arguments to the subcommand's
handler (orbitree/cli/__init__.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orbitree import __version__
from orbitree.skills.board_model import BOARDS

EXAMPLES: dict[str, str] = {  # each subcommand's --help ends with these
    "run": """\
examples:
  orbitree run missions/sirom_dock.yaml                       simulated world, live terminal view
  orbitree run missions/sirom_dock.yaml --view web --paused   watch it in a browser, start paused
  orbitree run m.yaml --set 'targets.sirom.pose={xyz: [-0.55, 0.2, 0.1], rpy: [0, 0, 60]}' \\
      --log run.jsonl --summary run.json
exit codes: 0 the tree succeeded; 1 it failed or was aborted (safety stop, Ctrl-C, a leaf raised);
  2 bad input (file:line:col messages; nothing moved)""",
    "replay": """\
examples:
  orbitree replay run.jsonl                  the web view with a time slider
  orbitree replay run.jsonl --view terminal --speed 4
exit codes: 0 shown; 2 the log cannot be read (file:line: message)""",
    "validate": """\
examples:
  orbitree validate missions/*.yaml
  orbitree validate missions/sirom_dock.yaml --set robots.arm.driver=ur --set robots.arm.host=10.0.0.2
exit codes: 0 every file is valid (warnings may be printed); 2 a file has errors (file:line:col)""",
    "schema": """\
example:
  orbitree schema -o orbitree-mission.schema.json   for the YAML language server in your editor
exit code: 0""",
    "tree": """\
examples:
  orbitree tree missions/sirom_dock.yaml
  orbitree tree missions/sirom_dock.yaml --format dot | dot -Tsvg > tree.svg
exit codes: 0 printed; 2 bad input""",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orbitree",
        description="Behaviour-tree mission executive for robotic on-orbit servicing.",
    )
    parser.add_argument("--version", action="version", version=f"orbitree {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_set(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a mission value by dotted path; VALUE is parsed as YAML (repeatable)",
        )

    run = sub.add_parser("run", help="run a mission", epilog=EXAMPLES["run"], formatter_class=_Raw)
    run.add_argument("mission", type=Path)
    with_set(run)
    run.add_argument("--log", type=Path, help="write the JSON-lines mission log here")
    run.add_argument("--summary", type=Path, help="write the run summary (JSON) here")
    run.add_argument(
        "--view", choices=["none", "terminal", "web"], help="live view (default: terminal on a tty)"
    )
    run.add_argument("--seed", type=int, help="seed of the run (default: the mission's 'seed')")
    run.add_argument(
        "--realtime", action="store_true", help="pace the simulated clock to the wall clock"
    )
    run.add_argument(
        "--profile", type=Path, metavar="FILE",
        help="write where the wall time went (loop parts, drivers, rendering, perception, nodes) "
             "to FILE as JSON and print a short table",
    )
    _web_options(run)
    run.add_argument(
        "--hold", action="store_true", help="web view: keep serving after the run until Ctrl-C"
    )

    replay = sub.add_parser("replay", help="show a mission log in a view, with a time slider",
                            epilog=EXAMPLES["replay"], formatter_class=_Raw)
    replay.add_argument("log", type=Path, help="mission log (JSON lines) written by run --log")
    replay.add_argument("--view", choices=["web", "terminal"], default="web")
    replay.add_argument(
        "--speed", type=float, default=1.0, help="playback speed (mission seconds per second)"
    )
    _web_options(replay)

    validate = sub.add_parser(
        "validate", help="check mission files; exit 0 or 2", epilog=EXAMPLES["validate"], formatter_class=_Raw
    )
    validate.add_argument("missions", type=Path, nargs="+")
    with_set(validate)

    schema = sub.add_parser(
        "schema", help="print the JSON Schema of mission files", epilog=EXAMPLES["schema"], formatter_class=_Raw
    )
    schema.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")

    tree = sub.add_parser("tree", help="print a mission's tree", epilog=EXAMPLES["tree"], formatter_class=_Raw)
    tree.add_argument("mission", type=Path)
    tree.add_argument("--format", choices=["ascii", "dot", "btcpp"], default="ascii",
                      help="btcpp: BehaviorTree.CPP v4 XML (Groot2 opens it)")
    tree.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    with_set(tree)

    campaign = sub.add_parser(
        "campaign", help="run a mission many times on a process pool (or a Dask cluster: --scheduler)",
        formatter_class=_Raw, epilog="""examples:
  orbitree campaign missions/campaigns/demo_sweep.yaml -o out/demo
  orbitree campaign missions/campaigns/sirom_iso9283.yaml -o out/iso --workers 2 --limit 3
exit codes: 0 every run succeeded; 1 a run did not; 2 bad input; 130 interrupted (outputs of what ran)""",
    )
    campaign.add_argument("campaign", type=Path, help="campaign file (YAML)")
    campaign.add_argument("-o", "--output", type=Path, required=True, help="output directory")
    campaign.add_argument("--workers", type=_positive, help="worker processes (default: the file's, or CPUs)")
    campaign.add_argument("--limit", type=_positive, help="run only the first N cases")
    campaign.add_argument("--no-progress", action="store_true", help="no progress bar")
    campaign.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) instead of local processes",
    )
    with_set(campaign)

    calibrate = sub.add_parser("calibrate", help="circle-point Monte Carlo; camera and hand-eye calibration",
                               formatter_class=_Raw)
    methods = calibrate.add_subparsers(dest="method", required=True, metavar="METHOD")
    circle = methods.add_parser(
        "circle-point", help="simulate and identify a circle-point calibration N times", formatter_class=_Raw,
        epilog="""examples:
  orbitree calibrate circle-point missions/calibration/kr5_circle_point.yaml --iterations 10000 -o out/kr5
  orbitree calibrate circle-point kr5.yaml --iterations 1000000 --scheduler tcp://host:8786 -o out/kr5_1m
exit codes: 0 written; 2 bad input (file:line:col) or no Dask scheduler; 130 interrupted (outputs of what ran)""",
    )
    circle.add_argument("config", type=Path, help="circle-point calibration file (YAML)")
    circle.add_argument("-o", "--output", type=Path, required=True, help="output directory")
    circle.add_argument("--iterations", type=_positive, help="Monte Carlo iterations (default: the file's)")
    circle.add_argument("--seed", type=int, help="seed (default: the file's); a seed gives the same samples")
    circle.add_argument("--workers", type=_positive, help="local worker processes (default: CPUs)")
    circle.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    circle.add_argument("--no-progress", action="store_true", help="no progress bar (shown from 50k iterations)")
    cam = methods.add_parser(
        "camera", help="intrinsics and hand-eye mount from ChArUco images with their arm poses",
        formatter_class=_Raw,
        epilog="""examples:
  orbitree calibrate camera calibration/images -o calibration/camera.yaml
  orbitree calibrate camera bench/views --method TSAI -o camera.yaml
IMAGES_DIR holds the images and poses.yaml (README, "Camera and hand-eye calibration").
exit codes: 0 written; 2 unreadable directory, poses or images, or fewer than 4 usable views""",
    )
    cam.add_argument("images", type=Path, help="directory of images and poses.yaml")
    cam.add_argument("-o", "--output", type=Path, required=True, help="calibration file to write (OpenCV YAML)")
    cam.add_argument("--method", dest="method_name", default="auto",
                     choices=["auto", "TSAI", "PARK", "HORAUD", "ANDREFF", "DANIILIDIS"],
                     help="hand-eye method written (default auto: the most consistent)")

    report = sub.add_parser("report", help="plots of a mission log or a campaign directory", formatter_class=_Raw,
                            epilog="""examples:
  orbitree report run.jsonl -o report/       error convergence, adaptive gain, docking forces
  orbitree report out/iso -o out/iso/report  a campaign's figures
exit codes: 0 written; 2 the log or directory cannot be read""")
    report.add_argument("source", type=Path, help="mission log (JSON lines) or campaign directory")
    report.add_argument("-o", "--output", type=Path, required=True, help="output directory")

    btcpp = sub.add_parser("import-btcpp", help="turn a BehaviorTree.CPP v4 XML tree into mission YAML",
                           formatter_class=_Raw, epilog="""examples:
  orbitree tree missions/sirom_dock.yaml --format btcpp -o dock.xml   (edit it in Groot2)
  orbitree import-btcpp dock.xml -o tree.yaml                        its tree: and subtrees:
exit codes: 0 written; 2 a node it cannot map, or bad XML (file:line:col)""")
    btcpp.add_argument("xml", type=Path, help="BehaviorTree.CPP v4 XML file")
    btcpp.add_argument("-o", "--output", type=Path, help="write the YAML here (default: stdout)")

    board = sub.add_parser("board", help="a target's marker board as a sheet to print at actual size",
                           formatter_class=_Raw, epilog="""examples:
  orbitree board sirom -o sirom_board.pdf    print at 100 % (actual size); check the 50 mm bar
  orbitree board sirom -o sirom_board.png --dpi 1200
exit codes: 0 written; 2 unknown board or unwritable file""")
    board.add_argument("board", choices=sorted(BOARDS), help="board name (a target's 'board:')")
    board.add_argument("-o", "--output", type=Path, required=True, help="file to write (.pdf or .png)")
    board.add_argument("--dpi", type=float, default=600.0, help="raster resolution (default 600)")

    emulator = sub.add_parser("ur-emulator", help="an emulated UR e-Series controller (a simulated UR10e) "
                              "for ur_rtde programs", formatter_class=_Raw, epilog="""examples:
  orbitree ur-emulator                        serves on 127.0.0.2 until Ctrl-C
  orbitree ur-emulator --host 127.0.0.3       one more, next to it (ur_rtde uses fixed ports)
  orbitree ur-emulator --local                in local control: ur_rtde is refused
exit codes: 0 stopped with Ctrl-C; 1 the address's UR ports are taken""")
    emulator.add_argument("--host", default="127.0.0.2", help="loopback address to serve on (default 127.0.0.2)")
    emulator.add_argument("--local", action="store_true", help="start in local control (scripts refused)")
    emulator.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    return parser


def _web_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host", help="web view: interface to serve on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8765, help="web view: port (0: any free port)")
    p.add_argument(
        "--paused", action="store_true", help="web view: start paused (set breakpoints first)"
    )


class _Raw(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples in a subcommand's epilog as written."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value
