"""Contact descriptions: :class:`Contact` and their resolution against a model.

A contact holds a frame of the robot at rest against the (fixed) environment:

* ``dim=3``: a *point contact*: the origin of the frame has zero velocity; 3 constraint rows,
  linear, in the contact's reference axes;
* ``dim=6``: a *frame contact*: the whole frame is fixed; 6 rows ``[angular; linear]``.

References (Pinocchio's, see :mod:`symdyn.algorithms.frames`): ``"local"`` (frame axes),
``"local_world_aligned"`` (world axes at the frame origin) and, for 6-D contacts only,
``"world"`` (the spatial velocity in world coordinates, at the world origin; Pinocchio 4.1's
``RigidConstraintModel`` accepts only the first two). A 3-D contact in
``"world"`` is refused: the linear rows of a ``"world"`` Jacobian are the velocity of the body
point at the world origin, not of the contact point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import numpy as np

from ..algorithms.frames import REFERENCES, FrameRef, resolve_frame
from ..spatial import Transform

if TYPE_CHECKING:
    from ..model import Frame, Model

__all__ = ["Contact", "ResolvedContact", "nonneg_number", "resolve_contacts"]


def nonneg_number(x: Any, what: str, upper: float | None = None) -> float:
    """``x`` as a float that is finite, >= 0 and at most ``upper``; TypeError / ValueError naming
    ``what`` otherwise."""
    if isinstance(x, bool):
        raise TypeError(f"{what} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {x!r}") from None
    if not math.isfinite(v) or v < 0 or (upper is not None and v > upper):
        rng = f"in [0, {upper:g}]" if upper is not None else "finite and >= 0"
        raise ValueError(f"{what} must be {rng}, got {v}")
    return v


@dataclass(frozen=True)
class Contact:
    """A contact of a robot frame with the fixed environment.

    ``frame``: a link or joint name, a body index or a :class:`~symdyn.model.Frame`, as
    :func:`symdyn.algorithms.frames.resolve_frame` takes them. ``dim``: 3 (point contact: the
    frame origin does not move; linear rows) or 6 (frame contact: the frame does not move; rows
    ``[angular; linear]``). ``reference``: the axes of the rows and of the contact force,
    ``"local"``, ``"local_world_aligned"`` or (6-D only) ``"world"``.

    ``baumgarte=(kp, kd)``: stabilization gains (both >= 0). The constraint acceleration is
    ``J qdd + drift = -kd v_c - kp e_c`` with ``v_c = J qd`` the contact velocity and ``e_c`` the
    position error from the ``target`` in the contact's reference:

    * 3-D contact, ``target`` = 3 numbers (world coordinates of where the contact point should
      be): ``e_c = p - target``, rotated into the frame axes for ``"local"``;
    * 6-D contact, ``target`` = a placement in world coordinates (a 4x4 homogeneous matrix, a
      pair ``(R, p)`` of a 3x3 rotation and 3 numbers as :func:`symdyn.frame_placement` returns
      it, an object with a ``homogeneous`` 4x4 matrix such as ``pinocchio.SE3``, or a
      :class:`~symdyn.spatial.Transform` ``(E, r)`` from world to the target frame, i.e.
      ``R = E^T``, ``p = r``): Pinocchio
      4.1's ``RigidConstraintModel`` error ``-log6(c1Mc2) = log6(c2Mc1)``, with ``c1`` the
      frame's placement and ``c2`` the target: the twist ``[w; u]`` (:func:`symdyn.spatial.log6`)
      that moves the target onto the frame, in frame coordinates for ``"local"``, both 3-blocks
      rotated to world axes for ``"local_world_aligned"`` (as Pinocchio), and moved to world
      coordinates (at the world origin, ``[R w; R u + p x R w]``) for ``"world"``, which makes
      the ``"world"`` rows the ``"local"`` ones under the frame's motion transform (same
      ``qdd``). The target is stored as the pair ``(R, p)`` of tuples (hashable).

    Without a target the reference placement is the placement at the current ``q``
    (Pinocchio's ``RigidConstraintModel`` whose desired placement is the current one), so
    ``kp`` has no effect.
    """

    frame: FrameRef
    dim: int = 3
    reference: str = "local"
    baumgarte: tuple[float, float] = (0.0, 0.0)
    target: Any = None

    def __post_init__(self) -> None:
        d = self.dim
        if isinstance(d, bool) or not hasattr(d, "__index__") or d.__index__() not in (3, 6):
            raise ValueError(f"Contact dim must be 3 (point contact) or 6 (frame contact), "
                             f"got {d!r}")
        object.__setattr__(self, "dim", d.__index__())
        if self.reference not in REFERENCES:
            raise ValueError(f"Contact reference must be one of {', '.join(map(repr, REFERENCES))}, "
                             f"got {self.reference!r}")
        if self.dim == 3 and self.reference == "world":
            raise ValueError("a 3-D Contact cannot use reference 'world': the linear rows of a "
                             "'world' Jacobian are the velocity of the body point at the world "
                             "origin, not of the contact point; use 'local_world_aligned' (world "
                             "axes) or 'local'")
        try:
            kp, kd = self.baumgarte
        except (TypeError, ValueError):
            raise TypeError(f"Contact baumgarte must be a pair (kp, kd), got {self.baumgarte!r}") \
                from None
        object.__setattr__(self, "baumgarte", (nonneg_number(kp, "Contact baumgarte kp"),
                                                nonneg_number(kd, "Contact baumgarte kd")))
        if self.target is not None:
            t = _point_target(self.target) if self.dim == 3 else _placement_target(self.target)
            object.__setattr__(self, "target", t)


def _point_target(target: Any) -> tuple[float, float, float]:
    try:
        t = tuple(float(x) for x in target)
    except (TypeError, ValueError):
        raise TypeError(f"Contact target must be 3 numbers (world coordinates), got "
                        f"{target!r}") from None
    if len(t) != 3 or not all(math.isfinite(x) for x in t):
        raise ValueError(f"Contact target must be 3 finite numbers (world coordinates), "
                         f"got {target!r}")
    return (t[0], t[1], t[2])


_FORMS = ("a placement in world coordinates: a 4x4 homogeneous matrix, a pair (R, p) of a 3x3 "
          "rotation matrix and 3 numbers, an object with a 4x4 'homogeneous' matrix "
          "(pinocchio.SE3) or a symdyn Transform (world -> frame)")
_PLACEMENT = f"a 6-D Contact target must be {_FORMS}"


def _real_array(x: Any, what: str) -> np.ndarray:
    try:
        a = np.asarray(x)
        if a.dtype.kind not in "iuf":                      # no complex, bool or objects
            raise TypeError
        return a.astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"{_PLACEMENT}; {what} is not an array of real numbers: {x!r}") from None


#: how far a 6-D target's rotation may be from orthonormal with determinant +1
ROTATION_TOL = 1e-9


def _placement_target(target: Any) -> tuple[tuple[tuple[float, ...], ...], tuple[float, ...]]:
    """A 6-D contact's target (see :class:`Contact`) as the pair ``(R rows, p)`` of tuples,
    after checking it: real and finite, R a rotation within :data:`ROTATION_TOL`."""
    if isinstance(target, Transform):                       # world -> frame: R = E^T, p = r
        target = (_real_array(target.E, "E").T, target.r)
    elif hasattr(target, "homogeneous") and not isinstance(target, (tuple, list, np.ndarray)):
        target = target.homogeneous
    if isinstance(target, (str, bytes)):
        raise TypeError(f"{_PLACEMENT}, got {target!r}")
    if isinstance(target, (tuple, list)) and len(target) == 2:
        R, p = _real_array(target[0], "R"), _real_array(target[1], "p")
        if R.shape != (3, 3) or p.size != 3:
            raise ValueError(f"{_PLACEMENT}; got R of shape {R.shape} and p of shape {p.shape}")
        p = p.reshape(3)
    else:
        H = _real_array(target, "the target")
        if H.shape == (3,):
            raise ValueError(f"a 6-D Contact takes no target of 3 numbers (a point, as a 3-D "
                             f"contact's): its target is {_FORMS}; got {target!r}")
        if H.shape != (4, 4):
            raise ValueError(f"{_PLACEMENT}; got an array of shape {H.shape}")
        if not np.all(np.isfinite(H)):
            raise ValueError(f"Contact target must be finite, got {target!r}")
        if np.abs(H[3] - [0.0, 0.0, 0.0, 1.0]).max() > ROTATION_TOL:
            raise ValueError(f"Contact target: the last row of a homogeneous matrix must be "
                             f"[0, 0, 0, 1], got {H[3].tolist()}")
        R, p = H[:3, :3], H[:3, 3]
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise ValueError(f"Contact target must be finite, got R = {R.tolist()}, p = {p.tolist()}")
    ortho = float(np.abs(R.T @ R - np.eye(3)).max())
    det = float(np.linalg.det(R))
    if ortho > ROTATION_TOL or abs(det - 1) > ROTATION_TOL:
        raise ValueError(f"Contact target: R must be a rotation matrix (R^T R = I and det R = +1 "
                         f"within {ROTATION_TOL:g}), got |R^T R - I| = {ortho:.3g}, det R = "
                         f"{det:.12g}")
    return (tuple(tuple(float(x) for x in row) for row in R), tuple(float(x) for x in p))


class ResolvedContact(NamedTuple):
    """A :class:`Contact` with its frame resolved in a model and its first row in the stack."""

    contact: Contact
    frame: Frame
    row: int


def _as_list(contacts: Any) -> list[Contact]:
    if isinstance(contacts, Contact):
        return [contacts]
    if isinstance(contacts, (str, bytes)) or not isinstance(contacts, Sequence):
        raise TypeError(f"contacts must be a Contact or a sequence of Contact, got "
                        f"{type(contacts).__name__}")
    for k, c in enumerate(contacts):
        if not isinstance(c, Contact):
            raise TypeError(f"contacts[{k}] must be a symdyn Contact, got {type(c).__name__}")
    return list(contacts)


def resolve_contacts(model: Model, contacts: Contact | Sequence[Contact]) -> list[ResolvedContact]:
    """Resolve each contact's frame in ``model`` and stack their rows (in the given order).

    Raises ``ValueError`` for: an empty contact set, a model with mimic joints (the contact
    algorithms run on the independent tree; reduce it first with :func:`symdyn.reduce_mimic`),
    an unknown or ambiguous frame, and a frame that nothing moves (attached to the world or to
    bodies whose joints have no degree of freedom)."""
    cs = _as_list(contacts)
    if not cs:
        raise ValueError("contacts is empty: give at least one Contact (without contacts use "
                         "symdyn.aba)")
    if model.mimic:
        raise ValueError(f"model {model.name!r} has mimic joints ({', '.join(sorted(model.mimic))}): "
                         "the contact algorithms do not support them; reduce the model first "
                         "(symdyn.reduce_mimic / symdyn.reduced_model)")
    out, row = [], 0
    for k, c in enumerate(cs):
        try:
            fr = resolve_frame(model, c.frame)
        except KeyError as e:
            raise ValueError(f"contacts[{k}]: {e.args[0]}") from None
        except (ValueError, TypeError) as e:
            raise type(e)(f"contacts[{k}]: {e}") from None
        if fr.body < 0 or not any(model.joints[j].nv for j in model.ancestors[fr.body]):
            raise ValueError(f"contacts[{k}]: frame {c.frame!r} is fixed to the world (no joint "
                             "moves it): a contact there constrains nothing")
        out.append(ResolvedContact(c, fr, row))
        row += c.dim
    return out
