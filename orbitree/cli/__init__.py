"""The ``orbitree`` command line (a contract: tests and users rely on it).

Exit codes: 0 when the mission succeeded (or the files are valid), 1 when it failed or was
aborted, 2 on bad input (``file:line:col: message`` on stderr; nothing was started).

This module holds ``main`` and the subcommands' handlers; the argument parser, with each
subcommand's options and examples, is in orbitree/cli/parser.py; ``python -m orbitree.cli`` runs
orbitree/cli/__main__.py.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

from orbitree.cli.parser import EXAMPLES as EXAMPLES  # re-exported: where it was before the split
from orbitree.cli.parser import _parser
from orbitree.language.errors import MissionError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _ur_emulator(args: argparse.Namespace) -> int:
    from orbitree.drivers.ur_emulator import serve

    return serve(args.host, remote_control=not args.local, duration=args.duration)


def _import_btcpp(args: argparse.Namespace) -> int:
    import yaml

    from orbitree.behaviours.catalogue import default_registry
    from orbitree.language.btcpp import read_btcpp

    data = read_btcpp(args.xml, default_registry())  # MissionError: exit 2, said by main()
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)
    return _write_out(text, args.output)


def _board(args: argparse.Namespace) -> int:
    from orbitree.report.board_sheet import write_board_sheet

    if args.output.suffix.lower() not in (".pdf", ".png"):
        print(f"orbitree: {args.output}: write a .pdf or a .png", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        path = write_board_sheet(args.board, args.output, dpi=args.dpi)
    except OSError as error:
        print(f"orbitree: {args.output}: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{path}: {args.board} board at actual size; print at 100 %, then measure the 50 mm bar")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {"run": _run, "validate": _validate, "schema": _schema, "tree": _tree}
    handlers |= {"campaign": _campaign, "report": _report, "calibrate": _calibrate}
    handlers |= {"replay": _replay, "board": _board, "import-btcpp": _import_btcpp, "ur-emulator": _ur_emulator}
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
    if args.profile:
        from orbitree.runtime.profile import format_profile

        profile = executive.profile()
        args.profile.parent.mkdir(parents=True, exist_ok=True)
        args.profile.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        print(format_profile(profile))
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
    if web is not None and not args.hold and web.connections == 0:
        print("orbitree: the run ended before a browser connected; add --paused (start paused) or --hold "
              "(keep serving after the run) to watch it", file=sys.stderr)
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


def _write_out(text: str, output: Path | None) -> int:
    """Write a command's output to ``output``, or to stdout without one."""
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import mission_schema

    text = json.dumps(mission_schema(), indent=2) + "\n"
    return _write_out(text, args.output)


def _tree(args: argparse.Namespace) -> int:
    from orbitree.behaviours.catalogue import load_mission
    from orbitree.nodes.render import ascii_tree, dot_tree

    mission = load_mission(args.mission, args.overrides)
    if args.format == "btcpp":
        from orbitree.behaviours.catalogue import default_registry
        from orbitree.language.btcpp import to_btcpp

        text = to_btcpp(mission.root, default_registry(), mission.name, mission.recovery)
    else:
        text = (ascii_tree(mission.root) if args.format == "ascii" else dot_tree(mission.root)) + "\n"
    return _write_out(text, args.output)


def _replay(args: argparse.Namespace) -> int:
    from orbitree.runtime.recorder import LogError, read_log

    try:
        log = read_log(args.log)
    except LogError as exc:  # file:line: message, as editors and mission errors show them
        print(exc, file=sys.stderr)
        return EXIT_BAD_INPUT
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


def _calibrate(args: argparse.Namespace) -> int:
    if args.method == "camera":
        from orbitree.calibration.camera import camera

        return camera(args.images, args.output, args.method_name)
    from orbitree.calibration.command import circle_point

    return circle_point(args.config, args.output, iterations=args.iterations, seed=args.seed,
                        workers=args.workers, scheduler=args.scheduler, progress=not args.no_progress)


def _report(args: argparse.Namespace) -> int:
    from orbitree.report import report
    from orbitree.runtime.recorder import LogError

    try:
        result = report(args.source, args.output)
    except LogError as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, ValueError) as exc:
        print(f"orbitree report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for figure in result.figures:
        print(f"{figure.file}" if figure.file else f"{figure.name}: {figure.note}")
    print(result.index)
    return EXIT_OK
