"""solve_contact on trusted poses (the simulated world's own, not checked again) and the QP's weights
kept per model and hook stiffness: the same results bit for bit as the checked path, which still
rejects bad poses; the compiled broad phase (clear_motion) decides as the numpy test did."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import contact
from orbitree.skills import contact_geometry as geo
from orbitree.skills.contact_model import _weights
from orbitree.skills.contact_qp import _UNBOUNDED

PASSIVE2BASE = np.eye(4)
PASSIVE2BASE[:3, :3] = Rotation.from_rotvec([0.2, -0.1, 0.3]).as_matrix()
PASSIVE2BASE[:3, 3] = [0.6, -0.2, 0.1]


def _approach(model: contact.ContactModel, trusted: bool, hook: contact.HookPull | None,
              load: np.ndarray | None) -> list[tuple[bytes, ...]]:
    """A tilted, offset descent onto the seated pose, 0.2 mm a step, each step from the last result."""
    seated = geo.seated_tcp2passive()
    tilt = Rotation.from_rotvec([0.0, 1.5, 0.5], degrees=True).as_matrix()
    start = seated.copy()
    start[:3, :3] = tilt @ seated[:3, :3]
    start[:3, 3] += [0.0015, -0.001, 0.004]
    real = previous = PASSIVE2BASE @ start
    out = []
    for s in np.linspace(0.0, 1.0, 31)[1:]:
        pose = start.copy()
        pose[:3, 3] = (1 - s) * start[:3, 3] + s * (seated[:3, 3] + [0.0, 0.0, -0.0005])
        commanded = PASSIVE2BASE @ pose
        result = contact.solve_contact(model, commanded, PASSIVE2BASE, real, previous, load=load, hook=hook,
                                       trusted=trusted)
        real, previous = result.real_tcp2base, commanded
        arrays = (result.real_tcp2base, result.wrench_tcp, result.contacts.distances)
        out.append((*(a.tobytes() for a in arrays), bytes([result.n_active, result.iterations, result.converged]),
                    repr(result.hook_tension).encode()))
    return out


@pytest.mark.parametrize("hook", [None, contact.HookPull(0.002, 6.0e4)])
def test_trusted_poses_give_the_checked_results_bit_for_bit(hook: contact.HookPull | None) -> None:
    model = contact.sirom_contact_model(contact.structural_stiffness(), friction=0.3)
    load = np.array([0.0, 0.0, -5.0, 0.1, 0.0, 0.0])
    for pull in (None, load):
        checked = _approach(model, False, hook, pull)
        assert _approach(model, True, hook, pull) == checked
        assert any(n[3][0] > 0 for n in checked)  # the descent does touch
    # the kept Hessian and upper bounds, handed to daqp on every QP step above, are as made
    k, hessian, _ = _weights(model, hook)
    assert np.array_equal(hessian, np.diag(k))
    assert _UNBOUNDED and all(np.isposinf(upper).all() for upper in _UNBOUNDED.values())


def test_checked_path_still_rejects_a_bad_previous_pose() -> None:
    model = contact.sirom_contact_model()
    pose = PASSIVE2BASE @ geo.seated_tcp2passive()
    bad = pose.copy()
    bad[:3, :3] *= 1.01
    with pytest.raises(ValueError, match="previous_real_tcp2base"):
        contact.solve_contact(model, pose, PASSIVE2BASE, bad)
    with pytest.raises(ValueError, match="previous_commanded_tcp2base"):
        contact.solve_contact(model, pose, PASSIVE2BASE, pose, bad)


def test_weights_are_kept_per_hook_stiffness_and_equal_the_appended_stiffness() -> None:
    model = contact.sirom_contact_model(contact.structural_stiffness())
    k, hessian, zero = _weights(model, None)
    assert k is model.stiffness and np.array_equal(hessian, np.diag(k)) and zero.tolist() == [0.0] * 6
    k7, hessian7, zero7 = _weights(model, contact.HookPull(0.0, 5.0e4))
    assert k7.tobytes() == np.append(model.stiffness, 5.0e4).tobytes()
    assert np.array_equal(hessian7, np.diag(k7)) and zero7.tolist() == [0.0] * 7
    assert _weights(model, contact.HookPull(0.003, 5.0e4))[0] is k7  # the depth does not matter
    assert _weights(model, contact.HookPull(0.0, 4.0e4))[0][6] == 4.0e4
    with pytest.raises(ValueError, match="read-only"):
        k7[0] = 1.0


def _clear_motion_numpy(model: contact.ContactModel, commanded: np.ndarray, passive2base: np.ndarray,
                        real: np.ndarray, previous: np.ndarray | None) -> bool:
    """clear_motion as numpy expressions (the code before the compiled broad phase)."""
    base2passive = np.linalg.inv(passive2base)
    real = base2passive @ real
    vertices = model.active.vertices
    if not geo.clear_of_box(geo.transform_points(real, vertices), model.passive, model.margin_m):
        return False
    start = real if previous is None else base2passive @ previous
    distance, angle = contact._gap(start, base2passive @ commanded)
    sweep = distance + angle * model.active.radius
    if sweep == 0.0 and previous is None:
        return True
    return geo.clear_of_box(geo.transform_points(start, vertices), model.passive, model.margin_m + sweep + 1e-9)


def test_compiled_broad_phase_decides_as_the_numpy_test() -> None:
    model = contact.sirom_contact_model(contact.structural_stiffness())
    rng = np.random.default_rng(11)
    seated = geo.seated_tcp2passive()
    answers = []
    for k in range(400):
        poses = []
        for _ in range(2):
            pose = seated.copy()
            pose[:3, :3] = Rotation.from_rotvec(rng.normal(0.0, 0.05, 3)).as_matrix() @ seated[:3, :3]
            pose[:3, 3] += rng.normal(0.0, 0.01, 3)
            pose[2, 3] += rng.uniform(0.0, 0.08)
            poses.append(PASSIVE2BASE @ pose)
        previous = None if k % 3 == 0 else poses[1] if k % 3 == 1 else poses[0]
        expected = _clear_motion_numpy(model, poses[1], PASSIVE2BASE, poses[0], previous)
        assert contact.clear_motion(model, poses[1], PASSIVE2BASE, poses[0], previous) is expected
        answers.append(expected)
    assert 50 < sum(answers) < 350  # both answers met
