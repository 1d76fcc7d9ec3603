"""Snapping rotation constants that are 0, +1 or -1 up to a tolerance.

Robot files write angles in decimal: ``rpy="1.57079632679 0 0"`` is pi/2 to 12 digits and leaves
rotation entries of 4.9e-12 where the intended rotation has exact zeros. Such a value is not a
rounding error but the file's precision, and it costs: a generated graph must keep every product
with it, so the sparse joint rotations fill up. :func:`snap_model` makes these entries exact.

What is snapped (numeric models only; a symbolic model is returned as is):

* the rotation ``E`` of every tree transform (``model.Xtree``, fixed joints already merged into
  it) and of every frame (``model.frames``, the placements of fixed links): an entry within
  ``tol`` of 0 becomes 0; an entry within ``tol`` of +1 or -1 becomes +-1 when the other entries
  of its row and column become 0 (a rotation's row and column through +-1 are otherwise zero,
  so a lone near-1 entry, e.g. cos of a deliberate 1e-5 rad angle, is left alone);
* the unit axis of revolute, prismatic and helical joints: entries within ``tol`` of 0 become 0
  and the axis is normalised again (an exact coordinate axis becomes the ``'x' | 'y' | 'z'``
  form).

Consistency: zeroing entries of a rotation may leave it non-orthonormal by about the snapped
values (when a near-pi/2 angle is composed with generic ones, the other entries carry the file's
error too). Then the matrix is made orthonormal again, keeping the snapped entries exact, by
alternating the nearest rotation (polar factor, from the SVD) with re-imposing the snapped
entries, until ``max |E E^T - I|`` is back to what it was before (or 4 eps). Each step moves the
matrix by at most its current distance from the rotations, so the whole change stays of the order
of the snapped values. Guarantee: no entry of a rotation or an axis changes by more than ``tol``;
a matrix whose snapping would need more is left unchanged. Results of the algorithms therefore
change by about the largest change made (:attr:`SnapReport.largest`), relative to their size.

Not snapped: translations and inertias (they carry units, so an absolute tolerance has no
meaning for them), joint limits and gravity.
"""
from __future__ import annotations

import copy
import logging
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .model import Model

__all__ = ["MAX_SNAP", "ROUNDING_SNAP", "SNAP_TOLERANCE", "SnapReport", "check_snap_tolerance",
           "snap_axis", "snap_model", "snap_rotation"]

log = logging.getLogger("symdyn.snapping")

#: Default tolerance of the file loaders (``snap=`` of :func:`symdyn.load_urdf`,
#: :func:`symdyn.load_robot`, :func:`symdyn.load_mjcf`): catches angles written with 11 or more
#: significant digits (``1.57079632679``: 4.9e-12 from pi/2), whose entries change results by
#: up to ~1e-11 relative on the example-robot-data robots (reports/snapping.md); 10-digit angles
#: (``1.570796327``: 2.1e-10) are left, since their snapping changes results by ~1e-10 for little
#: graph (``snap=1e-9`` takes them too).
SNAP_TOLERANCE = 1e-10

#: Tolerance applied whenever code is generated (:func:`symdyn.codegen.functions.exact_rotations`):
#: 4 eps, below one rounding of a unit rotation entry, so values agree with the model's to rounding.
ROUNDING_SNAP = 4 * 2.0 ** -52

#: Largest tolerance accepted: above it snapping would change real geometry (an angle of 1 mrad),
#: not the precision of a file.
MAX_SNAP = 1e-3


class SnapReport(NamedTuple):
    """What :func:`snap_model` changed (``model.snap_report``).

    ``tolerance``: the tolerance applied; ``largest``: the largest change of any rotation or axis
    entry (the largest snapped deviation from 0 or +-1, or a re-orthonormalisation step if that
    was larger; 0.0 when nothing changed); ``entries``: the number of entries snapped;
    ``where``: the constant holding the largest change (e.g. ``"Xtree 'wrist_1_link' E[1, 2]"``),
    None when nothing changed."""

    tolerance: float
    largest: float
    entries: int
    where: str | None

    def __str__(self) -> str:
        if not self.entries:
            return f"snap {self.tolerance:.3g}: no rotation or axis entry within the tolerance"
        return (f"snap {self.tolerance:.3g}: {self.entries} rotation/axis entries made exactly "
                f"0 or +-1, largest change {self.largest:.3g} ({self.where})")


def check_snap_tolerance(tol: Any) -> float:
    """``tol`` as a float in ``[0, MAX_SNAP]``; ``None`` or 0 mean off (0.0).

    Raises ``TypeError`` for a non-number (a bool included) and ``ValueError`` for a negative,
    NaN or infinite value or one above :data:`MAX_SNAP`."""
    if tol is None:
        return 0.0
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise TypeError(f"snap must be a tolerance (a number in [0, {MAX_SNAP:g}]) or None, got "
                        f"{type(tol).__name__} {tol!r}")
    value = float(tol)
    if math.isnan(value) or value < 0 or value > MAX_SNAP:
        raise ValueError(f"snap must be a tolerance in [0, {MAX_SNAP:g}] (0 or None: off), got "
                         f"{tol!r}; above {MAX_SNAP:g} snapping would change real geometry, not "
                         "the precision of a file")
    return value


def _orthonormality(E: np.ndarray) -> float:
    return float(np.abs(E @ E.T - np.eye(3)).max())


def _reorthonormalise(S: np.ndarray, mask: np.ndarray, limit: float) -> np.ndarray | None:
    """A rotation with ``S``'s entries at ``mask`` and ``max |E E^T - I| <= limit``, by
    alternating projections (nearest rotation, then the snapped entries again); None if that
    does not converge."""
    fixed = S[mask]
    for _ in range(50):
        U, _, Vt = np.linalg.svd(S)
        S = U @ Vt
        S[mask] = fixed
        if _orthonormality(S) <= limit:
            return S
    return None


def _snap_at(E: np.ndarray, tol: float) -> tuple[np.ndarray, int] | None:
    """The snapped rotation and the number of entries snapped at tolerance ``tol``, or None when
    no rotation with those entries exact lies within ``tol`` of ``E`` entry by entry."""
    small = np.abs(E) <= tol
    # +-1 only where the rest of the row and of the column snap to 0
    rest = (small.sum(axis=1, keepdims=True) - small == 2) & (small.sum(axis=0, keepdims=True) - small == 2)
    unit = (np.abs(np.abs(E) - 1.0) <= tol) & rest
    exact = small | unit
    S = np.where(small, 0.0, np.where(unit, np.sign(E), E))
    limit = max(_orthonormality(E), ROUNDING_SNAP)
    if _orthonormality(S) > limit:
        R = _reorthonormalise(S, exact, limit)
        if R is None or float(np.abs(R - E).max()) > tol:
            return None
        S = R
    return S, int((S != E)[exact].sum())


def snap_rotation(E: Any, tol: float) -> tuple[np.ndarray, int]:
    """``(E', n)``: the rotation ``E`` with entries within ``tol`` of 0, +1, -1 made exact (see
    the module docstring for the rule and the re-orthonormalisation) and the number of entries
    snapped. ``E'`` is a new array, or ``E`` itself (as a float array) when nothing changes.

    When snapping every such entry would move the matrix by more than ``tol`` (an entry of
    1e-11 that is the product of two deliberate 1e-6 rad angles has no exact-zero rotation near
    it), the largest smaller tolerance whose snapping stays within it is used instead."""
    E = np.asarray(E, dtype=float)
    dev = np.minimum(np.abs(E), np.abs(np.abs(E) - 1.0))
    levels = sorted({float(d) for d in dev.flat if 0.0 < d <= tol}, reverse=True)
    for level in levels:
        snapped = _snap_at(E, level)
        if snapped is not None and snapped[1]:
            return snapped
    return E, 0


def snap_axis(axis: Any, tol: float) -> tuple[tuple[float, float, float], int]:
    """``(axis', n)``: the unit 3-vector ``axis`` with entries within ``tol`` of 0 made 0, then
    normalised again, and the number of entries snapped."""
    a = np.asarray(axis, dtype=float)
    zero = (np.abs(a) <= tol) & (a != 0)
    if not zero.any():
        return tuple(float(c) for c in a), 0  # type: ignore[return-value]
    a = np.where(zero, 0.0, a)
    a = a / float(np.linalg.norm(a))
    return tuple(float(c) for c in a), int(zero.sum())  # type: ignore[return-value]


class _Tally:
    """The largest change seen, where, and the number of entries snapped."""

    def __init__(self) -> None:
        self.largest, self.entries = 0.0, 0
        self.where: str | None = None

    def add(self, before: np.ndarray, after: np.ndarray, n: int, label: str, index: bool) -> None:
        self.entries += n
        d = np.abs(np.asarray(after, float) - np.asarray(before, float))
        k = int(np.argmax(d))
        if d.flat[k] > self.largest:
            self.largest = float(d.flat[k])
            at = np.unravel_index(k, d.shape)
            self.where = f"{label}[{', '.join(map(str, at))}]" if index else label


def snap_model(model: Model, tol: Any) -> Model:
    """``model`` with its rotation entries and joint axes within ``tol`` of 0, +1, -1 made exact
    (see the module docstring), carrying a :class:`SnapReport` as ``model.snap_report``.

    ``tol``: see :func:`check_snap_tolerance` (``None`` or 0: ``model`` itself is returned
    unchanged). A symbolic model is returned unchanged. The model is rebuilt with the same
    fields otherwise, so it passes the constructor's checks again."""
    from .joints import AxisJoint
    from .spatial import Transform

    tol = check_snap_tolerance(tol)
    if tol == 0.0 or model.is_symbolic:
        return model
    tally = _Tally()
    Xtree = []
    for name, X in zip(model.names, model.Xtree):
        E, n = snap_rotation(X.E, tol)
        if n:
            tally.add(X.E, E, n, f"Xtree {name!r} E", True)
            X = Transform(E, X.r)
        Xtree.append(X)
    frames = {}
    for fname, fr in model.frames.items():
        E, n = snap_rotation(fr.X.E, tol)
        if n:
            tally.add(fr.X.E, E, n, f"frame {fname!r} E", True)
            fr = type(fr)(fr.body, Transform(E, fr.X.r), fname)   # a Frame (model.py)
        frames[fname] = fr
    joints = []
    for jname, j in zip(model.joint_names, model.joints):
        if isinstance(j, AxisJoint) and not isinstance(j.axis_spec, str):
            a, n = snap_axis(j.axis, tol)
            if n:
                tally.add(np.array(j.axis), np.array(a), n, f"joint {jname!r} axis", True)
                j = j.with_axis(a)
        joints.append(j)
    report = SnapReport(tol, tally.largest, tally.entries, tally.where)
    if tally.entries:
        fields = model._fields()
        fields.update(Xtree=Xtree, frames=frames, joints=joints)
        new = type(model).__new__(type(model))   # snapping is below model.py: no import of it
        new._setup(**fields)
        log.info("model %r: %s", model.name, report)
    else:
        new = copy.copy(model)  # the same constants; only the report differs
    new._set(snap_report=report)
    return new
