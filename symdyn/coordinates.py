"""Changes of generalized coordinates or speeds (paper 000 Sec. 3.3, Remarks 5-6).

With ``qd = A qbar_d`` (A = dq/dqbar, eq. (22), or A = dqd/dnu for generalized speeds) and
``Adot = dA/dt``, the equations of motion M qdd + C qd + g = tau become
``Mbar qbar_dd + Cbar qbar_d + gbar = taubar`` with eqs. (23)-(26). Theorem 1 (eq. (27)): the
Christoffel-consistent C* maps to the Christoffel-consistent Cbar* of the new coordinates; an
admissible C maps to an admissible Cbar (Prop. 3).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from .algorithms.coriolis import coriolis_matrix
from .algorithms.kinematics import forward_kinematics
from .backends import resolve_backend
from .spatial import skew
from .types import Array

if TYPE_CHECKING:
    from .model import Model


def _shape(x, what):
    shape = getattr(x, "shape", None)
    if shape is None:
        try:
            shape = (len(x), len(x[0]))
        except TypeError as exc:
            raise TypeError(f"{what} must be a matrix (array, sympy.Matrix or casadi.SX)") from exc
    if len(shape) != 2:
        raise ValueError(f"{what} must be a 2-D matrix, got shape {tuple(shape)}")
    return tuple(int(s) for s in shape)


def change_coordinates(M: Array, C: Array, g: Array | None, tau: Array | None, A: Array,
                       Adot: Array) -> tuple[Array, Array, Array | None, Array | None]:
    """Transform (M, C, g, tau) to new coordinates/speeds, paper 000 eqs. (23)-(26).

    ``Mbar = A^T M A``, ``Cbar = A^T C A + A^T M Adot``, ``gbar = A^T g``, ``taubar = A^T tau``.
    ``A`` (n x n, invertible) maps new speeds to old ones, ``qd = A qbar_d``; ``Adot`` is its time
    derivative. ``g`` and ``tau`` may be None (returned as None). Works with NumPy, SymPy and
    CasADi SX inputs (not mixed). Returns ``(Mbar, Cbar, gbar, taubar)``.
    """
    B = resolve_backend(M, C, g, tau, A, Adot)
    n = _shape(M, "M")[0]
    shapeA = _shape(A, "A")
    if shapeA[0] != shapeA[1]:
        raise ValueError(f"A must be square (a change of coordinates qd = A qbar_d), got shape "
                         f"{shapeA}")
    if shapeA[0] != n:
        raise ValueError(f"A is {shapeA[0]}x{shapeA[1]} but M is {n}x{n}")
    M = B.to_matrix(M, (n, n), "M")
    C = B.to_matrix(C, (n, n), "C")
    A = B.to_matrix(A, (n, n), "A")
    Adot = B.to_matrix(Adot, (n, n), "Adot")
    g = None if g is None else B.to_vector(g, n, "g")
    tau = None if tau is None else B.to_vector(tau, n, "tau")
    At = A.T
    Mbar = At @ M @ A                                      # (23)
    Cbar = At @ C @ A + At @ M @ Adot                      # (24)
    gbar = None if g is None else At @ g                   # (25)
    taubar = None if tau is None else At @ tau             # (26)
    return Mbar, Cbar, gbar, taubar


class CoMCoordinates(NamedTuple):
    """Result of :func:`com_coordinates`: new speeds ``nu_bar = [pdot_CoM; omega; qd_joints]``,
    ``nu = A nu_bar``, ``Adot``, and the transformed ``M = blkdiag(m 1_3, M22)`` and C*."""

    A: Any
    Adot: Any
    M: Any
    C: Any
    nu: Any
    mass: Any


def com_coordinates(model: Model, q: Array, nu: Array, *,
                    backend: str | None = None) -> CoMCoordinates:
    """Floating-base dynamics in CoM speeds (paper 000 Remark 6).

    The model's speeds are ``nu = [omega; v_O; qd_J]`` (base body twist in base coordinates, then
    the joints). The new speeds are ``nu_bar = [pdot_CoM; omega; qd_J]`` with ``pdot_CoM`` the CoM
    velocity in world coordinates. From the base rows of M (linear momentum m R^T pdot_CoM =
    M[3:6, :] nu): ``v_O = R^T pdot_CoM - (M[3:6, 0:3] omega + M[3:6, 6:] qd_J) / m``, which gives
    A; Adot uses d(R^T)/dt = -S(omega) R^T and Mdot from Algorithm 1. Applying eqs. (23)-(24)
    to C* gives ``M = blkdiag(m 1_3, M22)`` and a C* whose first three rows and columns vanish.
    """
    if not getattr(model, "is_floating", False):
        raise ValueError(f"model {getattr(model, 'name', model)!r} has no floating base (body 0 "
                         "must hang from the world by a Floating joint)")
    M, Mdot, C = coriolis_matrix(model, q, nu, backend=backend)
    B = resolve_backend(M)
    n, nJ = model.nv, model.nv - 6
    R = forward_kinematics(model, q, backend=B.name)[0][0]            # base -> world rotation
    nu = B.to_vector(nu, n, "nu")
    w = B.rows(nu, 0, 3)
    m = M[3, 3]
    Z = B.zeros
    Ml = B.rows(M, 3, 6)
    Mdl = B.rows(Mdot, 3, 6)
    rows_A = [[Z(3, 3), B.eye(3)], [R.T, -B.cols(Ml, 0, 3) / m]]
    rows_Ad = [[Z(3, 3), Z(3, 3)], [-(skew(B, w) @ R.T), -B.cols(Mdl, 0, 3) / m]]
    if nJ:
        rows_A = [rows_A[0] + [Z(3, nJ)], rows_A[1] + [-B.cols(Ml, 6, n) / m],
                  [Z(nJ, 3), Z(nJ, 3), B.eye(nJ)]]
        rows_Ad = [rows_Ad[0] + [Z(3, nJ)], rows_Ad[1] + [-B.cols(Mdl, 6, n) / m],
                   [Z(nJ, 3), Z(nJ, 3), Z(nJ, nJ)]]
    A, Adot = B.block(rows_A), B.block(rows_Ad)
    pdot = R @ (B.rows(nu, 3, 6) + (B.cols(Ml, 0, 3) @ w + B.cols(Ml, 6, n) @ B.rows(nu, 6, n)) / m)
    nu_bar = B.vcat([pdot, w, B.rows(nu, 6, n)])
    Mbar, Cbar, _, _ = change_coordinates(M, C, None, None, A, Adot)
    return CoMCoordinates(A, Adot, Mbar, Cbar, nu_bar, m)
