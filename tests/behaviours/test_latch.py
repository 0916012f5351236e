"""latch, tick by tick on fake hooks; and the recording latch that journals their commands.

The hooks reach OPEN or CLOSED two ticks after the command (period 0.1 s).
"""

from __future__ import annotations

import pytest

from orbitree.behaviours.latch import Latch
from orbitree.drivers.interfaces import LatchState
from orbitree.nodes.context import Context
from orbitree.runtime.devices import RecordingLatch
from tests.behaviours.bench import FakeLatch, make_bench


def latch(action, hooks=None, preempt=None, **params):
    params = {"robot": "arm", "action": action, **params}
    return make_bench(Latch, params, latch=hooks or FakeLatch(), preempt=preempt)


def test_latch_close_sends_close_and_succeeds_when_the_hooks_are_closed():
    bench = latch("close")
    bench.run([
        # statuses    commands sent           feedback
        ("latch=R", ["arm_latch.close"], "hooks closing"),  # t=0.0
        ("latch=R", [], "hooks closing"),                   # t=0.1
        ("latch=S", [], "hooks closed"),                    # t=0.2
    ])
    assert bench.robot.calls == []  # a latch leaf never commands the arm


def test_latch_open_releases_closed_hooks():
    bench = latch("open", FakeLatch(state=LatchState.CLOSED))
    bench.run([
        ("latch=R", ["arm_latch.open"], "hooks opening"),
        ("latch=R", [], "hooks opening"),
        ("latch=S", [], "hooks open"),
    ])


def test_jammed_hooks_fail_the_latch_without_a_counter_command():
    hooks = FakeLatch()
    hooks.jammed = True
    bench = latch("close", hooks)
    bench.run([("latch=F", ["arm_latch.close"], "hooks did not close (fault)")])  # plain actuator: no reopen


def test_latch_fails_when_the_timeout_passes_first():
    bench = latch("close", FakeLatch(travel_ticks=10), timeout="200 ms")
    bench.run([
        ("latch=R", ["arm_latch.close"], "hooks closing"),  # t=0.0 deadline 0.2
        ("latch=R", [], "hooks closing"),
        ("latch=F", [], "hooks did not close (closing)"),   # t=0.2
    ])


def test_halting_latch_leaves_the_hooks_to_finish():
    bench = latch("open", FakeLatch(state=LatchState.CLOSED), preempt="F")
    bench.run([
        ("guarded=R preempt?=F latch=R", ["arm_latch.open"], "hooks opening"),
        ("guarded=S preempt?=S latch=-", [], "hooks opening"),  # halted: nothing stopped
    ])


def test_latch_on_an_arm_without_hooks_is_refused_at_setup():
    with pytest.raises(RuntimeError, match="latch: robot 'arm' has no latch"):
        make_bench(Latch, {"robot": "arm", "action": "open"})


def test_recording_latch_journals_close_and_open_and_forwards_them():
    ctx, hooks = Context(), FakeLatch()
    recording = RecordingLatch(hooks, ctx)
    recording.close()
    assert recording.state() == LatchState.CLOSING  # forwarded; a poll is not journalled
    recording.open()
    assert hooks.calls == ["close", "open"]
    assert ctx.commands == [{"device": "arm_latch", "cmd": "close"}, {"device": "arm_latch", "cmd": "open"}]


def test_recording_latch_logs_a_command_lost_on_a_dropped_link():
    ctx, hooks = Context(), FakeLatch()
    hooks.connected = False
    RecordingLatch(hooks, ctx).close()
    assert ctx.commands == [{"device": "arm_latch", "cmd": "close"}]
    assert [(e["kind"], e["call"]) for e in ctx.events] == [("command_lost", "close")]


def test_the_device_journals_the_latch_it_has_now():
    bench = latch("close")
    wrapper = FakeLatch()  # a fault injector wraps the latch after the devices are built
    bench.device.latch = wrapper
    recording = bench.device.recording_latch
    assert isinstance(recording, RecordingLatch) and recording.inner is wrapper
