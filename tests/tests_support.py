"""Small helpers shared by test modules (kept out of conftest so they can be imported)."""

from __future__ import annotations

import sys


def names(mission) -> list[str]:
    return [spec.name for spec in mission.nodes()]


# `python -m orbitree.cli` with Ctrl-C restored: a process started in the background by a
# non-interactive shell (how CI may start the suite) inherits SIGINT ignored, and so would every
# orbitree the tests start; the Ctrl-C tests need it to arrive as it does in a terminal.
ORBITREE_CLI = [
    sys.executable, "-c",
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from orbitree.cli import main; sys.exit(main())",
]
