"""Adaptive servo gain of Kermorgant & Chaumette (2014), as ViSP's ``vpAdaptiveGain`` defines it.

``λ(x) = (λ0 − λ∞) · exp(−λ'0 · x / (λ0 − λ∞)) + λ∞`` for an error magnitude ``x >= 0``:

* ``lambda0`` (λ0) is the gain at zero error (the final convergence rate, 1/s);
* ``lambda_inf`` (λ∞) is the gain for large errors (keeps the first motions slow);
* ``slope0`` (λ'0) is ``−dλ/dx`` at ``x = 0``: how quickly the gain rises as the error shrinks.

λ decreases monotonically from λ0 to λ∞. With ``lambda0 == lambda_inf`` the gain is constant
(the formula would be 0/0; ``slope0`` is then irrelevant). The defaults (1.5, 0.4, 30) are those of
ViSP's UR PBVS example. The SIROM self-coupling paper ([SIROM] in the README's Sources, eq. 13)
uses this gain, tuned by ViSP's advice.

Tuning (ViSP's advice): raise λ0 until the robot oscillates near the goal, then back off; raise
λ∞ until tracking is lost or the start is too fast, then back off; λ'0 ≈ 30.

What ``x`` is — the Euclidean norm of the PBVS error (the SIROM paper's ``λ(‖e‖)``) or its infinity norm
(ViSP's ``vpAdaptiveGain::operator()(vpColVector)``) — is the caller's choice; see
:func:`orbitree.skills.pbvs.camera_velocity`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AdaptiveGain:
    """Callable gain ``λ(x)``; ``x`` is a non-negative error magnitude (scalar or array).

    Checks ``lambda0 >= lambda_inf > 0`` and ``slope0 > 0`` at construction (ValueError).
    """

    lambda0: float = 1.5
    lambda_inf: float = 0.4
    slope0: float = 30.0

    def __post_init__(self) -> None:
        for name in ("lambda0", "lambda_inf", "slope0"):
            value = float(getattr(self, name))
            if not math.isfinite(value):
                raise ValueError(f"AdaptiveGain.{name} must be finite, got {value}")
            object.__setattr__(self, name, value)
        if self.lambda_inf <= 0.0:
            raise ValueError(f"AdaptiveGain.lambda_inf must be > 0, got {self.lambda_inf}")
        if self.lambda0 < self.lambda_inf:
            raise ValueError(
                f"AdaptiveGain.lambda0 must be >= lambda_inf ({self.lambda_inf}), "
                f"got {self.lambda0}"
            )
        if self.slope0 <= 0.0:
            raise ValueError(f"AdaptiveGain.slope0 must be > 0, got {self.slope0}")

    @classmethod
    def constant(cls, value: float) -> AdaptiveGain:
        """The degenerate gain ``λ(x) = value`` for every ``x``."""
        return cls(lambda0=value, lambda_inf=value)

    @property
    def is_constant(self) -> bool:
        return self.lambda0 == self.lambda_inf

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        """``λ(x)``: a float for a scalar ``x``, else an array of ``x``'s shape; ``λ(inf) = λ∞``."""
        if type(x) is float:  # the servo's case, once or twice a tick: the same operations on a float
            if not x >= 0.0:  # NaN too
                raise ValueError(f"gain argument must be >= 0 (an error magnitude), got {x}")
            span = self.lambda0 - self.lambda_inf
            if span == 0.0:
                return float(self.lambda0)
            return float(span * np.exp(-self.slope0 * x / span) + self.lambda_inf)
        magnitude = np.asarray(x, dtype=float)
        if np.any(np.isnan(magnitude)) or np.any(magnitude < 0.0):
            raise ValueError(f"gain argument must be >= 0 (an error magnitude), got {x}")
        span = self.lambda0 - self.lambda_inf
        if span == 0.0:
            value = np.full_like(magnitude, self.lambda0)
        else:
            value = span * np.exp(-self.slope0 * magnitude / span) + self.lambda_inf
        return float(value) if value.ndim == 0 else value
