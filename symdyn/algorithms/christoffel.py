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
                       inertia_congruence, xform_force_T, xform_motion_inv)
from .common import entry, joint_kinematics
from .root_frame import root_inertias, root_kinematics
from .crba import crba
from .ltdl import ancestor_lists
from .steps import loop_step, step
from ..backends.protocol import as_graph
from ..types import Array, Backend
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


def _col(A, c):
    """Column c of a matrix as a backend vector (1-D for NumPy, (n, 1) for SymPy/CasADi)."""
    return A[:, c]


def _unit(B: Backend, n, b):
    return B.vector([1 if t == b else 0 for t in range(n)])


def _christoffel_blocks(B: Backend, model, q, emit, frame: str = "body"):
    """Algorithm 2 (generalized). Calls ``emit(kind, a, b, c, blk, sym)`` for every block:

    * kind "A": ``Gamma[a, b, c] = blk`` with a, b index ranges (start, stop) and c one index;
      ``sym``: also ``Gamma[a, c, b] = blk``.
    * kind "C": ``Gamma[a, b, c] = blk`` with a one index and b, c ranges; ``sym``: also
      ``Gamma[a, c, b] = blk^T``.
    """
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; choose 'body' or 'root'")
    if frame == "root":   # paper 000 footnote 2: one frame per tree, no transforms below
        X0, S, _, _ = root_kinematics(B, model, q)
        I, Xup = root_inertias(B, model, X0), [None] * model.N
    else:
        X0 = [None] * model.N
        Xup, S = joint_kinematics(B, model, q)
        I = model.constants(B).I
    N, parents, idx = model.N, model.parents, model.v_idx
    n = [b - a for a, b in idx]
    # dPhiring_i / dnu (per column of joint i); Phiring is linear in the joint's own speeds
    dSring: list[Any] = [None if j.S_constant else ring_rates(B, j, q[i], X0[i])
                         for i, j in enumerate(model.joints)]
    # root coordinates: an ancestor loop moves nothing (Xup None), so its calls are independent
    # of each other and run as one loop step (steps.loop_step: recorded once, not per call)
    root = frame == "root"
    ancestors = ancestor_lists(parents) if root else []                       # parent first
    IC = list(I)                                                              # lines 1-3
    for k in reversed(range(N)):                                              # line 4
        for b in range(n[k]):                                                 # speeds of joint k
            kk = idx[k][0] + b
            Bt, h, Gkk, F = speed_terms(B, IC[k], S[k], dSring[k], b)         # line 5
            emit("A", idx[k], idx[k], kk, Gkk, False)
            if root:
                up = ancestors[k]
                for i, (G_ik, G_ki, _) in zip(up, loop_step(
                        B, ancestor_of_k, [(None, F, S[i], n[k]) for i in up])):
                    emit("A", idx[i], idx[k], kk, G_ik, False)              # Gamma_ijk
                    emit("A", idx[k], idx[i], kk, G_ki, True)               # Gamma_jik = Gamma_jki
            else:
                i = k
                while parents[i] >= 0:
                    G_ik, G_ki, F = ancestor_of_k(B, Xup[i], F, S[parents[i]], n[k])
                    i = parents[i]
                    emit("A", idx[i], idx[k], kk, G_ik, False)              # Gamma_ijk
                    emit("A", idx[k], idx[i], kk, G_ki, True)               # Gamma_jik = Gamma_jki
            j = k                                                             # line 7
            while parents[j] >= 0:                                            # line 8
                Bt, h, Gjj, G3, same, F = ancestor_j(B, Xup[j], Bt, h, S[parents[j]],
                                                     dSring[parents[j]])
                j = parents[j]                                                # line 20
                emit("A", idx[j], idx[j], kk, Gjj, True)
                emit("C", kk, idx[j], idx[j], G3, not same)
                if root:                                                      # lines 11-16
                    up = ancestors[j]
                    for i, (G_ij, G_ji, G_kij, _) in zip(up, loop_step(
                            B, ancestor_of_j, [(None, F, S[i], n[j]) for i in up])):
                        emit("A", idx[i], idx[j], kk, G_ij, True)           # line 12
                        emit("A", idx[j], idx[i], kk, G_ji, True)           # line 13
                        emit("C", kk, idx[i], idx[j], G_kij, True)          # line 14
                else:
                    i = j
                    while parents[i] >= 0:                                    # line 11
                        G_ij, G_ji, G_kij, F = ancestor_of_j(B, Xup[i], F, S[parents[i]],
                                                             n[j])
                        i = parents[i]                                        # line 16
                        emit("A", idx[i], idx[j], kk, G_ij, True)           # line 12
                        emit("A", idx[j], idx[i], kk, G_ji, True)           # line 13
                        emit("C", kk, idx[i], idx[j], G_kij, True)          # line 14
        p = parents[k]
        if p >= 0:
            IC[p] = composite_inertia(B, IC[p], Xup[k], IC[k])                # line 22


@step
def ring_rates(B: Backend, joint, q, X0):
    """dPhiring/dnu_c for each column c of a joint whose Phi varies (Phiring linear in nu), in
    root coordinates when ``X0`` (root -> body) is given."""
    rates = [joint.Sring(B, q, _unit(B, joint.nv, c)) for c in range(joint.nv)]
    return rates if X0 is None else [xform_motion_inv(B, X0, r) for r in rates]


@step
def speed_terms(B: Backend, IC, S, dSring, b: int):
    """Line 5 for speed b of joint k: B~ = B(phi, I^C_k), h = I^C_k phi, the same-joint symbols
    Phi_k^T F1 and the force blocks [F1 F2] to move up."""
    phi = _col(S, b)
    Bt = factorization_B(B, phi, IC)                                          # line 5
    h = IC @ phi                                                              # D = (h xbar*) - Bt
    # j = k: same-joint pairs, not symmetric in (j, k) in general
    F1 = Bt @ S + IC @ cross_motion(B, phi, S)
    if dSring is not None:
        F1 = F1 + IC @ dSring[b]
    F2 = Bt.T @ S
    return Bt, h, S.T @ F1, B.hcat([F1, F2])


@step
def ancestor_of_k(B: Backend, Xup, F, S_p, nk: int):
    """F moved to the parent p of body i (``Xup`` None: one frame) and the symbols Gamma_pk.
    and Gamma_k.p."""
    if Xup is not None:
        F = xform_force_T(B, Xup, F)
    F1, F2 = B.cols(F, 0, nk), B.cols(F, nk, 2 * nk)
    return S_p.T @ F1, (S_p.T @ F2).T, F


@step
def ancestor_j(B: Backend, Xup, Bt, h, S_j, dSring_j):
    """Lines 18-19 (B~ and h moved to the parent j) and lines 9-10 for j: the symbols
    Gamma_jjk, the row Gamma_k.. of joint j and the blocks [F1 F2 F3] to move up."""
    if Xup is not None:
        Bt = congruence(B, Xup, Bt)                                           # line 18
        h = xform_force_T(B, Xup, h)                                          # line 19 via D
    F1 = Bt @ S_j                                                             # line 9
    F2 = Bt.T @ S_j
    F3 = crfbar(B, h) @ S_j - F1                                              # D Phi_j
    nj = S_j.shape[1]
    G3 = S_j.T @ F3
    same = nj > 1 or dSring_j is not None
    if same:  # + h . (phi_c x phi_i) + h . dPhiring_j/dnu_c e_i (non-commuting speeds)
        corr = []
        for c in range(nj):
            col = -(S_j.T @ cross_force(B, _col(S_j, c), h))
            if dSring_j is not None:
                col = col + dSring_j[c].T @ h
            corr.append(col)
        G3 = G3 + B.hcat(corr)
    return Bt, h, S_j.T @ F1, G3, same, B.hcat([F1, F2, F3])


@step
def ancestor_of_j(B: Backend, Xup, F, S_p, nj: int):
    """Lines 15-16 and 12-14: F moved to the parent p of body i and the symbols Gamma_pjk,
    Gamma_jpk and Gamma_kpj."""
    if Xup is not None:
        F = xform_force_T(B, Xup, F)                                          # line 15
    F1, F2, F3 = B.cols(F, 0, nj), B.cols(F, nj, 2 * nj), B.cols(F, 2 * nj, 3 * nj)
    return S_p.T @ F1, (S_p.T @ F2).T, S_p.T @ F3, F


@step
def composite_inertia(B: Backend, IC_p, Xup, IC):
    """Line 22: I^C_p + X^T I^C X (``Xup`` None: one frame)."""
    return IC_p + (IC if Xup is None else inertia_congruence(B, Xup, IC))


def _dense_writer(B: Backend, G):
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


FRAMES = ("body", "root")


@dispatch
def christoffel(model: Model, q: Array, *, frame: str = "body",
                backend: str | None = None) -> Array:
    """Generalized Christoffel symbols of the first kind, O(N d^2) (paper 000 Algorithm 2).

    ``Gamma[i, j, k]`` with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]`` for the model's speeds qd, so
    ``Gamma[:, :, k] = C*(q, e_k)`` for every joint type (module docstring). With generalized
    coordinates (revolute, prismatic, helical, planar joints) it is eq. (4) and symmetric in
    (j, k); spherical and floating joints (quaternion q, body-velocity speeds) give symbols that
    are not symmetric within one joint. Returns a NumPy array (nv, nv, nv) for numbers, otherwise
    a :class:`~symdyn.backends.Tensor3` (SymPy, SymEngine, CasADi) with ``Gamma[i, j, k]`` a
    scalar and ``Gamma[:, :, k]`` the native nv x nv matrix C*(q, e_k).

    ``frame="body"`` runs the listing (body coordinates, force blocks moved up per ancestor);
    ``frame="root"`` the same recursion with every quantity in its tree's root coordinates
    (paper 000 footnote 2, as :func:`~symdyn.algorithms.coriolis.coriolis_matrix`): no transforms
    below the root poses, and the ancestor loops' blocks are independent of each other (each
    loop one :func:`~symdyn.algorithms.steps.loop_step`, recorded once by the compiled form).
    """
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; choose 'body' or 'root'")
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    nv = model.nv
    emit = _dense_writer(B, B.tensor3(nv, nv, nv))
    _christoffel_blocks(B, model, q, emit, frame)
    return emit.tensor[0]  # type: ignore[attr-defined]


@dispatch
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


def _require_symbols(B: Backend, qv, nq):
    """Eq. (4) differentiates with respect to q: symbolic q must be distinct pure symbols."""
    elems = [qv[t] for t in range(nq)]
    ok = all(B.is_symbol(e) for e in elems) and len({str(e) for e in elems}) == nq
    if not ok:
        raise ValueError(f"christoffel_from_mass_matrix with the {B.name} backend differentiates M "
                         "with respect to q, so q must be a vector of distinct symbols; pass "
                         "numbers (NumPy, differentiated by CasADi AD) for numeric symbols")


@dispatch
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
        dM = as_graph(B).jacobian(y, qv)
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
