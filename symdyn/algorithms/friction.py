"""Joint friction: viscous damping and Coulomb friction from the model's actuation data."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .common import entry
from ..types import Array
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
def friction_torque(model: Model, qd: Array, smooth: Any = None, *,
                    backend: str | None = None) -> Array:
    """Joint friction torques ``damping * qd + friction * sign(qd)`` (length nv, per speed).

    ``model.damping`` (viscous, torque per unit speed) and ``model.friction`` (Coulomb, a torque;
    URDF ``<dynamics damping friction>``). The torque *opposes* motion when subtracted:
    ``M qdd + C qd + g = tau - friction_torque(model, qd)``, i.e. the actuators must supply
    ``rnea(q, qd, qdd) + friction_torque(model, qd)``. None of rnea/crba/aba adds it.

    ``smooth=None``: the exact ``sign`` (0 at ``qd = 0``; non-differentiable there).
    ``smooth=eps > 0``: ``sign(x)`` is replaced by ``x / sqrt(x^2 + eps^2)``, smooth with bounded
    derivatives (slope ``1/eps`` at 0) and within ``eps^2 / (2 x^2)`` of the sign for
    ``|x| >> eps``; use it in gradient-based optimisation (CasADi) with ``eps`` well below the
    speeds of interest. Entries with zero damping and friction are exactly 0.
    """
    if smooth is not None:
        try:
            ok = float(smooth) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"smooth must be None or a positive number (the speed scale eps of "
                             f"x / sqrt(x^2 + eps^2)), got {smooth!r}")
        smooth = float(smooth)
    B, (qd,) = entry(model, ("qd", qd, "v"), backend=backend)
    out = []
    for i, (a, b) in enumerate(model.v_idx):
        for k in range(b - a):
            x, d, c = qd[i][k], float(model.damping[a + k]), float(model.friction[a + k])
            t = 0
            if d != 0:
                t = d * x
            if c != 0:
                s = B.sign(x) if smooth is None else x / B.sqrt(x * x + smooth * smooth)
                t = t + c * s
            out.append(t)
    return B.vector(out)
