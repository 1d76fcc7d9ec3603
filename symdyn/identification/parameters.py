"""Inertial parameters: 10 per body, in Pinocchio's order.

For body i (in body-i coordinates)::

    pi_i = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

where ``c`` is the centre of mass and ``I_..`` are the entries of the rotational inertia about the
BODY FRAME ORIGIN, ``Ibar = Ic + m S(c) S(c)^T`` (``Ic`` about the CoM). This is
``pinocchio.Inertia.toDynamicParameters()`` (checked in ``tests/test_regressors.py``) and the
parametrization in which the spatial inertia ``I = [[Ibar, S(m c)], [S(m c)^T, m 1]]`` -- and so
every dynamics quantity -- is linear. ``inertial_parameters(model)`` stacks the bodies in model
order (``model.names``); fixed links are merged into their parent body, exactly as in ``model.I``.

Armature: ``model.armature`` (nv rotor inertias on the joint speeds) is not a body parameter; with
``armature=True`` :func:`inertial_parameters` appends it (``[pi; model.armature]``, 10 N + nv
entries), the vector of the regressors called with ``armature=True``
(:mod:`symdyn.algorithms.regressors`), and :func:`with_inertial_parameters` reads it back.

Works for numeric models (NumPy float vectors) and symbolic ones (SymPy column matrices), in both
directions: ``with_inertial_parameters(model, sympy.symbols("p0:20"))`` gives a symbolic model
whose dynamics are linear in the symbols.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..algorithms.regressors import PARAMETER_NAMES
from ..model import Model, ModelError, UnsupportedParameterError, is_sympy

__all__ = ["PARAMETER_NAMES", "inertia_from_parameters", "inertial_parameters",
           "parameter_names", "parameters_from_inertia", "parameters_from_spatial",
           "with_inertial_parameters"]


def parameters_from_spatial(I6: Any) -> list:
    """The 10 parameters (a list of scalars) of a 6x6 spatial inertia
    ``[[Ibar, S(h)], [S(h)^T, m 1]]`` (NumPy array or SymPy matrix)."""
    m = I6[3, 3]
    h = (I6[2, 4], I6[0, 5], I6[1, 3])                                    # S(h)[2,1] = h_x, ...
    return [m, *h, I6[0, 0], I6[0, 1], I6[1, 1], I6[0, 2], I6[1, 2], I6[2, 2]]


def parameters_from_inertia(mass: Any, com: Any, Ic: Any) -> list:
    """The 10 parameters of a body of mass ``mass``, CoM ``com`` (3) and rotational inertia
    ``Ic`` (3x3) about the CoM (numbers or SymPy expressions)."""
    c = [com[k] for k in range(3)]
    Ic = [[Ic[r][k] if isinstance(Ic, (list, tuple)) else Ic[r, k] for k in range(3)]
          for r in range(3)]
    cc = sum(x * x for x in c)
    # Ibar = Ic + m (|c|^2 1 - c c^T) = Ic + m S(c) S(c)^T
    Ib = [[Ic[r][k] + mass * ((cc if r == k else 0) - c[r] * c[k]) for k in range(3)]
          for r in range(3)]
    return [mass, mass * c[0], mass * c[1], mass * c[2],
            Ib[0][0], Ib[0][1], Ib[1][1], Ib[0][2], Ib[1][2], Ib[2][2]]


def inertia_from_parameters(p: Sequence[Any]) -> tuple:
    """``(mass, com, Ic)`` (Ic about the CoM) of one body's 10 parameters, as NumPy arrays for
    numbers and SymPy matrices when any entry is a SymPy expression. A zero mass gives ``com = 0``
    and ``Ic = Ibar`` (massless frames; then ``m c`` must be zero too)."""
    p = list(p)
    if len(p) != 10:
        raise ValueError(f"a body has 10 inertial parameters, got {len(p)}")
    h: Any
    m, h, (xx, xy, yy, xz, yz, zz) = p[0], p[1:4], p[4:10]
    Ibar: Any = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    if any(is_sympy(x) for x in p):
        import sympy as sp

        m = sp.sympify(m)
        if m == 0:
            if any(sp.sympify(x) != 0 for x in h):
                raise ValueError("a body with zero mass must have m c = 0")
            return m, sp.zeros(3, 1), sp.Matrix(Ibar)
        c = sp.Matrix(h) / m
        # Ic = Ibar - m S(c) S(c)^T, formed as the model forms I = Ic + m S(c) S(c)^T
        # (spatial.mcI), so that the two terms cancel exactly and I's blocks are the symbols again
        C = sp.Matrix([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        return m, c, sp.Matrix(Ibar) - m * (C @ C.T)
    m = float(m)
    h, Ibar = np.array(h, dtype=float), np.array(Ibar, dtype=float)
    if m == 0:
        if np.any(h):
            raise ValueError("a body with zero mass must have m c = 0")
        return 0.0, np.zeros(3), Ibar
    c = h / m
    return m, c, Ibar - (np.dot(h, h) * np.eye(3) - np.outer(h, h)) / m


def _check_flag(armature: Any) -> bool:
    if armature is True or armature is False or isinstance(armature, np.bool_):
        return bool(armature)
    raise TypeError(f"armature must be True or False, got {armature!r}")


def inertial_parameters(model: Model, *, armature: bool = False) -> Any:
    """The model's inertial parameters: a vector of 10 N entries, body by body in model order,
    each in Pinocchio's order ``[m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` (inertia about the
    body origin). A NumPy float array for numeric models, a SymPy column for symbolic ones.
    ``armature=True`` appends ``model.armature`` (nv entries, velocity order): the parameters of
    the regressors called with ``armature=True``."""
    vals = [x for Ii in model.I for x in parameters_from_spatial(Ii)]
    if _check_flag(armature):
        vals += [float(a) for a in model.armature]
    if model.is_symbolic:
        import sympy as sp

        return sp.Matrix(vals)
    return np.array(vals, dtype=float)


def _entries(model: Model, pi: Any, n_arm: int) -> list:
    """The entries of ``pi`` in order, from any of the accepted layouts -- a vector ``(L,)``, a
    column ``(L, 1)``, a row ``(1, L)`` or, without armature entries, an ``(N, 10)`` array with
    one row per body (``L = 10 N + n_arm``) -- given as a NumPy array, a SymPy matrix or array,
    or (nested) lists and tuples. SymPy numbers become floats when neither the model nor ``pi``
    has symbols, so that a SymPy column of numbers gives the same numeric model as a NumPy
    vector. Other shapes raise ValueError naming the accepted ones; a vector of the wrong length
    is left to the caller's count check."""
    n, L = model.N, 10 * model.N + n_arm
    if is_sympy(pi) and hasattr(pi, "tolist"):        # SymPy matrices and N-dim arrays
        pi = pi.tolist()
    try:
        arr = np.asarray(pi, dtype=object)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"pi must be an array of numbers or SymPy expressions: {exc}") from None
    layouts = f"a vector ({L},), a column ({L}, 1), a row (1, {L})" + (
        "" if n_arm else f" or an (N, 10) = ({n}, 10) array, one row per body")
    if arr.ndim == 0 or arr.ndim > 2 or (arr.ndim == 2 and 1 not in arr.shape
                                          and not (n_arm == 0 and arr.shape == (n, 10))):
        raise ValueError(f"pi must be {layouts} of {model.name!r}, got "
                         + (f"shape {arr.shape}" if arr.ndim else f"a {type(pi).__name__}"))
    vals = list(arr.reshape(-1))
    for k, v in enumerate(vals):
        if isinstance(v, (list, tuple, dict, set, np.ndarray)) or (is_sympy(v)
                                                                    and hasattr(v, "shape")):
            raise ValueError(f"pi must be {layouts} of {model.name!r}: entry {k} is a "
                             f"{type(v).__name__}, not a number or SymPy expression")
    if not model.is_symbolic and not any(getattr(v, "free_symbols", None)
                                         for v in vals if is_sympy(v)):
        for k, v in enumerate(vals):
            if is_sympy(v):
                try:
                    vals[k] = float(v)
                except TypeError:
                    raise ValueError(f"pi entry {k} is not a real number: {v}") from None
    return vals


def with_inertial_parameters(model: Model, pi: Any, *, armature: bool = False) -> Model:
    """A new model equal to ``model`` with the inertial parameters ``pi`` (10 N entries, the
    order of :func:`inertial_parameters`; numbers or SymPy expressions) given as a vector
    ``(10 N,)``, a column ``(10 N, 1)``, a row ``(1, 10 N)`` or an ``(N, 10)`` array with one row
    per body -- a NumPy array, a SymPy matrix or (nested) lists alike; other shapes raise
    ValueError. Built with
    ``model.replace(inertias=...)``, so the model's inertia policy is applied again (with the
    default policy: mass > 0, rotational inertia positive definite with the triangle
    inequalities; a violation raises :class:`symdyn.model.ModelError` naming the body). A body
    that had fixed links merged into it keeps them as part of its parameters (frames are kept).

    ``armature=True``: ``pi`` has 10 N + nv entries, the last nv the new ``model.armature``
    (numbers >= 0, as ``model.replace(armature=...)`` requires); by default the armature is
    kept."""
    with_arm = _check_flag(armature)
    if type(pi).__module__.split(".")[0] == "casadi" or (
            isinstance(pi, (list, tuple)) and any(type(x).__module__.split(".")[0] == "casadi"
                                                  for x in pi)):
        raise UnsupportedParameterError(
            "with_inertial_parameters: pi is a CasADi expression; models hold numbers or SymPy "
            "expressions. For dynamics with CasADi parameters use the regressors, which are "
            "linear in pi: rnea(q, qd, qdd) == joint_torque_regressor(model, q, qd, qdd) @ pi")
    n_arm = model.nv if with_arm else 0
    vals = _entries(model, pi, n_arm)
    if len(vals) != 10 * model.N + n_arm:
        what = (f"10 N + nv = {10 * model.N + n_arm} entries (10 per body of {model.name!r}, then "
                f"its {model.nv} armature values)" if with_arm else
                f"10 N = {10 * model.N} entries (10 per body of {model.name!r})")
        raise ValueError(f"pi must have {what}, got {len(vals)}")
    changes: dict[str, Any] = {}
    if with_arm:
        arm = vals[10 * model.N:]
        vals = vals[:10 * model.N]
        if any(is_sympy(a) for a in arm):
            raise ValueError("with_inertial_parameters: the armature entries must be numbers "
                             "(model.armature is numeric); symbolic ones are not supported")
        try:
            changes["armature"] = np.array(arm, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"with_inertial_parameters: the armature entries must be numbers, "
                             f"got {arm!r}") from None
    triples = []
    for i in range(model.N):
        try:
            triples.append(inertia_from_parameters(vals[10 * i:10 * i + 10]))
        except (TypeError, ValueError) as exc:

            raise ModelError(f"body {model.names[i]!r}: {exc}") from None
    return model.replace(inertias=triples, **changes)


def parameter_names(model: Model, *, armature: bool = False) -> list[str]:
    """Labels ``"<body>.<parameter>"`` of the 10 N entries of :func:`inertial_parameters`; with
    ``armature=True`` followed by the nv armature labels, ``"<joint>.armature"`` for a one-speed
    joint and ``"<joint>.armature[k]"`` for speed k of a multi-speed joint."""
    out = [f"{n}.{p}" for n in model.names for p in PARAMETER_NAMES]
    if _check_flag(armature):
        for name, (a, b) in zip(model.joint_names, model.v_idx):
            out += ([f"{name}.armature"] if b - a == 1 else
                    [f"{name}.armature[{k}]" for k in range(b - a)])
    return out
