"""A simulated laser tracker: where a reflector on one of the arm's links really is.

It watches the arm as built (``SimRobot.true_table``), not the controller's model: the point of
a kinematic calibration is to find the difference. A reflector is fixed on each link, at
``reflectors[j]`` in the frame of link ``j + 1`` (the frame after joint ``j + 1``, in
:mod:`orbitree.skills.kinematics`' convention); a reading is that point in the tracker's frame
plus a Gaussian error per coordinate of standard deviation ``noise_a + noise_b · L``, ``L`` the
point's distance from the tracker (a laser tracker's usual specification: the seed of
[CirclePoint] uses 5 µm + 0.3 µm/m).
"""

from __future__ import annotations

import numpy as np

from orbitree.skills.kinematics import link_frames


class SimLaserTracker:
    """Readings of the reflector on a link of ``robot`` (a ``SimRobot``); ``tracker2base`` (4, 4)
    places the tracker in the robot's base frame; ``reflectors`` (n, 3) m."""

    def __init__(self, robot, tracker2base: np.ndarray, reflectors: np.ndarray, noise_a: float, noise_b: float,
                 rng: np.random.Generator) -> None:
        self.robot = robot
        self.tracker2base = np.asarray(tracker2base, dtype=float)
        self.reflectors = np.asarray(reflectors, dtype=float)
        if self.reflectors.shape != (robot.true_table.n_joints, 3):
            raise ValueError(f"reflectors must be ({robot.true_table.n_joints}, 3), got {self.reflectors.shape}")
        if min(noise_a, noise_b) < 0.0:
            raise ValueError("tracker noise must be >= 0")
        self.noise_a, self.noise_b = float(noise_a), float(noise_b)
        self._rng = rng

    @property
    def robot2tracker(self) -> np.ndarray:
        """The robot's base frame in tracker coordinates (4, 4)."""
        return np.linalg.inv(self.tracker2base)

    def true_point(self, link: int) -> np.ndarray:
        """The reflector of ``link`` (1..n) in tracker coordinates, exactly (3,), m."""
        if not 1 <= link <= len(self.reflectors):
            raise ValueError(f"link must be 1..{len(self.reflectors)}, got {link}")
        frame = link_frames(self.robot.true_table, self.robot.q)[link]
        point = frame[:3, :3] @ self.reflectors[link - 1] + frame[:3, 3]
        return self.robot2tracker[:3, :3] @ point + self.robot2tracker[:3, 3]

    def measure(self, link: int) -> np.ndarray:
        """A reading of the reflector of ``link`` (3,), tracker frame, m."""
        exact = self.true_point(link)
        sigma = self.noise_a + self.noise_b * float(np.linalg.norm(exact))
        return exact + sigma * self._rng.standard_normal(3)
