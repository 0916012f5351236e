"""The ``orbitree`` command line (a contract: tests and users rely on it).

Exit codes: 0 when the mission succeeded (or the files are valid), 1 when it failed or was
aborted, 2 on bad input (``file:line:col: message`` on stderr; nothing was started).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

from orbitree import __version__
from orbitree.errors import MissionError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


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

    run = sub.add_parser("run", help="run a mission")
    run.add_argument("mission", type=Path)
    with_set(run)
    run.add_argument("--log", type=Path, help="write the JSON-lines mission log here")
    run.add_argument("--summary", type=Path, help="write the run summary (JSON) here")
    run.add_argument(
        "--view", choices=["none", "terminal"], help="live view (default: terminal on a tty)"
    )
    run.add_argument("--seed", type=int, help="seed of the run (default: the mission's 'seed')")
    run.add_argument(
        "--realtime", action="store_true", help="pace the simulated clock to the wall clock"
    )

    validate = sub.add_parser("validate", help="check mission files; exit 0 or 2")
    validate.add_argument("missions", type=Path, nargs="+")
    with_set(validate)

    schema = sub.add_parser("schema", help="print the JSON Schema of mission files")
    schema.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")

    tree = sub.add_parser("tree", help="print a mission's tree")
    tree.add_argument("mission", type=Path)
    tree.add_argument("--format", choices=["ascii", "dot"], default="ascii")
    with_set(tree)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = {"run": _run, "validate": _validate, "schema": _schema, "tree": _tree}[args.command]
    try:
        return handler(args)
    except MissionError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    from orbitree.executive import Executive, Interrupted
    from orbitree.mission import load_mission

    mission = load_mission(args.mission, args.overrides)
    view_name = args.view or ("terminal" if sys.stdout.isatty() else "none")
    views: list[Any] = []
    if view_name == "terminal":
        from orbitree.views.terminal import TerminalView

        views.append(TerminalView())

    def on_sigterm(signum: int, frame: Any) -> None:
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        executive = Executive(
            mission,
            seed=args.seed,
            realtime=args.realtime,
            log_path=str(args.log) if args.log else None,
            views=views,
        )
        result = executive.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(result.summary, indent=2) + "\n", encoding="utf-8")
    s = result.summary
    line = f"{mission.name}: {result.status} ({result.reason}) after {s['sim_time_s']:.3f} s, {s['ticks']} ticks"
    print(line)
    if result.error:
        where = f"; traceback in {args.log}" if args.log else ""
        print(
            f"orbitree: mission aborted: {result.reason}; the tree was halted and every driver stopped{where}",
            file=sys.stderr,
        )
    return EXIT_OK if result.status == "SUCCESS" else EXIT_FAILED


def _validate(args: argparse.Namespace) -> int:
    from orbitree.mission import load_mission

    worst = EXIT_OK
    for path in args.missions:
        try:
            mission = load_mission(path, args.overrides)
        except MissionError as exc:
            print(str(exc), file=sys.stderr)
            worst = EXIT_BAD_INPUT
            continue
        print(f"{path}: ok ({len(mission.nodes())} nodes)")
    return worst


def _schema(args: argparse.Namespace) -> int:
    from orbitree.schema import mission_schema

    text = json.dumps(mission_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _tree(args: argparse.Namespace) -> int:
    from orbitree.mission import load_mission
    from orbitree.render import ascii_tree, dot_tree

    mission = load_mission(args.mission, args.overrides)
    print(ascii_tree(mission.root) if args.format == "ascii" else dot_tree(mission.root))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
