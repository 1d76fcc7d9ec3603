"""Motion on the configuration space: ``q (+) v dt``, joint by joint (Pinocchio's ``integrate``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import Array
from .common import entry
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
def integrate(model: "Model", q: Array, v: Array, dt: Any = 1.0,
              backend: str | None = None) -> Array:
    """The configuration reached from ``q`` moving with velocity ``v`` for time ``dt``: vector
    joints add ``v dt``; floating and spherical joints move their unit quaternion (x, y, z, w) on
    the sphere by the body angular velocity (``[omega; v]`` body velocity for a free-flyer), as
    Pinocchio's ``integrate``. Any backend; ``q`` of size nq, ``v`` of size nv."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("v", v, "v"), backend=backend)
    return B.vcat([j.integrate(B, qs[i], vs[i], dt) for i, j in enumerate(model.joints)])
