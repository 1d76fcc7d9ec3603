"""Christoffel symbols of the first kind: paper 000 Algorithm 2, generalized to multi-DoF joints and
generalized speeds, and the eq. (4) baseline that differentiates the mass matrix.

Convention: ``Gamma[i, j, k]`` with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]`` (velocity index last),
so that ``Gamma[:, :, k] = C*(q, e_k)`` with C* from :func:`~symdyn.algorithms.coriolis.coriolis_matrix`.
Storage (the backends' rank-3 contract, :mod:`symdyn.backends`): NumPy returns an ndarray
(nv, nv, nv); SymPy, SymEngine and CasADi a :class:`~symdyn.backends.Tensor3` of nv native nv x nv
pages, ``pages[k] = Gamma[:, :, k]``. Both index as ``Gamma[i, j, k]`` (a scalar) and
``Gamma[:, :, k]`` (the native matrix C*(q, e_k)); ``B.pages(Gamma)`` lists the pages.

Derivation (differentiating eq. (18) with factorization (10) by one speed nu_k, column phi_k of
joint K): dv_l/dnu_k = phi_k for bodies l below K, dPhidot_j/dnu_k = phi_k x Phi_j (j below K) +
dPhiring_j/dnu_k (j = K), dB^C/dnu_k = B(phi_k, I^C). Hence, for speeds j, k of different joints,
Gamma[i, j, k] = Gamma[i, k, j] = Phi_i^T B(phi_deeper, I^C_[ijk]) phi_shallower (eq. (36)); for j, k
of the same joint K (i related to K),

    Gamma[i, j, k] = Phi_i^T [B(phi_k, I^C) phi_j + I^C (phi_k x phi_j) + I^C dPhiring_K/dnu_k e_j],

which is not symmetric in (j, k) when the joint's basis vectors do not commute (spherical,
floating: paper 001 Secs. III-C and VI-C3). Revolute/prismatic/helical trees give the symmetric
symbols of eq. (4); planar joints (generalized coordinates with Phiring != 0) are symmetric too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import (congruence, crfbar, cross_force, cross_motion, factorization_B,
                       inertia_congruence, xform_force_T)
from .common import entry, joint_kinematics
from .crba import crba
from ..types import Array

if TYPE_CHECKING:
    from ..model import Model


def _col(A, c):
    """Column c of a matrix as a backend vector (1-D for NumPy, (n, 1) for SymPy/CasADi)."""
    return A[:, c]


def _unit(B, n, b):
    return B.vector([1 if t == b else 0 for t in range(n)])


def _christoffel_blocks(B, model, q, emit):
    """Algorithm 2 (generalized). Calls ``emit(kind, a, b, c, blk, sym)`` for every block:

    * kind "A": ``Gamma[a, b, c] = blk`` with a, b index ranges (start, stop) and c one index;
      ``sym``: also ``Gamma[a, c, b] = blk``.
    * kind "C": ``Gamma[a, b, c] = blk`` with a one index and b, c ranges; ``sym``: also
      ``Gamma[a, c, b] = blk^T``.
    """
    I = model.constants(B).I
    Xup, S = joint_kinematics(B, model, q)
    N, parents, idx = model.N, model.parents, model.v_idx
    n = [b - a for a, b in idx]
    # dPhiring_i / dnu (per column of joint i); Phiring is linear in the joint's own speeds
    dSring: list[Any] = [
        None if j.S_constant else [j.Sring(B, q[i], _unit(B, n[i], c)) for c in range(n[i])]
        for i, j in enumerate(model.joints)]
    IC = list(I)                                                              # lines 1-3
    for k in reversed(range(N)):                                              # line 4
        for b in range(n[k]):                                                 # speeds of joint k
            kk = idx[k][0] + b
            phi = _col(S[k], b)
            Bt = factorization_B(B, phi, IC[k])                               # line 5
            h = IC[k] @ phi                                                   # D = (h xbar*) - Bt
            # j = k: same-joint pairs, not symmetric in (j, k) in general
            F1 = Bt @ S[k] + IC[k] @ cross_motion(B, phi, S[k])
            if dSring[k] is not None:
                F1 = F1 + IC[k] @ dSring[k][b]
            F2 = Bt.T @ S[k]
            emit("A", idx[k], idx[k], kk, S[k].T @ F1, False)
            F, i = B.hcat([F1, F2]), k
            while parents[i] >= 0:
                F = xform_force_T(B, Xup[i], F)
                i = parents[i]
                F1, F2 = B.cols(F, 0, n[k]), B.cols(F, n[k], 2 * n[k])
                emit("A", idx[i], idx[k], kk, S[i].T @ F1, False)           # Gamma_ijk
                emit("A", idx[k], idx[i], kk, (S[i].T @ F2).T, True)        # Gamma_jik = Gamma_jki
            j = k                                                             # line 7
            while parents[j] >= 0:                                            # line 8
                Bt = congruence(B, Xup[j], Bt)                                # line 18
                h = xform_force_T(B, Xup[j], h)                               # line 19 via D = h xbar* - Bt
                j = parents[j]                                                # line 20
                F1 = Bt @ S[j]                                                # line 9
                F2 = Bt.T @ S[j]
                F3 = crfbar(B, h) @ S[j] - F1                                 # D Phi_j
                # i = j (line 10): Gamma_jjk = Gamma_jkj, and Gamma_kij for i, j of joint j
                emit("A", idx[j], idx[j], kk, S[j].T @ F1, True)
                G3 = S[j].T @ F3
                same = n[j] > 1 or dSring[j] is not None
                if same:  # + h . (phi_c x phi_i) + h . dPhiring_j/dnu_c e_i (non-commuting speeds)
                    corr = []
                    for c in range(n[j]):
                        col = -(S[j].T @ cross_force(B, _col(S[j], c), h))
                        if dSring[j] is not None:
                            col = col + dSring[j][c].T @ h
                        corr.append(col)
                    G3 = G3 + B.hcat(corr)
                emit("C", kk, idx[j], idx[j], G3, not same)
                F, i, nj = B.hcat([F1, F2, F3]), j, n[j]
                while parents[i] >= 0:                                        # line 11
                    F = xform_force_T(B, Xup[i], F)                           # line 15
                    i = parents[i]                                            # line 16
                    F1, F2, F3 = B.cols(F, 0, nj), B.cols(F, nj, 2 * nj), B.cols(F, 2 * nj, 3 * nj)
                    emit("A", idx[i], idx[j], kk, S[i].T @ F1, True)        # line 12
                    emit("A", idx[j], idx[i], kk, (S[i].T @ F2).T, True)    # line 13
                    emit("C", kk, idx[i], idx[j], S[i].T @ F3, True)        # line 14
        p = parents[k]
        if p >= 0:
            IC[p] = IC[p] + inertia_congruence(B, Xup[k], IC[k])              # line 22


def _dense_writer(B, G):
    """emit() that fills the backend's dense tensor G (B.tensor3) block by block through
    B.assign3; the filled tensor is ``emit.tensor[0]`` (B.assign3 returns a new array on JAX)."""
    out = [G]

    def emit(kind, a, b, c, blk, sym):
        G = out[0]
        if kind == "A":                                   # G[a, b, c] = blk, c one index
            ra, rb = slice(*a), slice(*b)
            G = B.assign3(G, ra, rb, c, blk)
            if sym:
                G = B.assign3(G, ra, c, rb, blk)
        else:                                             # G[a, b, c] = blk, a one index
            rb, rc = slice(*b), slice(*c)
            G = B.assign3(G, a, rb, rc, blk)
            if sym:
                G = B.assign3(G, a, rc, rb, blk.T)
        out[0] = G
    emit.tensor = out  # type: ignore[attr-defined]
    return emit


def christoffel(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """Generalized Christoffel symbols of the first kind, O(N d^2) (paper 000 Algorithm 2).

    ``Gamma[i, j, k]`` with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]`` for the model's speeds qd, so
    ``Gamma[:, :, k] = C*(q, e_k)`` for every joint type (module docstring). With generalized
    coordinates (revolute, prismatic, helical, planar joints) it is eq. (4) and symmetric in
    (j, k); spherical and floating joints (quaternion q, body-velocity speeds) give symbols that
    are not symmetric within one joint. Returns a NumPy array (nv, nv, nv) for numbers, otherwise
    a :class:`~symdyn.backends.Tensor3` (SymPy, SymEngine, CasADi) with ``Gamma[i, j, k]`` a
    scalar and ``Gamma[:, :, k]`` the native nv x nv matrix C*(q, e_k).
    """
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    nv = model.nv
    emit = _dense_writer(B, B.tensor3(nv, nv, nv))
    _christoffel_blocks(B, model, q, emit)
    return emit.tensor[0]  # type: ignore[attr-defined]


def christoffel_nonzero(model: Model, q: Array, *,
                        backend: str | None = None) -> dict[tuple[int, int, int], Any]:
    """The structurally nonzero, unique Christoffel symbols as a dict ``{(i, j, k): value}``.

    Only mutually related (i, j, k) (speeds of joints on one root-to-leaf path) appear. Where
    ``Gamma[i, j, k] = Gamma[i, k, j]`` holds (j and k belong to different joints, or to one joint
    with generalized coordinates, qd = dq/dt: revolute, prismatic, helical, planar) only the key
    with ``j <= k`` is stored; for j, k of one spherical or floating joint both orders are stored. So ``Gamma[i, j, k] = d.get((i, j, k), d.get((i, k, j), 0))``.
    Values are floats (NumPy) or backend scalars (SymPy expressions, 1x1 CasADi SX).
    """
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    out: dict = {}
    joint_of = [i for i, j in enumerate(model.joints) for _ in range(j.nv)]
    coords = [model.joints[i].nq == model.joints[i].nv for i in joint_of]  # qd = dq/dt

    def put(key, val, sym):
        i, j, k = key
        sym = sym or (joint_of[j] == joint_of[k] and coords[j])
        out[(i, k, j) if sym and j > k else key] = val

    def emit(kind, a, b, c, blk, sym):
        if kind == "A":
            for r in range(a[1] - a[0]):
                for s in range(b[1] - b[0]):
                    put((a[0] + r, b[0] + s, c), blk[r, s], sym)
        else:
            for r in range(b[1] - b[0]):
                for s in range(c[1] - c[0]):
                    put((a, b[0] + r, c[0] + s), blk[r, s], sym)

    _christoffel_blocks(B, model, q, emit)
    return out


def _require_symbols(B, qv, nq):
    """Eq. (4) differentiates with respect to q: symbolic q must be distinct pure symbols."""
    elems = [qv[t] for t in range(nq)]
    ok = all(B.is_symbol(e) for e in elems) and len({str(e) for e in elems}) == nq
    if not ok:
        raise ValueError(f"christoffel_from_mass_matrix with the {B.name} backend differentiates M "
                         "with respect to q, so q must be a vector of distinct symbols; pass "
                         "numbers (NumPy, differentiated by CasADi AD) for numeric symbols")


def christoffel_from_mass_matrix(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """Christoffel symbols by eq. (4), ``Gamma[i,j,k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)``,
    differentiating ``M = crba(model, q)`` (the baseline of paper 000 Table 2).

    SymPy: ``Matrix.jacobian``; CasADi SX: ``casadi.jacobian`` (q must then be distinct symbols);
    NumPy: CasADi automatic differentiation at the numbers (:mod:`symdyn.autodiff`). Same storage
    as :func:`christoffel` (ndarray for NumPy, :class:`~symdyn.backends.Tensor3` otherwise),
    ``C[i, j] = sum_k Gamma[i, j, k] qd[k]``. Eq. (4) needs generalized coordinates with qd = dq/dt: models with
    quaternion joints (spherical, floating) are refused; use :func:`christoffel` for them.
    """
    quat = [model.names[i] for i, j in enumerate(model.joints) if j.nq != j.nv]
    if quat:
        raise ValueError(f"eq. (4) needs generalized coordinates (qd = dq/dt), but the joints of "
                         f"{quat} use quaternions and body-velocity speeds; use christoffel() "
                         "(generalized symbols, Gamma[:, :, k] = C*(q, e_k)) instead")
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    nv = model.nv
    qv = B.vcat(qs)
    if B.graph:  # differentiate the expression graph; numbers go through CasADi AD
        _require_symbols(B, qv, model.nq)
        M = crba(model, qv, backend=B.name)
        y = B.vector([M[i, j] for j in range(nv) for i in range(nv)])         # vec(M), column-major
        dM = B.jacobian(y, qv)
    else:
        from ..autodiff import ad_jacobians  # CasADi AD lives outside algorithms/
        _, dM = ad_jacobians(model, crba, [qv], ["q"], wrt=[0], tangent=False)
    G = B.tensor3(nv, nv, nv)

    def d(i, j, k):  # dM_ij / dq_k
        return dM[i + nv * j, k]

    for i in range(nv):
        for j in range(nv):
            for k in range(j, nv):
                g = (d(i, j, k) + d(i, k, j) - d(j, k, i)) / 2                # (4)
                G = B.set3(B.set3(G, i, j, k, g), i, k, j, g)
    return G
