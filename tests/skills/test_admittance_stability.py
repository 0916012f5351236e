"""Delay margins of the admittance dock loop (issue 18): continuous, sampled, and by simulation.

One axis of the flagship's dock (missions/sirom_dock.yaml: M = 11.25 kg, D = 1000 N·s/m, K = 0)
against a contact of stiffness k: the simulated wrist's 20 N/mm, and 1e5-1e6 N/m for a real stiff
contact. The delay is the sensor-to-command delay beyond the tick's own sample-and-hold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal

from orbitree.skills import admittance as adm
from orbitree.skills.admittance import AdmittanceParams

MASS, DAMPING = 11.25, 1000.0  # the flagship's admittance_dock, translation
SIM_WRIST = 20e3  # the simulated wrist compliance, 20 N/mm
TICK = 0.008  # the flagship's 125 Hz


def _sweep_margin(mass: float, damping: float, stiffness: float, admittance_stiffness: float = 0.0) -> float:
    """Delay margin from scipy's frequency response of ``k / (M s² + D s + K)``: the phase left
    at the unit-gain crossover (found on a dense grid, refined linearly) over its frequency."""
    loop = signal.TransferFunction([stiffness], [mass, damping, admittance_stiffness])
    omega = np.logspace(-2, 6, 400_001)
    _, response = signal.freqresp(loop, omega)
    gain = np.abs(response)
    i = int(np.flatnonzero((gain[:-1] - 1.0) * (gain[1:] - 1.0) <= 0.0)[0])
    w = (1.0 - gain[i]) / (gain[i + 1] - gain[i])
    crossover = omega[i] + w * (omega[i + 1] - omega[i])
    phase = np.unwrap(np.angle(response))
    phase_margin = math.pi + phase[i] + w * (phase[i + 1] - phase[i])
    return phase_margin / crossover


def _simulate_axis(
    stiffness: float, delay: float, seconds: float, period: float = TICK, start: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    """The dock loop in time, built from the law itself: each tick the wrist reads the force of
    the contact where the arm was ``delay`` ago (the arm moves at constant speed between ticks,
    so its path is the linear interpolation of the tick positions; it rests at ``start`` before
    0), ``admittance_step`` (dead band off) turns it into a twist, and the arm moves at that twist
    for one tick, as the simulated arm does under ``speed_l``. Returns tick times and positions."""
    law = AdmittanceParams(mass=(MASS,) * 6, damping=(DAMPING,) * 6, force_dead_band=0.0, torque_dead_band=0.0)
    ticks = round(seconds / period)
    times = period * np.arange(ticks + 1)
    positions = np.empty(ticks + 1)
    positions[0] = start
    twist, offset = np.zeros(6), np.zeros(6)
    for n in range(ticks):
        seen = np.interp(times[n] - delay, times[: n + 1], positions[: n + 1])
        wrench = np.array([-stiffness * seen, 0.0, 0.0, 0.0, 0.0, 0.0])
        twist, offset = adm.admittance_step(wrench, twist, offset, period, law)
        positions[n + 1] = positions[n] + period * twist[0]
    return times, positions


def _envelope_ratio(times: np.ndarray, positions: np.ndarray) -> float:
    """Peak |x| over the last second over the peak over the second after the first second."""
    late = np.abs(positions[times >= times[-1] - 1.0]).max()
    early = np.abs(positions[(times >= 1.0) & (times < 2.0)]).max()
    return float(late / early)


def _spectral_radius(stiffness: float, period: float, delay: float = 0.0) -> float:
    matrix = adm.dock_loop_matrix(MASS, DAMPING, stiffness, period, delay)
    return float(np.max(np.abs(np.linalg.eigvals(matrix))))


# ---------------------------------------------------------------------------- continuous time


def test_flagship_continuous_delay_margin_is_69_ms_not_the_mass_free_78() -> None:
    margin = adm.delay_margin(MASS, DAMPING, SIM_WRIST)
    print(f"continuous delay margin at k = 20 N/mm: {margin * 1e3:.2f} ms")
    assert margin == pytest.approx(0.069, abs=0.001)
    assert (math.pi / 2) * DAMPING / SIM_WRIST == pytest.approx(0.0785, abs=1e-4)  # README's old bound
    assert adm.delay_margin(1e-9, DAMPING, SIM_WRIST) == pytest.approx((math.pi / 2) * DAMPING / SIM_WRIST)


@pytest.mark.parametrize(
    ("stiffness", "damping", "admittance_stiffness"),
    [(SIM_WRIST, DAMPING, 0.0), (1e5, DAMPING, 0.0), (1e6, DAMPING, 0.0), (SIM_WRIST, 400.0, 0.0),
     (SIM_WRIST, 12.5, 0.0), (SIM_WRIST, DAMPING, 5e3)],
)
def test_continuous_margin_matches_scipy_frequency_response(
    stiffness: float, damping: float, admittance_stiffness: float
) -> None:
    margin = adm.delay_margin(MASS, damping, stiffness, admittance_stiffness=admittance_stiffness)
    assert margin == pytest.approx(_sweep_margin(MASS, damping, stiffness, admittance_stiffness), rel=1e-4)
    # The characteristic equation has its root on the imaginary axis at that delay.
    omega = np.logspace(-1, 5, 200_001)
    residual = np.abs(
        -MASS * omega**2 + 1j * damping * omega + admittance_stiffness + stiffness * np.exp(-1j * omega * margin)
    )
    assert residual.min() < 1e-3 * stiffness


def test_continuous_margin_edge_cases() -> None:
    assert adm.delay_margin(MASS, DAMPING, 0.0) == math.inf  # no contact, no loop
    assert adm.delay_margin(MASS, 0.0, SIM_WRIST) == 0.0  # undamped: marginal without delay
    assert adm.delay_margin(MASS, DAMPING, 1e3, admittance_stiffness=5e3) == math.inf  # |L| < 1 everywhere


# ---------------------------------------------------------------------------- sampled loop


def test_loop_matrix_reproduces_the_admittance_step_with_a_delayed_force() -> None:
    for delay in (0.0, 0.024, 0.0305):  # whole and fractional ticks
        times, positions = _simulate_axis(SIM_WRIST, delay, seconds=1.0)
        matrix = adm.dock_loop_matrix(MASS, DAMPING, SIM_WRIST, TICK, delay)
        state = np.zeros(matrix.shape[0])
        state[1:] = 1e-3  # at rest at 1 mm, and there before
        replica = [state[1]]
        for _ in range(len(times) - 1):
            state = matrix @ state
            replica.append(state[1])
        np.testing.assert_allclose(replica, positions, rtol=0.0, atol=1e-12)


def test_flagship_sampled_margin_is_67_ms_two_below_the_continuous() -> None:
    continuous = adm.delay_margin(MASS, DAMPING, SIM_WRIST)
    sampled = adm.sampled_delay_margin(MASS, DAMPING, SIM_WRIST, TICK)
    print(f"k = 20 N/mm, 8 ms tick: continuous {continuous * 1e3:.2f} ms, sampled {sampled * 1e3:.2f} ms")
    assert sampled == pytest.approx(0.0669, abs=3e-4)
    assert continuous - TICK / 2 < sampled < continuous
    # In whole ticks: stable with 8 ticks (64 ms) of delay, unstable with 9 (72 ms).
    assert _spectral_radius(SIM_WRIST, TICK, 8 * TICK) < 1.0 < _spectral_radius(SIM_WRIST, TICK, 9 * TICK)


def test_sampled_loop_decays_below_its_margin_and_grows_above_it_in_time() -> None:
    for stiffness in (SIM_WRIST, 1e5):
        margin = adm.sampled_delay_margin(MASS, DAMPING, stiffness, TICK)
        below = _envelope_ratio(*_simulate_axis(stiffness, 0.9 * margin, seconds=6.0))
        above = _envelope_ratio(*_simulate_axis(stiffness, 1.1 * margin, seconds=6.0))
        print(f"k = {stiffness:.0e} N/m: envelope over 4 s x{below:.3g} at 0.9 x margin, x{above:.3g} at 1.1 x")
        assert below < 0.1 and above > 10.0


def test_sampled_margin_tends_to_the_continuous_one_as_the_tick_shrinks() -> None:
    continuous = adm.delay_margin(MASS, DAMPING, SIM_WRIST)
    periods = (0.008, 0.002, 0.0005)
    gaps = [continuous - adm.sampled_delay_margin(MASS, DAMPING, SIM_WRIST, period) for period in periods]
    print("continuous - sampled at 8, 2, 0.5 ms:", [f"{g * 1e3:.3f} ms" for g in gaps])
    assert all(0.0 < g < 0.4 * period for g, period in zip(gaps, periods, strict=True))
    assert gaps[0] > gaps[1] > gaps[2]


# ---------------------------------------------------------------------------- stiff contacts


def test_stiff_contacts_leave_11_ms_and_1_ms_not_the_mass_free_15_and_1_5() -> None:
    continuous = {k: adm.delay_margin(MASS, DAMPING, k) for k in (1e5, 1e6)}
    at_8_ms = {k: adm.sampled_delay_margin(MASS, DAMPING, k, TICK) for k in (1e5, 1e6)}
    at_2_ms = {k: adm.sampled_delay_margin(MASS, DAMPING, k, 0.002) for k in (1e5, 1e6)}
    for k in (1e5, 1e6):
        print(f"k = {k:.0e} N/m: mass-free {math.pi / 2 * DAMPING / k * 1e3:.2f} ms, continuous "
              f"{continuous[k] * 1e3:.2f} ms, sampled at 8 ms {at_8_ms[k] * 1e3:.2f} ms, "
              f"at 2 ms {at_2_ms[k] * 1e3:.2f} ms")
    assert continuous[1e5] == pytest.approx(0.01136, abs=5e-5)
    assert continuous[1e6] == pytest.approx(0.001015, abs=5e-6)
    assert at_8_ms[1e5] == pytest.approx(0.0108, abs=2e-4)
    assert at_8_ms[1e6] == 0.0  # the 8 ms sample-and-hold alone destabilises it
    assert at_2_ms[1e5] == pytest.approx(0.0112, abs=2e-4)
    assert at_2_ms[1e6] == pytest.approx(0.0010, abs=5e-5)


def test_the_8_ms_tick_survives_contacts_below_950_kn_per_m_without_delay() -> None:
    # With no delay beyond the tick the loop is (z − 1)((M + T D) z − M) + T² k z: a root at
    # z = −1 when k = 2 (2 M + T D) / T².
    critical = 2.0 * (2.0 * MASS + TICK * DAMPING) / TICK**2
    assert critical == pytest.approx(953_125.0)
    assert _spectral_radius(0.99 * critical, TICK) < 1.0 < _spectral_radius(1.01 * critical, TICK)
    # And with delay: the sim's wrist has 67 ms of it to spare, 1e5 N/m 10.8 ms, 2e5 N/m 5.0 ms.
    spare = {k: adm.sampled_delay_margin(MASS, DAMPING, k, TICK) for k in (SIM_WRIST, 1e5, 2e5, 5e5)}
    print("8 ms tick, margin by contact stiffness:", {f"{k:.0e}": f"{v * 1e3:.2f} ms" for k, v in spare.items()})
    assert spare[2e5] == pytest.approx(0.0050, abs=2e-4)
    assert spare[SIM_WRIST] > spare[1e5] > spare[2e5] > spare[5e5] > 0.0


def test_margin_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="need finite mass > 0"):
        adm.delay_margin(0.0, DAMPING, SIM_WRIST)
    with pytest.raises(ValueError, match="need finite mass > 0"):
        adm.sampled_delay_margin(MASS, DAMPING, -1.0, TICK)
    with pytest.raises(ValueError, match="dt must be finite and > 0"):
        adm.dock_loop_matrix(MASS, DAMPING, SIM_WRIST, 0.0)
    with pytest.raises(ValueError, match="delay must be finite and >= 0"):
        adm.dock_loop_matrix(MASS, DAMPING, SIM_WRIST, TICK, -0.001)
    assert adm.sampled_delay_margin(MASS, DAMPING, 0.0, TICK) == math.inf
