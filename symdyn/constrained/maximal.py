"""Maximal-coordinates route to M and the Coriolis matrix (paper 001 Sec. VI-A, paper 000 Remark 4).

Maximal speeds are the stacked body twists ``V = [v_1; ...; v_N]``, each in its own body
coordinates ``[omega; v_O]``. In them the mechanism is N free rigid bodies: ``M_max = blkdiag(I_k)``
is constant and each body's Christoffel-consistent factorization is the Riemannian connection of
its left-invariant metric (paper 001 eqs. (18)/(19))::

    B_body(v, I) = 1/2 [(v x*) I + (I v) xbar* + I (v x)]
                 = [[(Sigma w) x, (h x)(w x)], [-(w x)(h x), m (w x)]],

with ``Sigma = tr(Ibar)/2 1 - Ibar`` (second moment of the mass distribution), ``h = m c``: skew,
and independent of the linear velocity. The tree's speeds map to maximal ones by ``V = J qd``
(``J`` stacks the body Jacobians). Paper 001 Thm. V.1 / eq. (20) then gives
``C = J^T C_max J + J^T M_max Jring``.

Which time derivative of a body Jacobian (both in body-k coordinates, per ancestor joint j):

* ``Jdot_k`` -- coordinate-free derivative (paper 001 fn. 3, "closed dot"; paper 000 eq. (30)):
  block j is ``X_{k<-j} Phidot_j`` with ``Phidot_j = v_j x Phi_j + Phiring_j`` (Alg. 1 line 4);
* ``Jring_k = d/dt {J_k}`` -- apparent derivative of the body-coordinate matrix, ``Jdot_k - v_k x J_k``
  (paper 000 Remark 4), from ``d/dt X_{k<-j} = X_{k<-j} (v_j x) - (v_k x) X_{k<-j}``.

Paper 000 eq. (30) pairs ``Jdot`` with a coordinate-free body factorization B (eq. (10) or (9));
eq. (31) = paper 001 eq. (20) pairs ``Jring`` with ``B + I (v x)`` (= ``B_body`` for eq. (10)).
Written over the backends (no NumPy/SymPy/CasADi imports); O(N^3), meant as an independent check
of paper 000 Algorithm 1.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ..algorithms.common import entry, joint_kinematics
from ..spatial import crf, crm, cross_motion, factorization_B, skew, xform_motion

FORMS = ("body", "spatial")
KINDS = ("christoffel", "simple")


def _check(kind: str, form: str | None = None) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown factorization {kind!r}; choose 'christoffel' (eq. (10) / paper "
                         f"001 eq. (18)) or 'simple' (eq. (9))")
    if form is not None and form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose 'body' (paper 001 eq. (20), body-twist "
                         f"speeds with Jring) or 'spatial' (paper 000 eq. (30), coordinate-free Jdot)")


def _blk(B, A, r, c):
    return B.rows(B.cols(A, c, c + 3), r, r + 3)


def body_twist_factorization(B, v, I, kind: str = "christoffel"):
    """Coriolis matrix of one free body in its body-twist speeds ``v = [omega; v_O]`` (6x6).

    ``kind="christoffel"``: the Riemannian connection of the left-invariant metric ``I``, paper 001
    eq. (19) from the pseudo-inertia parts (Sigma, h, m) of ``I`` -- equal to eq. (18),
    ``1/2 [(v x*) I + (I v) xbar* + I (v x)]``; skew, and a function of omega only.
    ``kind="simple"``: ``(v x*) I + I (v x)`` (paper 000 eq. (31) with B of eq. (9)).
    Either satisfies ``B_body(v, I) v = v x* I v``.
    """
    _check(kind)
    if kind == "simple":
        return crf(B, v) @ I + I @ crm(B, v)
    Ibar, H, m = _blk(B, I, 0, 0), _blk(B, I, 0, 3), I[3, 3]               # H = S(h), h = m c
    trace = Ibar[0, 0] + Ibar[1, 1] + Ibar[2, 2]
    Sigma = B.eye(3) * (trace / 2) - Ibar                                   # second moments
    W = skew(B, B.rows(v, 0, 3))
    return B.block([[skew(B, Sigma @ B.rows(v, 0, 3)), H @ W],                # (19)
                    [-(W @ H), W * m]])


class JacobianDerivatives(NamedTuple):
    """Per body k (body-k coordinates): velocity ``v[k]``, Jacobian ``J[k]`` (6 x nv) with
    ``v_k = J_k qd``, coordinate-free derivative ``Jdot[k]`` and apparent derivative ``Jring[k]``."""

    v: list | None       # None when no speeds were given
    J: list
    Jdot: list | None
    Jring: list | None


def jacobian_blocks(B, model, q, qd, Xup=None, S=None):
    """:func:`jacobian_derivatives` on backend ``B``'s per-joint segments ``q``/``qd`` (optional
    precomputed ``Xup``/``S`` of :func:`~symdyn.algorithms.common.joint_kinematics`); with
    ``qd=None`` only J (v, Jdot, Jring are None)."""
    if Xup is None:
        Xup, S = joint_kinematics(B, model, q)
    N = model.N
    if qd is None:
        cols: list[Any] = [None] * N
        for k, p in enumerate(model.parents):
            cols[k] = {} if p < 0 else {j: xform_motion(B, Xup[k], c) for j, c in cols[p].items()}
            cols[k][k] = S[k]
        return JacobianDerivatives(None, [_dense(B, model, c) for c in cols], None, None)
    v: list[Any] = [None] * N
    Sdot: list[Any] = [None] * N
    cols = [None] * N                    # {j: X_{k<-j} Phi_j}
    dcols: list[Any] = [None] * N        # {j: X_{k<-j} Phidot_j}
    for k, p in enumerate(model.parents):
        vJ = S[k] @ qd[k]
        v[k] = vJ if p < 0 else xform_motion(B, Xup[k], v[p]) + vJ           # (5)
        Sdot[k] = cross_motion(B, v[k], S[k])                                 # Alg. 1 line 4
        Sring = model.joints[k].Sring(B, q[k], qd[k])
        if Sring is not None:
            Sdot[k] = Sdot[k] + Sring
        if p < 0:
            cols[k], dcols[k] = {}, {}
        else:
            cols[k] = {j: xform_motion(B, Xup[k], c) for j, c in cols[p].items()}
            dcols[k] = {j: xform_motion(B, Xup[k], c) for j, c in dcols[p].items()}
        cols[k][k], dcols[k][k] = S[k], Sdot[k]
    J = [_dense(B, model, c) for c in cols]
    Jdot = [_dense(B, model, c) for c in dcols]
    Jring = [Jdot[k] - cross_motion(B, v[k], J[k]) for k in range(N)]       # Remark 4
    return JacobianDerivatives(v, J, Jdot, Jring)


def _dense(B, model, blocks):
    """6 x nv matrix from per-joint column blocks {j: 6 x n_j} (missing joints: zeros)."""
    return B.hcat([blocks[j] if j in blocks else B.zeros(6, b - a)
                   for j, (a, b) in enumerate(model.v_idx)])


def jacobian_derivatives(model, q, qd, *, backend: str | None = None) -> JacobianDerivatives:
    """Body velocities, body Jacobians and both time derivatives along ``qd`` (module docstring).

    ``qd`` are the model's speeds (body angular velocity for spherical joints, body twist for
    floating ones); ``Jring[k]`` is ``d/dt J_k(q(t))`` for ``q(t) = q (+) qd t`` at t = 0.
    """
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return jacobian_blocks(B, model, q, qd)


class MaximalCoordinates(NamedTuple):
    """Maximal-coordinate quantities of paper 001 eq. (20): ``M_max = blkdiag(I_k)``,
    ``C_max = blkdiag(B_body(v_k, I_k))`` (6N x 6N), stacked ``J`` and ``Jring`` (6N x nv)."""

    M: object
    C: object
    J: object
    Jring: object


def maximal_coordinates(model, q, qd, factorization: str = "christoffel", *,
                        backend: str | None = None) -> MaximalCoordinates:
    """The free-body system in stacked body twists and the map to the tree's speeds; then
    ``M = J^T M_max J`` and ``C = J^T C_max J + J^T M_max Jring`` (paper 001 eqs. (17), (20))."""
    _check(factorization)
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    I = model.constants(B).I
    d = jacobian_blocks(B, model, q, qd)
    N = model.N
    Z = B.zeros(6, 6)
    Mmax = B.block([[I[k] if k == l else Z for l in range(N)] for k in range(N)])
    Cb = [body_twist_factorization(B, d.v[k], I[k], factorization) for k in range(N)]
    Cmax = B.block([[Cb[k] if k == l else Z for l in range(N)] for k in range(N)])
    return MaximalCoordinates(Mmax, Cmax, B.vcat(d.J), B.vcat(d.Jring))


def coriolis_maximal(model, q, qd, factorization: str = "christoffel", form: str = "body", *,
                     backend: str | None = None):
    """``(M, Mdot, C)`` by summing over bodies, O(N^3): an independent check of Algorithm 1.

    ``form="body"`` (paper 001 eq. (20), paper 000 eq. (31)):
    ``C = sum_k J_k^T [B_body(v_k, I_k) J_k + I_k Jring_k]``, ``Mdot = sum_k Jring_k^T I_k J_k + J_k^T I_k Jring_k``.
    ``form="spatial"`` (paper 000 eq. (30)): ``C = sum_k J_k^T [B(v_k, I_k) J_k + I_k Jdot_k]`` with
    the coordinate-free B of eq. (10)/(9) and ``Mdot = sum_k Jdot^T I J + J^T Idot J + J^T I Jdot``,
    ``Idot = (v x*) I - I (v x)``. ``M = sum_k J_k^T I_k J_k`` (eq. (29)). With the default
    factorization C is the Christoffel-consistent C* for any open chain (paper 001 Sec. VI-B).
    """
    _check(factorization, form)
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    I = model.constants(B).I
    d = jacobian_blocks(B, model, q, qd)
    nv = model.nv
    M, Mdot, C = B.zeros(nv, nv), B.zeros(nv, nv), B.zeros(nv, nv)
    for k in range(model.N):
        J, IJ = d.J[k], I[k] @ d.J[k]
        M = M + J.T @ IJ                                                      # (29)
        if form == "body":
            Bk = body_twist_factorization(B, d.v[k], I[k], factorization)
            C = C + J.T @ (Bk @ J + I[k] @ d.Jring[k])                        # 001 (20) / 000 (31)
            Mdot = Mdot + d.Jring[k].T @ IJ + IJ.T @ d.Jring[k]
        else:
            Bk = factorization_B(B, d.v[k], I[k], factorization)
            C = C + J.T @ (Bk @ J + I[k] @ d.Jdot[k])                         # 000 (30)
            Idot = crf(B, d.v[k]) @ I[k] - I[k] @ crm(B, d.v[k])
            Mdot = Mdot + d.Jdot[k].T @ IJ + J.T @ (Idot @ J) + IJ.T @ d.Jdot[k]
    return M, Mdot, C
