"""Run the ``orbitree`` command in a subprocess and measure what that one process cost.

CPU time comes from ``os.wait4`` (the child's own, unlike ``RUSAGE_CHILDREN``, which sums every
child the session ever waited for). Peak memory is the child's own ``VmHWM``, read by the child
as it exits: ``ru_maxrss`` would not do, since Linux carries the peak of the process that forked
(the test session, a few hundred MB) across ``exec``. The child also runs under an address-space
limit, so that a regression (an alias bomb expanding again) fails the test within seconds instead
of taking the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# `orbitree` as tests.tests_support.ORBITREE_CLI starts it, writing its peak memory as it exits
_CLI = [
    sys.executable, "-c",
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "def peak():\n"
    "    with open('/proc/self/status') as f:\n"
    "        return next(line.split()[1] for line in f if line.startswith('VmHWM'))\n"
    "from orbitree.cli import main\n"
    "try:\n"
    "    code = main()\n"
    "finally:\n"
    "    with open(os.environ['ORBITREE_TEST_PEAK'], 'w') as out:\n"
    "        out.write(peak())\n"
    "sys.exit(code)\n",
]

# What one hostile input may cost the command, start-up included (the brief of the hostile-input
# work): 2 s and 200 MB. `orbitree validate` alone (imports of numpy, scipy, OpenCV, pydantic)
# costs ~1 s of CPU and ~117 MB here.
CPU_LIMIT_S = 2.0
RSS_LIMIT_MB = 200.0

# Wall time is also bounded, more loosely: the suite shares two cores with other work, so a child
# may wait for a core; CPU time is the figure the input decides.
WALL_LIMIT_S = 6.0

# Address space of the child (virtual, not resident: OpenCV's and OpenBLAS's mappings alone take
# ~1.5 GB of it); an input that makes it grow past this fails with MemoryError, not an OOM kill.
ADDRESS_SPACE_BYTES = 4 * 1024**3

# Seconds after which a hung child is killed (the test then fails on its exit code).
KILL_AFTER_S = 30.0


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    rss_mb: float

    def assert_bounded(self) -> None:
        assert self.cpu_s < CPU_LIMIT_S, f"{self.cpu_s:.2f} s of CPU"
        assert self.wall_s < WALL_LIMIT_S, f"{self.wall_s:.2f} s of wall time"
        assert self.rss_mb < RSS_LIMIT_MB, f"{self.rss_mb:.0f} MB resident"


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def run_orbitree(*args: str, cwd: Path, tmp: Path) -> Outcome:
    """``orbitree ARGS`` in ``cwd``; its exit code, output, wall and CPU time and peak memory."""
    if not Path("/proc/self/status").exists():
        pytest.skip("peak memory is read from /proc (Linux)")
    out, err, peak = tmp / "stdout.txt", tmp / "stderr.txt", tmp / "peak_kb.txt"
    peak.unlink(missing_ok=True)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.monotonic()
        env = {**os.environ, "ORBITREE_TEST_PEAK": str(peak)}
        proc = subprocess.Popen([*_CLI, *args], cwd=cwd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                preexec_fn=_limit_address_space, env=env)
        killer = threading.Timer(KILL_AFTER_S, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # so that Popen does not wait again
    rss_kb = float(peak.read_text()) if peak.exists() else float("inf")  # no figure: it was killed
    return Outcome(proc.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"), wall,
                   usage.ru_utime + usage.ru_stime, rss_kb / 1024)
