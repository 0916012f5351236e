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
from orbitree.language.errors import MissionError

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
        "--view", choices=["none", "terminal", "web"], help="live view (default: terminal on a tty)"
    )
    run.add_argument("--seed", type=int, help="seed of the run (default: the mission's 'seed')")
    run.add_argument(
        "--realtime", action="store_true", help="pace the simulated clock to the wall clock"
    )
    _web_options(run)
    run.add_argument(
        "--hold", action="store_true", help="web view: keep serving after the run until Ctrl-C"
    )

    replay = sub.add_parser("replay", help="show a mission log in a view, with a time slider")
    replay.add_argument("log", type=Path, help="mission log (JSON lines) written by run --log")
    replay.add_argument("--view", choices=["web", "terminal"], default="web")
    replay.add_argument(
        "--speed", type=float, default=1.0, help="playback speed (mission seconds per second)"
    )
    _web_options(replay)

    validate = sub.add_parser("validate", help="check mission files; exit 0 or 2")
    validate.add_argument("missions", type=Path, nargs="+")
    with_set(validate)

    schema = sub.add_parser("schema", help="print the JSON Schema of mission files")
    schema.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")

    tree = sub.add_parser("tree", help="print a mission's tree")
    tree.add_argument("mission", type=Path)
    tree.add_argument("--format", choices=["ascii", "dot"], default="ascii")
    with_set(tree)

    campaign = sub.add_parser(
        "campaign", help="run a mission many times on a process pool (or a Dask cluster: --scheduler)"
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

    report = sub.add_parser("report", help="plots of a mission log or a campaign directory")
    report.add_argument("source", type=Path, help="mission log (JSON lines) or campaign directory")
    report.add_argument("-o", "--output", type=Path, required=True, help="output directory")
    return parser


def _web_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host", help="web view: interface to serve on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8765, help="web view: port (0: any free port)")
    p.add_argument(
        "--paused", action="store_true", help="web view: start paused (set breakpoints first)"
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {"run": _run, "validate": _validate, "schema": _schema, "tree": _tree}
    handlers |= {"campaign": _campaign, "report": _report}
    handlers |= {"replay": _replay}
    handler = handlers[args.command]
    try:
        return handler(args)
    except MissionError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import load_mission
    from orbitree.runtime.executive import Executive, Interrupted

    mission = load_mission(args.mission, args.overrides)
    _warn(mission.warnings)
    view_name = args.view or ("terminal" if sys.stdout.isatty() else "none")
    views: list[Any] = []
    if view_name == "terminal":
        from orbitree.views.terminal import TerminalView

        views.append(TerminalView())
    web = None
    if view_name == "web":
        from orbitree.views.web import WebView, print_url

        web = WebView(args.host, args.port, paused=args.paused, hold=args.hold)
        url = _listen(web, args.port)
        if url is None:
            return EXIT_BAD_INPUT
        print_url(url, f"web view of {mission.name}")
        views.append(web)

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
    for fault in s.get("faults_not_injected") or ():
        what = f"fault {fault['kind']} ({fault['trigger']})"
        print(f"orbitree: warning: {what} was never injected: {fault['reason']}", file=sys.stderr)
    if result.error:
        where = f"; traceback in {args.log}" if args.log else ""
        print(
            f"orbitree: mission aborted: {result.reason}; the tree was halted and every driver stopped{where}",
            file=sys.stderr,
        )
    if web is not None and args.hold:
        print(f"orbitree: the run is over; still serving {web.url} until Ctrl-C", flush=True)
        web.serve_until_interrupted()
        web.close()
    return EXIT_OK if result.status == "SUCCESS" else EXIT_FAILED


def _warn(warnings: list[Any]) -> None:
    for warning in warnings:
        print(warning, file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import load_mission

    worst = EXIT_OK
    for path in args.missions:
        try:
            mission = load_mission(path, args.overrides)
        except MissionError as exc:
            print(str(exc), file=sys.stderr)
            worst = EXIT_BAD_INPUT
            continue
        _warn(mission.warnings)
        print(f"{path}: ok ({len(mission.nodes())} nodes)" + (f", {len(mission.warnings)} warnings"
                                                              if mission.warnings else ""))
    return worst


def _schema(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import mission_schema

    text = json.dumps(mission_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _tree(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import load_mission
    from orbitree.nodes.render import ascii_tree, dot_tree

    mission = load_mission(args.mission, args.overrides)
    print(ascii_tree(mission.root) if args.format == "ascii" else dot_tree(mission.root))
    return EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    from orbitree.runtime.recorder import read_log

    try:
        log = read_log(args.log)
    except (OSError, ValueError) as exc:
        print(f"orbitree replay: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.speed > 0:
        print(f"orbitree replay: --speed must be > 0, got {args.speed:g}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.view == "terminal":
        from orbitree.views.replay import replay_terminal

        replay_terminal(log, args.speed)
        return EXIT_OK
    from orbitree.views.web import ReplayWebView, print_url

    view = ReplayWebView(log, args.host, args.port, speed=args.speed, paused=args.paused)
    url = _listen(view, args.port)
    if url is None:
        return EXIT_BAD_INPUT
    print_url(url, f"replay of {log.header.get('mission')} ({len(log.ticks)} ticks)")
    try:
        view.serve_until_interrupted()
    finally:
        view.close()
    return EXIT_OK


def _listen(view: Any, port: int) -> str | None:
    """Bind a web view's server; its URL, or None (said on stderr) when the port is taken."""
    try:
        return view.listen()
    except OSError as exc:
        print(f"orbitree: cannot serve the web view on port {port}: {exc}", file=sys.stderr)
        return None


def _campaign(args: argparse.Namespace) -> int:
    from orbitree.campaign.dask_pool import SchedulerUnreachable
    from orbitree.campaign.local import run_campaign
    from orbitree.campaign.outputs import print_table
    from orbitree.campaign.spec import load_campaign

    campaign = load_campaign(args.campaign, args.overrides)
    try:
        result = run_campaign(
            campaign, args.output, workers=args.workers, limit=args.limit, progress=not args.no_progress,
            scheduler=args.scheduler,
        )
    except SchedulerUnreachable as exc:
        print(f"orbitree campaign: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print_table(result)
    print(f"{campaign.name}: {len(result.rows)} runs; results in {args.output}/summary.csv")
    if result.interrupted:
        return 130
    return EXIT_OK if result.ok else EXIT_FAILED


def _report(args: argparse.Namespace) -> int:
    from orbitree.report import report

    try:
        result = report(args.source, args.output)
    except (OSError, ValueError) as exc:
        print(f"orbitree report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for figure in result.figures:
        print(f"{figure.file}" if figure.file else f"{figure.name}: {figure.note}")
    print(result.index)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
