"""Units, quantities, poses and the two clocks."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from orbitree.language.quantities import Duration, PoseField
from orbitree.language.units import UNITS, UnitError, parse_quantity
from orbitree.runtime.clock import SimClock, WallClock


@pytest.mark.parametrize(
    ("text", "dimension", "si"),
    [
        ("350 mm", "length", 0.35),
        ("1.5 deg", "angle", math.radians(1.5)),
        ("2 rpm", "angular_speed", 2 * 2 * math.pi / 60),
        ("100 ms", "time", 0.1),
        ("5 N", "force", 5.0),
        ("0.2 Nm", "torque", 0.2),
        ("-3.5e-1 m", "length", -0.35),
        ("12", "length", 12.0),
        (7, "time", 7.0),
    ],
)
def test_quantities_convert_to_si(text, dimension, si):
    assert parse_quantity(text, dimension) == pytest.approx(si)


@pytest.mark.parametrize(
    ("text", "dimension", "message"),
    [
        ("3 deg", "time", "'3 deg' is in units of angle, expected a time"),
        ("5 parsecs", "length", "unknown unit 'parsecs'"),
        ("fast", "speed", "cannot read 'fast' as a speed"),
        (True, "length", "got a boolean"),
    ],
)
def test_wrong_units_say_what_was_expected(text, dimension, message):
    with pytest.raises(UnitError, match=message):
        parse_quantity(text, dimension)


@given(
    value=st.floats(-1e6, 1e6, allow_nan=False),
    dim_unit=st.sampled_from([(d, u) for d, table in UNITS.items() for u in table]),
)
def test_every_unit_round_trips_through_its_factor(value, dim_unit):
    dimension, unit = dim_unit
    parsed = parse_quantity(f"{value!r} {unit}", dimension)
    assert parsed == pytest.approx(value * UNITS[dimension][unit], rel=1e-12, abs=1e-300)


def test_pose_rpy_degrees_by_default_and_units_when_given():
    pose = TypeAdapter(PoseField).validate_python({"xyz": ["350 mm", 0, "2 cm"], "rpy": [0, 0, 90]})
    expected = np.array([[0, -1, 0, 0.35], [1, 0, 0, 0], [0, 0, 1, 0.02], [0, 0, 0, 1.0]])
    assert np.allclose(pose.matrix(), expected)
    same = TypeAdapter(PoseField).validate_python([0.35, 0, 0.02, "0 rad", 0, f"{math.pi / 2} rad"])
    assert np.allclose(same.matrix(), expected)
    with pytest.raises(ValidationError, match="a pose list needs 6 values"):
        TypeAdapter(PoseField).validate_python([1, 2, 3])


def test_duration_field_rejects_an_angle():
    with pytest.raises(ValidationError, match="expected a time"):
        TypeAdapter(Duration).validate_python("90 deg")


def test_sim_clock_advances_one_period_per_tick_without_waiting():
    clock = SimClock(period=0.008)
    clock.start()
    start = time.monotonic()
    for _ in range(1000):
        clock.wait_next()
    assert clock.now == pytest.approx(8.0)
    assert time.monotonic() - start < 1.0  # 8 s of mission time, nowhere near 8 s of wall time


def test_wall_clock_paces_ticks_and_counts_a_deadline_miss():
    clock = WallClock(period=0.02)
    clock.start()
    start = time.monotonic()
    for _ in range(5):
        clock.wait_next()
    assert time.monotonic() - start >= 0.1 - 0.005
    assert clock.deadline_misses == 0
    time.sleep(0.07)  # a tick that overruns by several periods
    clock.wait_next()
    assert clock.deadline_misses == 1
    assert clock.now >= 0.17
