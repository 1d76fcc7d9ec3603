"""Rigid-body tree model.

Bodies are numbered 0..N-1 with parents before children; ``parents[i] == -1`` means body i hangs
from the world (fixed base). Paper indices are 1-based with 0 the base: body i here is body i+1
there. Each body i carries

* ``joints[i]``: its joint to the parent (see :mod:`symdyn.joints`), named ``joint_names[i]``,
* ``Xtree[i]``: the constant transform from the parent body frame to joint i's predecessor frame,
  so that ``Xup[i] = XJ(q_i) Xtree[i]`` maps parent coordinates to body i coordinates,
* ``I[i]``: its 6x6 spatial inertia in body coordinates (from mass, CoM and inertia about the CoM).

Constants are floats (read-only NumPy arrays) or, for models with symbolic parameters, SymPy
expressions (``ImmutableMatrix``). Derived once: ``nq``, ``nv``, ``q_idx``/``v_idx`` (index
ranges), ``children``, ``ancestors`` (path from a body to the root), ``subtree``, ``depth`` and
``d`` (tree depth).

A :class:`Model` is immutable: every field is set at construction (sequences are tuples, arrays
read-only) and assigning an attribute raises ``AttributeError``. Variants come from
:meth:`Model.replace` (``name``, ``gravity``, ``Xtree``, ``inertias``, ``joints``,
``joint_names`` and the actuation data ``limits``, ``armature``, ``damping``, ``friction``,
``mimic``), :meth:`Model.subs` (numbers for a symbolic model's symbols) and
:meth:`reduced_model` (locked joints, :mod:`symdyn.reduce`); all validate the result with the
same checks as the constructor. Per-backend constants come from
:meth:`Model.constants` as a :class:`ModelConstants` named tuple, computed once per backend.

Sizes are limited to :data:`MAX_BODIES` bodies (override with ``max_bodies=`` or the environment
variable ``SYMDYN_MAX_BODIES``) so that a typo such as ``serial_chain(1_000_000_000)`` fails at once
instead of exhausting memory.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from . import spatial
from .backends import get_backend
from .joints import Fixed, Joint
from .snapping import SNAP_TOLERANCE
from .spatial import Transform
from .types import Array, Backend, Seed

__all__ = ["Body", "Frame", "Limits", "MAX_BODIES", "Mimic", "Model", "ModelConstants", "ModelError",
           "ROTATION_TOL", "UnsupportedParameterError", "check_inertia", "check_size", "max_bodies_limit"]

#: Largest magnitude of a model constant (masses, lengths, inertias, gravity, and the spatial
#: inertias and tree transforms derived from them). The algorithms multiply up to three constants
#: (m c c^T), so larger values would overflow double precision (1.8e308) and give inf or NaN.
MAX_MAGNITUDE = 1e100

#: Default largest number of bodies a model (or a URDF file's links) may have; override per call
#: with ``max_bodies=`` or for the process with the environment variable ``SYMDYN_MAX_BODIES``.
MAX_BODIES = 10_000


class ModelError(ValueError):
    """An invalid model: bad topology, non-physical inertia, non-finite constants.

    ``body`` (the body's name), ``problem`` (the message without the body), ``merged`` (names of
    fixed bodies merged into it) and ``kind`` (``"inertia"``: the inertia policy; ``"value"``: a
    NaN, inf or too large constant) are set when the error concerns one body, so that loaders can
    restate it in their own terms."""

    def __init__(self, message: str, *, body: str | None = None, problem: str | None = None,
                 merged: Sequence[str] = (), kind: str | None = None):
        super().__init__(message)
        self.body, self.problem, self.merged, self.kind = body, problem, tuple(merged), kind


class UnsupportedParameterError(ModelError, TypeError):
    """A model parameter of an unsupported kind (e.g. a CasADi SX/MX symbol)."""


def max_bodies_limit(max_bodies: int | None = None) -> int:
    """The body-count limit in force: ``max_bodies`` if given, else the environment variable
    ``SYMDYN_MAX_BODIES``, else :data:`MAX_BODIES`."""
    if max_bodies is not None:
        if isinstance(max_bodies, bool) or not isinstance(max_bodies, (int, np.integer)) or max_bodies < 1:
            raise ValueError(f"max_bodies must be a positive integer, got {max_bodies!r}")
        return int(max_bodies)
    env = os.environ.get("SYMDYN_MAX_BODIES")
    if env is not None and env.strip():
        try:
            v = int(env)
        except ValueError:
            v = 0
        if v < 1:
            raise ValueError(f"the environment variable SYMDYN_MAX_BODIES must be a positive integer, "
                             f"got {env!r}")
        return v
    return MAX_BODIES


def check_size(n: int, what: str = "model", max_bodies: int | None = None) -> None:
    """Refuse ``n`` bodies (before anything is allocated) when ``n`` exceeds the limit of
    :func:`max_bodies_limit`; the error says how to raise the limit."""
    limit = max_bodies_limit(max_bodies)
    if n > limit:
        raise ModelError(f"{what}: {n} bodies requested, more than the limit of {limit} bodies; "
                         f"pass max_bodies={n} (or larger) or set the environment variable "
                         f"SYMDYN_MAX_BODIES to raise it (default symdyn.model.MAX_BODIES = {MAX_BODIES})")


@dataclass(frozen=True)
class Body:
    """One body of a model description, before fixed joints are merged.

    ``parent`` is the parent body's name (None: attached to the world). ``X_tree`` is
    ``(E, r)``: rotation from parent to joint frame coordinates and joint origin in parent
    coordinates (see :class:`~symdyn.spatial.Transform`). ``com`` is in body coordinates and
    ``inertia`` is the 3x3 rotational inertia about the CoM in body coordinates.
    ``joint_name`` names the joint to the parent (default ``f"{name}_joint"``, the name
    :func:`symdyn.interop.pinocchio.to_pinocchio` gives it; URDF import uses the file's names).
    A fixed body's ``joint_name``, when given, becomes a joint frame of the model
    (:attr:`Model.fixed_joints`: the joint's frame is the body's frame, as in URDF); without
    one the fixed joint has no name.

    Parameters are numbers (floats, ints, NumPy arrays) or SymPy expressions (a symbolic model,
    for closed forms on the sympy backend). CasADi SX/MX symbols are refused.
    """

    name: str
    parent: str | None
    joint: Joint
    mass: Any = 1.0
    com: Any = (0.0, 0.0, 0.0)
    inertia: Any = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    X_tree: Transform | None = None
    joint_name: str | None = None


def is_sympy(x) -> bool:
    """Whether ``x`` is a SymPy object (a number, expression or matrix)."""
    return type(x).__module__.split(".")[0] == "sympy"


def _has_symbols(x) -> bool:
    if is_sympy(x):
        return bool(getattr(x, "free_symbols", False))
    if isinstance(x, (list, tuple)):
        return any(_has_symbols(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return any(_has_symbols(e) for e in x.ravel())
    return False


def _casadi_symbolic(x) -> str | None:
    """The CasADi type name if ``x`` is (or holds) a CasADi SX/MX expression, else None."""
    t = type(x)
    if t.__module__.split(".")[0] == "casadi" and t.__name__ in ("SX", "MX"):
        return t.__name__
    if isinstance(x, (list, tuple)):
        for e in x:
            k = _casadi_symbolic(e)
            if k:
                return k
    if isinstance(x, np.ndarray) and x.dtype == object:
        for e in x.ravel():
            k = _casadi_symbolic(e)
            if k:
                return k
    return None


def _refuse_casadi(x, what: str) -> None:
    kind = _casadi_symbolic(x)
    if kind:
        raise UnsupportedParameterError(
            f"{what} is a CasADi {kind} expression: model parameters must be numbers (floats, ints, "
            "NumPy arrays) or SymPy expressions (symbolic models for closed forms on the sympy "
            "backend); CasADi-symbolic parameters are not supported. For dynamics with CasADi "
            "parameters use the regressors (linear in the inertial parameters) or compiled "
            "functions that take them as an input: symdyn.codegen.build(model, ..., "
            "parameters='inertial')")


def freeze(x):
    """A read-only NumPy array, or an ImmutableMatrix for SymPy values."""
    if isinstance(x, np.ndarray):
        x.flags.writeable = False
        return x
    if is_sympy(x) and hasattr(x, "shape"):
        import sympy as sp

        return sp.ImmutableMatrix(x)
    return x


def _value_error(message: str, what: str, body: str | None) -> ModelError:
    prefix = f"body {body!r} "
    problem = message[len(prefix):] if body is not None and message.startswith(prefix) else None
    return ModelError(message, body=body if problem else None, problem=problem, kind="value")


def checked_constant(x, shape, what, symbolic, body: str | None = None):
    """Constant as a read-only float array, or a SymPy ImmutableMatrix when the model is symbolic.
    Refuses NaN, inf and magnitudes above :data:`MAX_MAGNITUDE` (``body``: the body it belongs
    to, recorded in the error)."""
    _refuse_casadi(x, what)
    if symbolic:
        import sympy as sp

        try:
            m = sp.Matrix(x) if not isinstance(x, sp.MatrixBase) else x
        except (TypeError, ValueError) as exc:
            raise ModelError(f"{what} must be numbers or SymPy expressions of shape {shape}") from exc
        if len(shape) == 1:
            m = m.reshape(shape[0], 1) if m.shape != (shape[0], 1) and len(m) == shape[0] else m
        if m.shape != (shape if len(shape) == 2 else (shape[0], 1)):
            raise ModelError(f"{what} must have shape {shape}, got {m.shape}")
        for e in m:
            if sp.sympify(e).has(sp.nan, sp.zoo, sp.oo, -sp.oo):
                raise ModelError(f"{what} contains NaN or inf")
        return sp.ImmutableMatrix(get_backend("sympy").const(m))
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} must be numbers of shape {shape}") from exc
    if arr.shape != shape:
        raise ModelError(f"{what} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise _value_error(f"{what} contains NaN or inf (or values that overflow double precision)",
                           what, body)
    big = float(np.abs(arr).max()) if arr.size else 0.0
    if big > MAX_MAGNITUDE:
        raise _value_error(f"{what} has an entry of magnitude {big:.3g}, above "
                           f"symdyn.model.MAX_MAGNITUDE = {MAX_MAGNITUDE:g} (products of such values "
                           "overflow double precision in the dynamics)", what, body)
    return freeze(arr)


def check_inertia(mass, Ic, what: str) -> None:
    """Physical consistency of (mass, rotational inertia about the CoM): mass > 0, Ic symmetric
    positive definite and satisfying the triangle inequalities of its principal moments.
    Raises :class:`ModelError` starting with ``what``."""
    problem = _strict_problem(mass, Ic)
    if problem:
        raise ModelError(f"{what}: {problem}", problem=problem)


def _strict_problem(mass, Ic) -> str | None:
    if not mass > 0:
        return f"mass must be positive, got {mass}"
    Ic = np.asarray(Ic, dtype=float)
    scale = max(1.0, float(np.abs(Ic).max()))
    if not np.allclose(Ic, Ic.T, atol=1e-9 * scale):
        return "rotational inertia is not symmetric"
    ev = np.linalg.eigvalsh(Ic / 2 + Ic.T / 2)
    if ev[0] <= 0:
        return f"rotational inertia is not positive definite (principal moments {ev.tolist()})"
    if ev[0] + ev[1] < ev[2] * (1 - 1e-9) - 1e-12:
        return (f"principal moments {ev.tolist()} violate the triangle inequality "
                "(no rigid body has this inertia)")
    return None


def physical_inertia_problem(mass: float, Ic, scale: float | None = None) -> str | None:
    """Why (mass, Ic about the CoM) is not a rigid body's inertia, or None if it is one.

    Accepts the physical limits point mass (Ic = 0) and thin rod (one zero principal moment):
    mass > 0, Ic symmetric positive semidefinite with principal moments satisfying the triangle
    inequalities, to a tolerance of 1e-9 ``scale`` (default: the largest moment).
    """
    Ic = np.asarray(Ic, dtype=float)
    if not mass > 0:
        return f"mass must be positive, got {mass}"
    ev = np.linalg.eigvalsh(Ic / 2 + Ic.T / 2)
    tol = 1e-9 * (scale if scale is not None else max(abs(ev[-1]), 1e-300))
    if not np.allclose(Ic, Ic.T, rtol=0, atol=tol):
        return "rotational inertia is not symmetric"
    if ev[0] < -tol:
        return f"rotational inertia has a negative principal moment (moments {ev.tolist()})"
    if ev[0] + ev[1] < ev[2] - tol:
        return (f"principal moments {ev.tolist()} violate the triangle inequality "
                "(no rigid body has this inertia)")
    return None


def mass_com_inertia(I6) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, CoM, rotational inertia about the CoM) of a numeric 6x6 spatial inertia."""
    I6 = np.asarray(I6, dtype=float)
    m = float(I6[3, 3])
    if m == 0:
        return 0.0, np.zeros(3), I6[:3, :3].copy()
    c = np.array([I6[2, 4], I6[0, 5], I6[1, 3]]) / m  # m S(c) block
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    return m, c, I6[:3, :3] - m * C @ C.T


#: Largest deviation ``max |E E^T - I|`` accepted for a frame rotation (:class:`Frame`).
ROTATION_TOL = 1e-6


def _frame_label(name: str | None, body: Any) -> str:
    return f"frame {name!r}" if name is not None else f"Frame(body={body!r})"


def _rotation_problem(E: Any) -> str | None:
    """Why the numeric 3x3 ``E`` is not a proper rotation (orthonormal, det = +1), or None."""
    E = np.asarray(E, dtype=float)
    err = float(np.abs(E @ E.T - np.eye(3)).max())
    if err > ROTATION_TOL:
        return (f"X.E is not a rotation matrix: max |E E^T - I| = {err:.3g} (above "
                f"symdyn.model.ROTATION_TOL = {ROTATION_TOL:g}); E must be orthonormal")
    if np.linalg.det(E) < 0:
        return "X.E is a reflection (det(E) = -1), not a rotation: a proper rotation has det = +1"
    return None


def _check_frame(name: str | None, body: Any, X: Any) -> None:
    """Validate a frame's body index and placement (see :class:`Frame`)."""
    label = _frame_label(name, body)
    if isinstance(body, bool) or not isinstance(body, (int, np.integer)) or body < -1:
        raise ValueError(f"{label}: body must be a body index >= 0 or -1 (the world), got {body!r}")
    if not (isinstance(X, tuple) and len(X) == 2):
        raise ValueError(f"{label}: X must be a Transform(E, r) (rotation body -> frame "
                         f"coordinates, origin in body coordinates), got {type(X).__name__}")
    kind = _casadi_symbolic(list(X))
    if kind:
        raise UnsupportedParameterError(
            f"{label}: X is a CasADi {kind} expression; frame placements must be numbers or SymPy "
            "expressions, as model parameters are")
    parts = []
    for what, x, shape in (("X.E", X[0], (3, 3)), ("X.r", X[1], (3,))):
        if is_sympy(x) or _has_symbols(x):
            import sympy as sp

            try:
                m = sp.Matrix(x)
            except (TypeError, ValueError):
                raise ValueError(f"{label}: {what} must be numbers or SymPy expressions of shape "
                                 f"{shape}") from None
            if (m.shape != shape) if len(shape) == 2 else (len(m) != 3 or 1 not in m.shape):
                raise ValueError(f"{label}: {what} must have shape {shape}, got {m.shape}")
            if any(sp.sympify(e).has(sp.nan, sp.zoo, sp.oo, -sp.oo) for e in m):
                raise ValueError(f"{label}: {what} contains NaN or inf")
            parts.append(None if m.free_symbols else np.array(m.evalf(), dtype=float).reshape(shape))
            continue
        try:
            arr = np.array(x, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{label}: {what} must be numbers of shape {shape}, got {x!r}") from None
        if arr.shape != shape and not (len(shape) == 1 and arr.size == 3 and arr.ndim == 2):
            raise ValueError(f"{label}: {what} must have shape {shape}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{label}: {what} contains NaN or inf")
        if arr.size and float(np.abs(arr).max()) > MAX_MAGNITUDE:
            raise ValueError(f"{label}: {what} has an entry above symdyn.model.MAX_MAGNITUDE = "
                             f"{MAX_MAGNITUDE:g} in magnitude")
        parts.append(arr)
    if parts[0] is not None:  # a symbolic E is taken as given
        problem = _rotation_problem(parts[0])
        if problem:
            raise ValueError(f"{label}: {problem}")


@dataclass(frozen=True)
class Frame:
    """A frame rigidly attached to body ``body`` (``body == -1``: the world, e.g. a fixed root
    link), placed by ``X = Transform(E, r)``: ``E`` rotates body coordinates into frame
    coordinates and ``r`` is the frame origin in body coordinates (the convention of
    :class:`~symdyn.spatial.Transform`; Pinocchio's placement is ``SE3(E^T, r)``).

    ``name`` (optional, not part of equality) is the name the frame has in a model; error messages
    use it. The frames of a model are :attr:`Model.frames` (links) and the joint frames (see
    :func:`symdyn.algorithms.frames.joint_frames`).

    Validated at construction (``ValueError`` naming the frame and the problem): ``body`` an
    integer >= -1, ``E`` 3x3 and ``r`` 3 numbers, finite and at most
    :data:`MAX_MAGNITUDE`, and ``E`` a proper rotation (``max |E E^T - I| <=`` :data:`ROTATION_TOL`,
    ``det E = +1``). SymPy entries are accepted, as for model parameters: an ``E`` with free
    symbols is taken as given (it cannot be checked), NaN/inf are refused. CasADi SX/MX
    placements are refused (:class:`UnsupportedParameterError`).
    """

    body: int
    X: Transform
    name: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check_frame(self.name, self.body, self.X)

    def __eq__(self, other: object) -> bool:
        """The same body and exactly equal placement entries (whatever their container: NumPy
        arrays, nested tuples, SymPy matrices); the name is not compared."""
        if not isinstance(other, Frame):
            return NotImplemented
        if int(self.body) != int(other.body):
            return False
        return all(_value(_entry(self.X.E, i, k)) == _value(_entry(other.X.E, i, k))
                   for i in range(3) for k in range(3)) \
            and all(_value(_entry(self.X.r, k)) == _value(_entry(other.X.r, k)) for k in range(3))

    def __hash__(self) -> int:
        return hash(int(self.body))


def _value(e: Any) -> Any:
    """A float for numbers (SymPy numbers included), the expression itself otherwise."""
    try:
        return float(e)
    except (TypeError, ValueError):
        return e


def _entry(x: Any, a: int, b: int | None = None) -> Any:
    """Entry ``[a]`` or ``[a, b]`` of an array, SymPy matrix or nested sequence (a 3-vector may be
    a column)."""
    if b is None:
        arr = x if is_sympy(x) else np.asarray(x, dtype=object).reshape(-1)
        return arr[a]
    try:
        return x[a, b]
    except (TypeError, IndexError):
        return x[a][b]


class _ReadOnlyDict(dict):
    """A dict that refuses changes (picklable, unlike ``types.MappingProxyType``)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this mapping of the model (frames, fixed_joints, mimic) is read-only (the "
                        "Model is immutable; use model.replace(...) for a variant)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self):
        return (_ReadOnlyDict, (dict(self),))


class ModelConstants(NamedTuple):
    """A model's constants in one backend's native types (:meth:`Model.constants`).

    ``Xtree``: per body, the tree transform ``Transform(E, r)`` (``r`` a 3-vector);
    ``I``: per body, the 6x6 spatial inertia in body coordinates;
    ``a_grav``: the 6-vector ``[0; -g]``, the base acceleration that produces gravity;
    ``inertia_params``: per body, ``(m, c, Ic)``: mass, CoM (3-vector, body coordinates) and the
    rotational inertia about the CoM, read back from ``I`` (a massless body gives ``c = 0`` and
    ``Ic`` = the rotational block of ``I``);
    ``armature``: per body, ``None`` (no armature on its joint: nothing is added, so expressions
    and graphs are those of a model without armature) or the nv_i x nv_i diagonal matrix of its
    joint's armature, added to M's diagonal block by crba, rnea, aba and coriolis_matrix."""

    Xtree: tuple
    I: tuple
    a_grav: Any
    inertia_params: tuple
    armature: tuple = ()


class Limits(NamedTuple):
    """Joint limits (``model.limits``), read-only float arrays: ``lower``, ``upper`` (length nq:
    position bounds per configuration entry, ``-inf``/``+inf`` where unlimited: continuous
    joints, floating bases, quaternions), ``velocity`` and ``effort`` (length nv: bounds on
    ``|qd|`` and ``|tau|``, ``+inf`` where unknown). URDF ``<limit lower upper velocity effort>``."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class Mimic(NamedTuple):
    """A mimic relation (``model.mimic[joint]``): ``q_joint = multiplier * q_master + offset``
    (URDF ``<mimic joint=master multiplier offset>``; both joints have one coordinate)."""

    master: str
    multiplier: float = 1.0
    offset: float = 0.0


#: Actuation fields (per joint; see :meth:`Model.replace`).
ACTUATION = ("limits", "armature", "damping", "friction", "mimic")

#: Fields that :meth:`Model.replace` accepts.
REPLACEABLE = ("name", "gravity", "Xtree", "inertias", "joints", "joint_names") + ACTUATION


class Model:
    """A rigid-body tree; see the module docstring for conventions. Immutable after construction.

    Fields: ``name``, ``gravity`` (3-vector), ``names``, ``parents``, ``joints``, ``joint_names``,
    ``Xtree``, ``I`` (tuples with one entry per moving body), ``body_params`` (per body the
    ``(mass, com, Ic)`` it was given, or None where fixed bodies were merged into it), ``frames``
    (read-only mapping name -> :class:`Frame`, every body given, fixed ones included: the link
    frames), ``fixed_joints`` (read-only mapping joint name -> child link name, a key of
    ``frames``: the named joints that do not move, fixed joints merged away and joints locked by
    :meth:`reduced`; the joint's frame is its child link's frame, as for Pinocchio's FIXED_JOINT
    frames; see :func:`symdyn.algorithms.frames.resolve_frame` for how names resolve),
    ``is_symbolic``, ``check_inertias``/``allow_massless`` (the inertia policy that
    :meth:`replace` and :meth:`subs` re-apply), and the derived topology (``N``, ``nq``, ``nv``,
    ``q_idx``, ``v_idx``, ``children``, ``ancestors``, ``subtree``, ``depth``, ``d``,
    ``is_floating``). Bodies that are all fixed make a model with ``N = nq = nv = 0`` (as
    Pinocchio builds a URDF of fixed joints): each body is a frame on the world, and ``crba``
    is 0 x 0, ``rnea`` and ``aba`` are empty (on every backend).

    Actuation data (per joint, kept by :meth:`replace`, :meth:`subs` and :meth:`reduced`):
    ``limits`` (:class:`Limits`: ``lower``/``upper`` of length nq, ``velocity``/``effort`` of
    length nv; infinite where unlimited), ``armature``, ``damping`` (viscous, torque per unit
    speed) and ``friction`` (Coulomb, a torque) as read-only float arrays of length nv (default
    0), and ``mimic`` (read-only mapping joint name -> :class:`Mimic`).

    Armature convention: the armature (rotor inertia reflected to the joint, ``I_rotor * ratio^2``)
    is part of the model and every algorithm includes it, as Pinocchio does: ``crba`` returns
    ``M + diag(armature)``, ``rnea`` adds ``armature * qdd``, ``aba`` and ``aba_derivatives``
    invert the modified M, ``coriolis_matrix`` returns the modified M (C and Mdot do not change).
    Switch it off with ``model.replace(armature=0)``. Damping and friction are not added by the
    algorithms: :func:`symdyn.friction_torque` gives that term.
    """

    # Declared fields (set once by _setup/_derive through object.__setattr__; read-only after).
    name: str
    gravity: Any
    names: tuple[str, ...]
    parents: tuple[int, ...]
    joints: tuple[Joint, ...]
    joint_names: tuple[str, ...]
    Xtree: tuple[Transform, ...]
    I: tuple[Any, ...]
    body_params: tuple[tuple[Any, Any, Any] | None, ...]
    frames: dict[str, Frame]
    fixed_joints: dict[str, str]
    is_symbolic: bool
    check_inertias: bool | str
    allow_massless: bool
    _constants_cache: dict[str, ModelConstants]
    N: int
    nq: int
    nv: int
    q_idx: tuple[tuple[int, int], ...]
    v_idx: tuple[tuple[int, int], ...]
    children: tuple[tuple[int, ...], ...]
    ancestors: tuple[tuple[int, ...], ...]
    subtree: tuple[tuple[int, ...], ...]
    depth: tuple[int, ...]
    d: int
    is_floating: bool
    limits: Limits
    armature: np.ndarray
    damping: np.ndarray
    friction: np.ndarray
    mimic: dict[str, Mimic]
    snap_report: Any

    def __init__(self, bodies: Sequence[Body], gravity: Array = (0.0, 0.0, -9.81), name: str = "model",
                 check_inertias: bool | str = True, allow_massless: bool = False,
                 max_bodies: int | None = None, **actuation: Any) -> None:
        """``check_inertias``: ``True`` checks each body (mass > 0, rotational inertia positive
        definite with the triangle inequalities); ``"semidefinite"`` checks each moving body after
        fixed bodies are merged into it, accepting point masses and thin rods and exactly
        massless bodies with mass below them (the URDF policy); ``False`` skips the inertia
        check (needed for symbolic parameters; mass must still be > 0). ``allow_massless=True``
        accepts bodies of mass exactly 0 (massless frames and links, as URDF files contain; their
        inertia is taken as given) when ``check_inertias`` is not True; the caller then answers
        for a regular mass matrix. ``max_bodies``: see :func:`check_size`. Keyword arguments
        ``limits``, ``armature``, ``damping``, ``friction``, ``mimic``: the actuation data, in the
        forms :meth:`replace` accepts."""
        unknown = sorted(set(actuation) - set(ACTUATION))
        if unknown:
            raise TypeError(f"Model: unknown keyword argument(s) {unknown}; actuation fields: "
                            f"{', '.join(ACTUATION)}")
        try:
            n = len(bodies)
        except TypeError:
            raise ModelError(f"bodies must be a sequence of Body, got {type(bodies).__name__}") from None
        check_size(n, f"model {name!r}", max_bodies)
        if n == 0:
            raise ModelError("a model needs at least one body")
        if not (isinstance(check_inertias, bool) or check_inertias == "semidefinite"):
            raise ValueError(f"check_inertias must be True, False or 'semidefinite', got {check_inertias!r}")
        _refuse_casadi(gravity, "gravity")
        is_symbolic = any(
            _has_symbols(b.mass) or _has_symbols(b.com) or _has_symbols(b.inertia)
            or (b.X_tree is not None and (_has_symbols(b.X_tree.E) or _has_symbols(b.X_tree.r)))
            for b in bodies if isinstance(b, Body)) or _has_symbols(gravity)
        ordered = _topological(bodies)
        fields = _build(ordered, is_symbolic, check_inertias is True, allow_massless)
        self._setup(name=name, gravity=gravity, check_inertias=check_inertias,
                    allow_massless=allow_massless, is_symbolic=is_symbolic, _prechecked=True,
                    actuation=actuation, **fields)

    # -- immutability ----------------------------------------------------------------------------
    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"Model is immutable: cannot set {key!r}; use model.replace(...) for a "
                             f"variant (replaceable fields: {', '.join(REPLACEABLE)})")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"Model is immutable: cannot delete {key!r}; use model.replace(...)")

    def _set(self, **fields: Any) -> None:
        for k, v in fields.items():
            object.__setattr__(self, k, v)

    def _setup(self, *, name, gravity, names, parents, joints, joint_names, Xtree, I, body_params,
               frames, check_inertias, allow_massless, is_symbolic=None,
               _prechecked: bool = False, actuation: dict | None = None,
               fixed_joints: dict | None = None) -> None:
        """Validate, convert and freeze every field, derive the topology and check the inertias
        (shared by the constructor, :meth:`replace` and :meth:`subs`). ``_prechecked``: the
        constructor already applied the strict check to each given body, so only bodies with
        fixed bodies merged into them are checked again."""
        names, parents, joints = tuple(names), tuple(int(p) for p in parents), tuple(joints)
        N = len(names)
        for what, seq in (("joints", joints), ("joint_names", joint_names), ("Xtree", Xtree),
                          ("inertias", I)):
            if len(seq) != N:
                raise ModelError(f"{what} has {len(seq)} entries but the model has {N} bodies")
        for i, j in enumerate(joints):
            if not isinstance(j, Joint) or isinstance(j, Fixed):
                raise ModelError(f"body {names[i]!r}: joint must be a moving symdyn Joint, got {j!r}")
        joint_names = tuple(joint_names)
        for jn in joint_names:
            if not isinstance(jn, str) or not jn:
                raise ModelError(f"joint names must be non-empty strings, got {jn!r}")
        if len(set(joint_names)) != N:
            dup = sorted({jn for jn in joint_names if joint_names.count(jn) > 1})
            raise ModelError(f"duplicate joint names {dup}")
        for i, X in enumerate(Xtree):
            _refuse_casadi(X, f"body {names[i]!r} Xtree")
        if is_symbolic is None:
            is_symbolic = (_has_symbols(gravity) or any(_has_symbols(list(X)) for X in Xtree)
                           or any(_has_symbols(Ii) for Ii in I))
        sym = bool(is_symbolic)
        Xt = []
        for i, X in enumerate(Xtree):
            if not (isinstance(X, tuple) and len(X) == 2):
                raise ModelError(f"body {names[i]!r}: Xtree entries must be Transform(E, r), got "
                                 f"{type(X).__name__}")
            Xt.append(Transform(checked_constant(X[0], (3, 3), f"body {names[i]!r} X_tree rotation", sym, names[i]),
                                checked_constant(X[1], (3,), f"body {names[i]!r} X_tree translation", sym, names[i])))
        Is = tuple(checked_constant(Ii, (6, 6), f"body {names[i]!r} spatial inertia", sym, names[i])
                   for i, Ii in enumerate(I))
        params = tuple(None if p is None else
                       (p[0] if is_sympy(p[0]) else float(p[0]), freeze(p[1]), freeze(p[2]))
                       for p in body_params)
        frames, fixed_joints = _frame_tables(names, joint_names, frames, fixed_joints)
        self._set(name=str(name), is_symbolic=sym,
                  gravity=checked_constant(gravity, (3,), "gravity", sym),
                  names=names, parents=parents, joints=joints, joint_names=joint_names,
                  Xtree=tuple(Xt), I=Is, body_params=params,
                  frames=frames, fixed_joints=fixed_joints, check_inertias=check_inertias,
                  allow_massless=bool(allow_massless), _constants_cache={}, snap_report=None)
        self._derive()
        self._set(**_actuation(self, actuation or {}))
        self._check_inertias(_prechecked)

    # -- construction ---------------------------------------------------------------------------
    def _derive(self) -> None:
        N = len(self.names)
        q_idx, v_idx = [], []
        nq = nv = 0
        for jt in self.joints:
            q_idx.append((nq, nq + jt.nq))
            v_idx.append((nv, nv + jt.nv))
            nq, nv = nq + jt.nq, nv + jt.nv
        children: list[list[int]] = [[] for _ in range(N)]
        for i, p in enumerate(self.parents):
            if p >= 0:
                children[p].append(i)
        ancestors: list[tuple[int, ...]] = []  # ancestors[i] = (i, p(i), p(p(i)), ...)
        for i in range(N):
            chain, j = [], i
            while j >= 0:
                chain.append(j)
                j = self.parents[j]
            ancestors.append(tuple(chain))
        depth = tuple(len(a) for a in ancestors)
        subtree: list[list[int]] = [[] for _ in range(N)]
        for i in range(N):
            for a in ancestors[i]:
                subtree[a].append(i)
        self._set(N=N, q_idx=tuple(q_idx), v_idx=tuple(v_idx), nq=nq, nv=nv,
                  children=tuple(tuple(c) for c in children), ancestors=tuple(ancestors),
                  depth=depth, d=max(depth, default=0), subtree=tuple(tuple(s) for s in subtree),
                  is_floating=N > 0 and self.joints[0].type == "floating" and self.parents[0] == -1)

    def _merged(self, i: int) -> list[str]:
        return [f for f, fr in self.frames.items() if fr.body == i and f != self.names[i]]

    def _check_inertias(self, prechecked: bool = False) -> None:
        """The inertia policy (``check_inertias``, ``allow_massless``) on each moving body after
        fixed bodies are merged (numeric bodies only)."""
        policy = self.check_inertias
        subtree_mass = None
        for i, I6 in enumerate(self.I):
            if self.is_symbolic and _has_symbols(I6):
                continue
            if prechecked and policy is True and self.body_params[i] is not None:
                continue  # checked as given in _build, nothing merged into it
            I6 = np.asarray(I6, dtype=float)
            m, _, Ic = mass_com_inertia(I6)
            if policy is True:
                problem = _strict_problem(m, Ic)
            elif policy == "semidefinite":
                if not np.any(I6):
                    if subtree_mass is None:
                        masses = [float(np.asarray(Ik, dtype=float)[3, 3]) if not _has_symbols(Ik) else 1.0
                                  for Ik in self.I]
                        subtree_mass = [sum(masses[k] for k in self.subtree[j]) for j in range(self.N)]
                    if subtree_mass[i] == 0:
                        problem = (f"joint {self.joint_names[i]!r} moves only massless links, so the "
                                   "mass matrix would be singular")
                    else:
                        problem = None
                else:
                    problem = physical_inertia_problem(m, Ic, scale=float(np.abs(I6[:3, :3]).max()))
            elif m < 0 or (m == 0 and not self.allow_massless):
                problem = f"mass must be positive, got {m}"
            else:
                problem = None
            if problem:
                merged = self._merged(i)
                label = f"body {self.names[i]!r}" + (f" (with fixed bodies {merged} merged)" if merged else "")
                raise ModelError(f"{label}: {problem}", body=self.names[i], problem=problem,
                                 merged=merged, kind="inertia")

    def _fields(self) -> dict:
        return dict(name=self.name, gravity=self.gravity, names=self.names, parents=self.parents,
                    joints=self.joints, joint_names=self.joint_names, Xtree=self.Xtree, I=self.I,
                    body_params=self.body_params, frames=dict(self.frames),
                    fixed_joints=dict(self.fixed_joints),
                    check_inertias=self.check_inertias, allow_massless=self.allow_massless,
                    actuation=self._actuation_fields())

    def _actuation_fields(self) -> dict:
        return dict(limits=self.limits, armature=self.armature, damping=self.damping,
                    friction=self.friction, mimic=dict(self.mimic))

    # -- variants ---------------------------------------------------------------------------------
    def replace(self, **changes: Any) -> "Model":
        """A new, fully validated model with some fields replaced (the original is unchanged).

        Replaceable fields (:data:`REPLACEABLE`): ``name`` (str), ``gravity`` (3-vector),
        ``Xtree`` (N :class:`~symdyn.spatial.Transform`), ``inertias`` (N ``(mass, com, Ic)``
        triples: mass, CoM in body coordinates, rotational inertia about the CoM; they replace
        ``I`` and ``body_params``), ``joints`` (N moving joints) and ``joint_names`` (N unique
        strings). Topology, body names and frames stay. The inertia policy the model was built
        with (``check_inertias``, ``allow_massless``) is applied again; a violation raises
        :class:`ModelError` naming the body.

        Actuation fields (:data:`ACTUATION`): ``armature``, ``damping``, ``friction`` each a
        number (every speed), a dict joint name -> number (or nv_i numbers; joints not named
        keep their values) or nv numbers, all >= 0 and finite; ``limits`` a :class:`Limits`, a dict
        with some of ``lower``, ``upper`` (nq numbers each), ``velocity``, ``effort`` (nv
        numbers each; numbers >= 0, ``inf`` allowed) whose missing entries keep their
        values, or a dict joint name -> ``(lower, upper, velocity, effort)`` (the other
        joints keep theirs); ``mimic`` a dict joint name -> :class:`Mimic` or ``(master, multiplier,
        offset)``. When ``joints`` change, a joint whose nq/nv change gets default actuation data.
        """
        unknown = sorted(set(changes) - set(REPLACEABLE))
        if unknown:
            raise TypeError(f"Model.replace: unknown field(s) {unknown}; replaceable fields: "
                            f"{', '.join(REPLACEABLE)}")
        fields = self._fields()
        act = fields["actuation"]
        given = {key: changes.pop(key) for key in ACTUATION if key in changes}
        if "joints" in changes and changes["joints"] is not None:
            # the current data in the new joints' layout (defaults where a joint's sizes change);
            # values given now are in the new layout, dicts complete that data
            act.update(_actuation_for_joints(self, changes["joints"], act))
        for key, value in given.items():
            act[key] = _Given(value, act[key]) if isinstance(value, dict) and key != "mimic" else value
        if "joint_names" in changes and "mimic" not in changes and act["mimic"]:
            try:
                rename = dict(zip(self.joint_names, changes["joint_names"]))
                act["mimic"] = {rename[k]: Mimic(rename[m.master], m.multiplier, m.offset)
                                for k, m in act["mimic"].items()}
            except (TypeError, KeyError):
                pass  # a malformed joint_names is reported by _setup
        if "inertias" in changes:
            fields["I"], fields["body_params"] = self._inertias(changes.pop("inertias"))
        for key in ("Xtree", "joints", "joint_names"):
            if key in changes:
                try:
                    changes[key] = tuple(changes[key])
                except TypeError:
                    raise ModelError(f"Model.replace: {key} must be a sequence of {self.N} entries") from None
        fields.update(changes)
        new = Model.__new__(Model)
        new._setup(**fields)
        return new

    def _inertias(self, inertias: Iterable) -> tuple[list, list]:
        try:
            triples = list(inertias)
        except TypeError:
            raise ModelError("inertias must be a sequence of (mass, com, Ic) triples") from None
        if len(triples) != self.N:
            raise ModelError(f"inertias has {len(triples)} entries but the model has {self.N} bodies")
        sym = any(_has_symbols(list(t)) if isinstance(t, (tuple, list)) else False for t in triples) \
            or self.is_symbolic
        Bk = get_backend("sympy" if sym else "numpy")
        I, params = [], []
        for i, t in enumerate(triples):
            what = f"body {self.names[i]!r}"
            if not (isinstance(t, (tuple, list)) and len(t) == 3):
                raise ModelError(f"{what}: inertias entries must be (mass, com, Ic) triples")
            mass = _scalar(t[0], f"{what} mass", sym, self.names[i])
            com = checked_constant(t[1], (3,), f"{what} com", sym, self.names[i])
            Ic = checked_constant(t[2], (3, 3), f"{what} inertia", sym, self.names[i])
            if not sym:
                com = com.reshape(3)
            I.append(spatial.mcI(Bk, mass, com if sym else np.array(com), Ic if sym else np.array(Ic)))
            params.append((mass, com, Ic))
        return I, params

    def subs(self, values: dict[Any, Any]) -> "Model":
        """A numeric copy of a symbolic model with ``values`` (symbol -> number) substituted,
        validated like the constructor (NaN/inf, mass, the inertia policy: a symbolic model
        built with the default ``check_inertias=True`` gets the full physical check)."""
        if not self.is_symbolic:
            return self
        import sympy as sp

        def num(M, what):
            M = sp.Matrix(M).subs(values)
            if M.free_symbols:
                raise ModelError(f"model {self.name!r}: no value given for {sorted(map(str, M.free_symbols))}")
            try:
                return np.array(M.evalf(), dtype=float)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"model {self.name!r}: {what} is not a real number after "
                                 f"substitution ({exc})") from None

        fields = self._fields()
        fields["gravity"] = num(self.gravity, "gravity").reshape(3)
        fields["Xtree"] = [Transform(num(X.E, f"body {n!r} X_tree"), num(X.r, f"body {n!r} X_tree").reshape(3))
                           for n, X in zip(self.names, self.Xtree)]
        fields["I"] = [num(Ii, f"body {n!r} inertia") for n, Ii in zip(self.names, self.I)]
        fields["body_params"] = [
            None if p is None else (float(num(sp.Matrix([p[0]]), f"body {n!r} mass")[0, 0]),
                                    num(p[1], f"body {n!r} com").reshape(3), num(p[2], f"body {n!r} inertia"))
            for n, p in zip(self.names, self.body_params)]
        fields["frames"] = {
            n: Frame(fr.body, Transform(num(fr.X.E, f"frame {n!r} X.E"),
                                        num(fr.X.r, f"frame {n!r} X.r").reshape(3)), n)
            if _has_symbols(list(fr.X)) or is_sympy(fr.X.E) or is_sympy(fr.X.r) else fr
            for n, fr in self.frames.items()}
        fields["is_symbolic"] = False
        new = Model.__new__(Model)
        new._setup(**fields)
        return new

    def snapped(self, tol: float | None = SNAP_TOLERANCE) -> "Model":
        """A copy whose rotation entries (tree transforms and frames) and joint-axis entries within
        ``tol`` of 0, +1 or -1 are exact, so that generated graphs drop the products with them;
        URDF angles written to 10-12 digits (``rpy="1.57079632679 0 0"``) leave such entries
        (the file loaders apply it, ``snap=``). The rule, the re-orthonormalisation that keeps
        each rotation proper, and the guarantee (no entry changes by more than ``tol``) are in
        :mod:`symdyn.snapping`. ``tol`` in ``[0, 1e-3]`` (default
        :data:`symdyn.snapping.SNAP_TOLERANCE`); ``None`` or 0 return the model itself.
        The copy's ``snap_report`` (:class:`symdyn.snapping.SnapReport`) gives the largest change
        made; a model not made by ``snapped`` (or made from one by :meth:`replace`, :meth:`subs`,
        :func:`symdyn.reduced_model`) has ``snap_report = None``."""
        from .snapping import snap_model

        return snap_model(self, tol)

    # -- helpers ----------------------------------------------------------------------------------
    def constants(self, B: Backend) -> ModelConstants:
        """The constants in backend ``B``'s values (:class:`ModelConstants`), as the backend
        provides them (``B.model_constants``): the backend modules build them once per backend
        (:meth:`cached_constants`)."""
        return B.model_constants(self)

    def cached_constants(self, B: Backend) -> ModelConstants:
        """The constants built in ``B``'s native types, once per backend and cached inside the
        model."""
        c = self._constants_cache.get(B.name)
        if c is None:
            c = self._constants_cache[B.name] = self._make_constants(B)
        return c

    def _make_constants(self, B) -> ModelConstants:
        def native(x):  # SymPy ImmutableMatrix -> nested lists, so that B.const gives its own type
            return x.tolist() if is_sympy(x) else x

        def vec(x):  # a 3-vector as a flat list: each backend's const makes its own vector
            return B.const([x[k] for k in range(3)])

        arm = tuple(None if not np.any(self.armature[a:b]) else
                    B.const(np.diag(self.armature[a:b]).tolist()) for a, b in self.v_idx)
        Xtree = tuple(Transform(B.const(native(X.E)), vec(X.r)) for X in self.Xtree)
        I = tuple(B.const(native(Ii)) for Ii in self.I)
        a_grav = B.vcat([B.zeros(3), -vec(self.gravity)])
        params = []
        for Ii in I:
            m, I11 = Ii[3, 3], B.rows(B.cols(Ii, 0, 3), 0, 3)
            if B.is_zero(B.vector([m])):  # massless body (URDF frames): rotational inertia only
                params.append((m, B.zeros(3), I11))
                continue
            h = B.vector([Ii[2, 4], Ii[0, 5], Ii[1, 3]])
            H = spatial.skew(B, h)
            params.append((m, h / m, I11 - (H @ H.T) / m))
        return ModelConstants(Xtree, I, a_grav, tuple(params), arm)

    def neutral(self) -> np.ndarray:
        return np.concatenate([np.zeros(0), *(np.asarray(j.neutral(), float) for j in self.joints)])

    def random_q(self, rng: Seed = None) -> np.ndarray:
        """A random configuration: angles in [0, 2 pi) (paper 000 Sec. 5), unit quaternions."""
        rng = np.random.default_rng(rng)
        return np.concatenate([np.zeros(0), *(np.asarray(j.random_q(rng), float)
                                              for j in self.joints)])

    def parameters(self) -> list:
        """The SymPy symbols the model's constants depend on (sorted by name)."""
        if not self.is_symbolic:
            return []
        import sympy as sp

        syms = set()
        for M in [self.gravity, *self.I, *(X.E for X in self.Xtree), *(X.r for X in self.Xtree)]:
            syms |= sp.Matrix(M).free_symbols
        return sorted(syms, key=lambda s: s.name)

    def __repr__(self) -> str:
        kind = ", symbolic" if self.is_symbolic else ""
        return f"<Model {self.name!r}: {self.N} bodies, nq={self.nq}, nv={self.nv}, depth={self.d}{kind}>"

    def summary(self) -> str:
        lines = [repr(self)]
        for i, (n, p, j) in enumerate(zip(self.names, self.parents, self.joints)):
            pn = "world" if p < 0 else self.names[p]
            lines.append(f"  {i:3d} {n:<24} <- {pn:<24} {j!r}")
        if self.snap_report is not None:
            lines.append(f"  {self.snap_report}")
        return "\n".join(lines)

    @classmethod
    def from_parent_array(cls, parents: Sequence[int], joints: Sequence[Joint],
                          Xtree: Sequence[Transform], inertias: Sequence[tuple],
                          gravity: Array = (0.0, 0.0, -9.81), name: str = "model",
                          names: Sequence[str] | None = None, check_inertias: bool = True,
                          joint_names: Sequence[str] | None = None,
                          max_bodies: int | None = None) -> "Model":
        """Build from a parent array (-1 = world, parents before children), joints, tree
        transforms and (mass, com, Ic) triples."""
        N = len(parents)
        check_size(N, f"model {name!r}", max_bodies)
        for what, seq in (("joints", joints), ("Xtree", Xtree), ("inertias", inertias)) + \
                (() if joint_names is None else (("joint_names", joint_names),)):
            if len(seq) != N:
                raise ModelError(f"{what} has {len(seq)} entries but parents has {N}")
        for i, p in enumerate(parents):
            if not isinstance(p, (int, np.integer)) or p < -1 or p >= N:
                raise ModelError(f"parent index {p!r} of body {i} is out of range [-1, {N - 1}]")
            if p >= i:
                raise ModelError(f"body {i} has parent {p}: parents must come before children "
                                 "(a parent index >= its child means a cycle or a wrong order)")
        names = list(names) if names is not None else [f"body{i + 1}" for i in range(N)]
        bodies = [Body(names[i], None if p < 0 else names[p], joints[i], inertias[i][0],
                       inertias[i][1], inertias[i][2], Xtree[i],
                       None if joint_names is None else joint_names[i]) for i, p in enumerate(parents)]
        return cls(bodies, gravity=gravity, name=name, check_inertias=check_inertias,
                   max_bodies=max_bodies)


def _build(ordered: list[Body], sym: bool, check_inertias: bool, allow_massless: bool) -> dict:
    """Merge fixed bodies into their parents; per-body checks with the names the caller gave."""
    Bk = get_backend("sympy" if sym else "numpy")
    eye = Bk.eye(3)
    names: list[str] = []
    parents: list[int] = []
    joints: list[Joint] = []
    jnames: list[str] = []
    Xtree: list[Transform] = []
    I: list[Any] = []
    params: list[tuple[Any, Any, Any] | None] = []
    frames: dict[str, Frame] = {}
    fixed_joints: dict[str, str] = {}  # fixed joint name -> its child body (a frame)
    where: dict[str, tuple[int, Transform | None]] = {}  # body name -> (model body index, X body<-that)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by _const
        for b in ordered:
            what = f"body {b.name!r}"
            if not isinstance(b.joint, Joint):
                raise ModelError(f"{what}: joint must be a symdyn Joint, got {type(b.joint).__name__}")
            _refuse_casadi(b.mass, f"{what} mass")
            mass = b.mass if sym and is_sympy(b.mass) else _scalar(b.mass, f"{what} mass", sym, b.name)
            com = checked_constant(b.com, (3,), f"{what} com", sym, b.name)
            Ic = checked_constant(b.inertia, (3, 3), f"{what} inertia", sym, b.name)
            if check_inertias and not (is_sympy(mass) or _has_symbols(Ic)):
                check_inertia(float(mass), np.array(Ic, dtype=float), what)
            elif not is_sympy(mass) and not (float(mass) > 0 or (allow_massless and float(mass) == 0)):
                raise ModelError(f"{what}: mass must be positive, got {mass}")
            if b.X_tree is not None:
                _refuse_casadi(list(b.X_tree), f"{what} X_tree")
            X = b.X_tree if b.X_tree is not None else Transform(eye, Bk.zeros(3))
            X = Transform(checked_constant(X.E, (3, 3), f"{what} X_tree rotation", sym, b.name),
                          checked_constant(X.r, (3,), f"{what} X_tree translation", sym, b.name))
            if not sym:
                X = Transform(np.array(X.E), np.array(X.r))
                com, Ic = np.array(com), np.array(Ic)
            else:
                import sympy as sp

                X = Transform(sp.Matrix(X.E), sp.Matrix(X.r))
                com, Ic = sp.Matrix(com), sp.Matrix(Ic)
            Ibody = spatial.mcI(Bk, mass, com, Ic)
            if not sym:  # overflow of m S(c) S(c)^T: refused here, naming the body
                checked_constant(Ibody, (6, 6), f"{what} spatial inertia", sym, b.name)
            if b.parent is None:
                parent, Xp = -1, None
            else:
                parent, Xp = where[b.parent]
            if Xp is not None:  # parent was merged into body `parent`: Xtree composes
                X = spatial.compose(Bk, X, Xp)
                if not sym:
                    checked_constant(X.r, (3,), f"{what} X_tree translation (composed with fixed parents)", sym, b.name)
            if isinstance(b.joint, Fixed):
                # merge into the parent (paper-style trees have no fixed joints)
                if parent >= 0:
                    I[parent] = I[parent] + spatial.congruence(Bk, X, Ibody)
                    if not sym:
                        checked_constant(I[parent], (6, 6), f"{what} spatial inertia merged into body "
                               f"{names[parent]!r}", sym, b.name)
                    params[parent] = None
                where[b.name] = (parent, X)
                frames[b.name] = Frame(parent, Transform(freeze(X.E), freeze(X.r)), b.name)
                if b.joint_name is not None:
                    if b.joint_name in fixed_joints:
                        raise ModelError(f"duplicate joint names [{b.joint_name!r}] (fixed joints of "
                                         f"bodies {fixed_joints[b.joint_name]!r} and {b.name!r})")
                    fixed_joints[b.joint_name] = b.name
                continue
            where[b.name] = (len(names), None)
            names.append(b.name)
            parents.append(parent)
            joints.append(b.joint)
            jnames.append(b.joint_name if b.joint_name is not None else f"{b.name}_joint")
            Xtree.append(X)
            I.append(Ibody)
            params.append((mass, com, Ic))
            frames[b.name] = Frame(len(names) - 1, Transform(freeze(Bk.eye(3)), freeze(Bk.zeros(3))),
                                   b.name)
    return dict(names=names, parents=parents, joints=joints, joint_names=jnames, Xtree=Xtree, I=I,
                body_params=params, frames=frames, fixed_joints=fixed_joints)


def _frame_tables(names, joint_names, frames, fixed_joints) -> tuple[_ReadOnlyDict, _ReadOnlyDict]:
    """Validated, read-only ``frames`` (name -> :class:`Frame`, each carrying its name, bodies in
    range) and ``fixed_joints`` (joint name -> the name of its child link, a key of ``frames``;
    no name shared with a moving joint)."""
    N = len(names)
    out: dict[str, Frame] = {}
    for fname, fr in dict(frames).items():
        if not isinstance(fname, str) or not fname:
            raise ModelError(f"frame names must be non-empty strings, got {fname!r}")
        if not isinstance(fr, Frame):
            raise ModelError(f"frame {fname!r} must be a symdyn.model.Frame, got {type(fr).__name__}")
        if not -1 <= int(fr.body) < N:
            raise ModelError(f"frame {fname!r}: body {fr.body} is out of range [-1, {N - 1}]")
        out[fname] = fr if fr.name == fname else Frame(int(fr.body), fr.X, fname)
    fixed: dict[str, str] = {}
    moving = set(joint_names)
    for jn, link in dict(fixed_joints or {}).items():
        if not isinstance(jn, str) or not jn:
            raise ModelError(f"joint names must be non-empty strings, got {jn!r}")
        if jn in moving:
            raise ModelError(f"duplicate joint names [{jn!r}]: a fixed (or locked) joint and a "
                             "moving joint have the same name")
        if link not in out:
            raise ModelError(f"fixed joint {jn!r}: its child link {link!r} is not a frame of the model")
        fixed[jn] = link
    return _ReadOnlyDict(out), _ReadOnlyDict(fixed)


def _scalar(x, what, sym, body: str | None = None):
    _refuse_casadi(x, what)
    if sym and is_sympy(x):
        return x
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} must be a number") from exc
    if not math.isfinite(v):
        raise _value_error(f"{what} is NaN or inf", what, body)
    if abs(v) > MAX_MAGNITUDE:
        raise _value_error(f"{what} is {v:.3g}, above symdyn.model.MAX_MAGNITUDE = {MAX_MAGNITUDE:g} "
                           "(products of such values overflow double precision in the dynamics)",
                           what, body)
    return v


def _topological(bodies: Sequence[Body]) -> list[Body]:
    """Order bodies parents-first (the given order if valid, else depth-first); reject duplicate names, unknown parents and cycles."""
    by_name: dict[str, Body] = {}
    for b in bodies:
        if not isinstance(b, Body):
            raise ModelError(f"expected Body entries, got {type(b).__name__}")
        if b.name in by_name:
            raise ModelError(f"duplicate body name {b.name!r}")
        by_name[b.name] = b
    for b in bodies:
        if b.parent is not None and b.parent not in by_name:
            raise ModelError(f"body {b.name!r} has parent {b.parent!r}, which is not a body of the "
                             "model (dangling parent)")
        if b.parent == b.name:
            raise ModelError(f"body {b.name!r} is its own parent")
    placed: set[str] = set()
    for b in bodies:  # already parents-first: keep the caller's numbering
        if b.parent is not None and b.parent not in placed:
            break
        placed.add(b.name)
    else:
        return list(bodies)
    children: dict[str | None, list[Body]] = {}
    for b in bodies:
        children.setdefault(b.parent, []).append(b)
    ordered, stack = [], list(reversed(children.get(None, [])))
    if not stack:
        raise ModelError("no body is attached to the world (parent None): the tree has no root "
                         "(cyclic or disconnected)")
    while stack:
        b = stack.pop()
        ordered.append(b)
        stack.extend(reversed(children.get(b.name, [])))
    if len(ordered) != len(bodies):
        seen = {b.name for b in ordered}
        lost = [b.name for b in bodies if b.name not in seen]
        raise ModelError(f"bodies {lost} are not connected to the world: their parents form a cycle")
    return ordered


# --- actuation data ---------------------------------------------------------------------------------

def _numbers(x, n: int, what: str, *, nonneg: bool, allow_inf: bool) -> np.ndarray:
    _refuse_casadi(x, what)
    if _has_symbols(x):
        raise ModelError(f"{what} must be numbers (SymPy symbols are not supported here)")
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be numbers, got {x!r}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    arr = arr.reshape(-1) if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.shape != (n,):
        raise ModelError(f"{what} must have {n} entries, got shape {arr.shape}")
    if np.any(np.isnan(arr)) or (not allow_inf and not np.all(np.isfinite(arr))):
        raise ModelError(f"{what} contains NaN" + ("" if allow_inf else " or inf"))
    if nonneg and np.any(arr < 0):
        k = int(np.argmax(arr < 0))
        raise ModelError(f"{what} must be >= 0, got {arr[k]} at index {k}")
    return freeze(arr.copy())


class _Given(NamedTuple):
    """A dict given to :meth:`Model.replace`, completed by ``base`` (the current data)."""

    value: dict
    base: Any


def _per_v(model: "Model", value, what: str, base=None) -> np.ndarray:
    """A per-speed array of length nv from a number, a dict joint name -> value (the other joints
    keep ``base``, default 0), or nv numbers."""
    if isinstance(value, _Given):
        value, base = value
    if value is None:
        return freeze(np.zeros(model.nv))
    if isinstance(value, dict):
        out = np.zeros(model.nv) if base is None else np.array(base, dtype=float)
        for jn, val in value.items():
            if jn not in model.joint_names:
                raise ModelError(f"{what}: {jn!r} is not a joint of model {model.name!r} "
                                 f"(joints: {', '.join(model.joint_names)})")
            i = model.joint_names.index(jn)
            a, b = model.v_idx[i]
            out[a:b] = _numbers(val, b - a, f"{what}[{jn!r}]", nonneg=True, allow_inf=False)
        return freeze(out)
    return _numbers(value, model.nv, what, nonneg=True, allow_inf=False)


def _limits(model: "Model", value, base: Limits | None = None) -> Limits:
    """Validated limits of ``model`` from a :class:`Limits`, a dict of some of its fields or a
    dict joint name -> (lower, upper, velocity, effort); dict forms start from ``base`` (default:
    no limits)."""
    nq, nv = model.nq, model.nv
    if isinstance(value, _Given):
        value, base = value
    if value is None and base is not None:
        value = base
    if value is None:
        value = Limits(np.full(nq, -np.inf), np.full(nq, np.inf), np.full(nv, np.inf),
                       np.full(nv, np.inf))
    elif isinstance(value, dict) and value and all(k in Limits._fields for k in value):
        value = _limits(model, base)._replace(**value)
    elif isinstance(value, dict):  # per joint: name -> (lower, upper, velocity, effort)
        lo, up, vel, eff = (np.array(a, dtype=float) for a in _limits(model, base))
        for jn, val in value.items():
            if jn not in model.joint_names:
                raise ModelError(f"limits: {jn!r} is neither a joint of model {model.name!r} nor "
                                 f"one of {', '.join(Limits._fields)}")
            if not (isinstance(val, tuple) and len(val) == 4):
                raise ModelError(f"limits[{jn!r}] must be (lower, upper, velocity, effort), got {val!r}")
            i = model.joint_names.index(jn)
            (qa, qb), (va, vb) = model.q_idx[i], model.v_idx[i]
            for arr, x, a, b, fld in ((lo, val[0], qa, qb, "lower"), (up, val[1], qa, qb, "upper"),
                                      (vel, val[2], va, vb, "velocity"), (eff, val[3], va, vb, "effort")):
                arr[a:b] = _numbers(x, b - a, f"limits[{jn!r}].{fld}", nonneg=False, allow_inf=True)
        value = Limits(lo, up, vel, eff)
    elif not (isinstance(value, tuple) and len(value) == 4):
        raise ModelError("limits must be a symdyn.model.Limits (lower, upper, velocity, effort) "
                         f"or a dict of some of them, got {type(value).__name__}")
    lower = _numbers(value[0], nq, "limits.lower", nonneg=False, allow_inf=True)
    upper = _numbers(value[1], nq, "limits.upper", nonneg=False, allow_inf=True)
    if np.any(lower > upper):
        k = int(np.argmax(lower > upper))
        i = next(j for j, (a, b) in enumerate(model.q_idx) if a <= k < b)
        raise ModelError(f"limits of joint {model.joint_names[i]!r}: lower {lower[k]} > upper "
                         f"{upper[k]} (q index {k})")
    return Limits(lower, upper,
                  _numbers(value[2], nv, "limits.velocity", nonneg=True, allow_inf=True),
                  _numbers(value[3], nv, "limits.effort", nonneg=True, allow_inf=True))


def _mimic(model: "Model", value) -> _ReadOnlyDict:
    out: dict[str, Mimic] = {}
    if not value:
        return _ReadOnlyDict(out)
    if not isinstance(value, dict):
        raise ModelError(f"mimic must be a dict joint name -> Mimic(master, multiplier, offset), "
                         f"got {type(value).__name__}")
    names = model.joint_names
    for jn, rel in value.items():
        if isinstance(rel, str):
            rel = (rel,)
        try:
            m = Mimic(*rel)
            m = Mimic(str(m.master), float(m.multiplier), float(m.offset))
        except (TypeError, ValueError):
            raise ModelError(f"mimic[{jn!r}] must be (master, multiplier, offset), got {rel!r}") from None
        if jn not in names:
            raise ModelError(f"mimic: {jn!r} is not a joint of model {model.name!r}")
        if m.master not in names:
            raise ModelError(f"mimic joint {jn!r}: its master {m.master!r} is not a joint of model "
                             f"{model.name!r}")
        if m.master == jn:
            raise ModelError(f"mimic joint {jn!r} mimics itself")
        if not (math.isfinite(m.multiplier) and math.isfinite(m.offset)):
            raise ModelError(f"mimic joint {jn!r}: multiplier and offset must be finite, got {m}")
        for k in (jn, m.master):
            j = model.joints[names.index(k)]
            if j.nq != 1 or j.nv != 1:
                raise ModelError(f"mimic joint {jn!r}: joint {k!r} ({j!r}) must have one coordinate "
                                 "(revolute, prismatic or helical)")
        out[jn] = m
    for jn, m in out.items():
        if m.master in out:
            raise ModelError(f"mimic joint {jn!r}: its master {m.master!r} is itself a mimic joint "
                             f"(of {out[m.master].master!r}); give the relation to the independent "
                             "joint directly")
    return _ReadOnlyDict(out)


def _actuation(model: "Model", raw: dict) -> dict:
    """The validated, read-only actuation fields of ``model`` from raw inputs (missing: defaults)."""
    return dict(limits=_limits(model, raw.get("limits")),
                armature=_per_v(model, raw.get("armature"), "armature"),
                damping=_per_v(model, raw.get("damping"), "damping"),
                friction=_per_v(model, raw.get("friction"), "friction"),
                mimic=_mimic(model, raw.get("mimic")))


def _actuation_for_joints(model: "Model", joints, act: dict) -> dict:
    """Actuation data for new ``joints``: kept where a joint keeps its nq and nv, defaults (no
    limits, zeros) for joints whose sizes change; mimic relations of such joints are dropped."""
    try:
        joints = tuple(joints)
    except TypeError:
        return {}
    if len(joints) != model.N or all(
            getattr(j, "nq", None) == o.nq and getattr(j, "nv", None) == o.nv
            for j, o in zip(joints, model.joints)):
        return {}
    lim = act["limits"] if isinstance(act["limits"], Limits) else _limits(model, act["limits"])
    out: dict[str, list[Any]] = {
        k: [] for k in ("lower", "upper", "velocity", "effort", "armature", "damping", "friction")}
    changed = set()
    for i, (j, o) in enumerate(zip(joints, model.joints)):
        (qa, qb), (va, vb) = model.q_idx[i], model.v_idx[i]
        nq, nv = getattr(j, "nq", 0), getattr(j, "nv", 0)
        if nq == o.nq and nv == o.nv:
            out["lower"].append(lim.lower[qa:qb])
            out["upper"].append(lim.upper[qa:qb])
            out["velocity"].append(lim.velocity[va:vb])
            out["effort"].append(lim.effort[va:vb])
            for k in ("armature", "damping", "friction"):
                v = act[k]
                out[k].append(np.broadcast_to(np.asarray(v, float), (model.nv,))[va:vb]
                              if not isinstance(v, dict) else np.zeros(nv))
        else:
            changed.add(model.joint_names[i])
            out["lower"].append(np.full(nq, -np.inf))
            out["upper"].append(np.full(nq, np.inf))
            for k in ("velocity", "effort"):
                out[k].append(np.full(nv, np.inf))
            for k in ("armature", "damping", "friction"):
                out[k].append(np.zeros(nv))
    cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()}
    res: dict[str, Any] = dict(limits=Limits(cat["lower"], cat["upper"], cat["velocity"], cat["effort"]),
               armature=cat["armature"], damping=cat["damping"], friction=cat["friction"])
    res["mimic"] = {k: m for k, m in dict(act["mimic"] or {}).items()
                    if k not in changed and m.master not in changed}
    return res
