"""Two variants of IDSVA (paper 003 Algorithm 1) for comparison with the ground-frame version of
:mod:`.rnea_derivatives`:

* :func:`rnea_derivatives_body`: the same algorithm with every quantity in **body coordinates**
  (paper 004 Sec. V-B, Fig. 3; paper 003 Fig. 3). The forward pass keeps ``v_i``, ``a_i``, ``S_i``,
  ``Sd_i``, ``Psid_i``, ``Psidd_i``, ``I_i`` and ``2 B_i`` in body-i coordinates (no ground
  transforms ``X0``); the backward pass accumulates the composites with congruences
  ``IC_p += Xup_i^T IC_i Xup_i`` (same for ``2 B^C``) and ``fC_p += Xup_i^T fC_i``, and the columns
  ``t1..t4`` of a body's subtree, which lines 17-20 pair with ``S_i``, ``Psid_i``, ``Psidd_i``, are
  carried into body-i coordinates by ``Xup_c^T`` at every level: the transforms along the path
  that the ground-frame version avoids.
* :func:`rnea_derivatives_ancestor`: the ancestor-loop form of paper 004 Appendix B (ground
  coordinates): for each body i (leaves first) ``t1..t4`` of body i only, then a ``while j > 0``
  loop over its ancestors j = i, lambda(i), ... that fills the pair (i, j) with vector products,
  instead of paper 003's restructuring, which stacks the subtree's ``t`` columns and fills a
  body's row and column with one matrix product each. Paper 004's listing is single-DoF
  (``phi_dot_j = v_j x phi_j``); with paper 003's ``Psid_j = v_lambda(j) x S_j`` (equal for one
  DoF) it holds for every joint with a constant S, multi-DoF included.

Both give the same matrices as :func:`~symdyn.algorithms.rnea_derivatives.rnea_derivatives`
(tangent-space q-derivatives, f_ext in body coordinates). Planar joints are refused (their
per-column virtual-body treatment exists only in the ground-frame version).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import (compose, congruence, cross_force, cross_motion, inertia_congruence,
                       xform_force_T, xform_motion, xform_motion_inv)
from .chain_rule import check_constant_S
from .common import assemble_blocks, entry, external_forces, joint_kinematics, per_body
from .rnea_derivatives import crfbar_mul, ground_inertia, twice_B
from ..types import Array, Backend, ExternalForces

if TYPE_CHECKING:
    from ..model import Model


def rnea_derivatives_body(model: Model, q: Array, qd: Array, qdd: Array,
                          f_ext: ExternalForces = None, *,
                          backend: str | None = None) -> tuple[Array, Array]:
    """IDSVA in body coordinates: ``(dtau_dq, dtau_dqd)``, equal to ``rnea_derivatives``."""
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "IDSVA (body coordinates)")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    fw = _forward(B, model, qd, qdd, f_ext, Xup, S, ground=False)
    return _backward_body(B, model, Xup, *fw)


def rnea_derivatives_ancestor(model: Model, q: Array, qd: Array, qdd: Array,
                              f_ext: ExternalForces = None, *,
                              backend: str | None = None) -> tuple[Array, Array]:
    """IDSVA with paper 004 App. B's ancestor loop (ground coordinates): ``(dtau_dq, dtau_dqd)``."""
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "IDSVA (ancestor loop)")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    fw = _forward(B, model, qd, qdd, f_ext, Xup, S, ground=True)
    return _backward_ancestor(B, model, *fw)


def _forward(B: Backend, model, qd, qdd, f_ext, Xup, S, ground):
    """Lines 1-10 of Algorithm 1 in ground (``X0``) or body (``Xup``) coordinates."""
    consts = model.constants(B)
    a_grav = consts.a_grav
    N = model.N
    X0, Sx, v, a, Sd, Psid, Psidd, IC, BC, fC = per_body(N, 10)
    zero = B.zeros(6)
    for i, p in enumerate(model.parents):
        if ground:
            X0[i] = Xup[i] if p < 0 else compose(B, Xup[i], X0[p])
            Sx[i] = xform_motion_inv(B, X0[i], S[i])                       # S_i in ground coords
            vl, al = (zero, a_grav) if p < 0 else (v[p], a[p])
        else:
            Sx[i] = S[i]
            vl = zero if p < 0 else xform_motion(B, Xup[i], v[p])          # parent's, in body i
            al = xform_motion(B, Xup[i], a_grav if p < 0 else a[p])
        vJ = Sx[i] @ qd[i]
        Psid[i] = cross_motion(B, vl, Sx[i])                                # line 6
        Psidd[i] = cross_motion(B, al, Sx[i]) + cross_motion(B, vl, Psid[i])  # line 7
        v[i] = vl + vJ                                                      # line 3
        a[i] = al + Sx[i] @ qdd[i] + cross_motion(B, v[i], vJ)             # line 4
        Sd[i] = cross_motion(B, v[i], Sx[i])                                # line 5
        IC[i] = ground_inertia(B, X0[i], *consts.inertia_params[i]) if ground else consts.I[i]
        h = IC[i] @ v[i]
        BC[i] = twice_B(B, v[i], IC[i], h)                                  # line 9 (x 2)
        fC[i] = IC[i] @ a[i] + cross_force(B, v[i], h)                      # line 10
        if f_ext[i] is not None:
            fC[i] = fC[i] - (xform_force_T(B, X0[i], f_ext[i]) if ground else f_ext[i])
    return Sx, Sd, Psid, Psidd, IC, BC, fC


def _ts(B: Backend, S, Sd, Psid, Psidd, IC, BC, fC):
    """Lines 13-16: t1..t4 of one body from its composite IC, 2 B^C, fC."""
    SdPsid = Sd + Psid
    return (IC @ S, BC @ S + IC @ SdPsid,
            BC @ Psid + IC @ Psidd + crfbar_mul(B, fC, S), BC.T @ S)


def _backward_body(B: Backend, model, Xup, S, Sd, Psid, Psidd, IC, BC, fC):
    N, parents = model.N, model.parents
    Tq, Tqd = {}, {}
    T, order = per_body(N, 2)
    # T: stacked (t1, t2, t3, t4) over the subtree, in body-i coordinates
    # order: the subtree's bodies in the stacked column order
    for i in reversed(range(N)):
        ts = _ts(B, S[i], Sd[i], Psid[i], Psidd[i], IC[i], BC[i], fC[i])
        kids = model.children[i]
        order[i] = [i] + [k for c in kids for k in order[c]]
        T[i] = tuple(B.hcat([t] + [xform_force_T(B, Xup[c], T[c][n]) for c in kids]) if kids else t
                     for n, t in enumerate(ts))            # the transforms along the path
        t1, t2, t3, t4 = T[i]
        Uq, Uqd = S[i].T @ t3, S[i].T @ t2                                 # lines 17-18 (row i)
        SdPsid = Sd[i] + Psid[i]
        Lq = t4.T @ Psid[i] + t1.T @ Psidd[i]                              # line 19 (column i)
        Lqd = t4.T @ S[i] + t1.T @ SdPsid                                  # line 20 (column i)
        s = 0
        for k in order[i]:
            n = model.joints[k].nv
            Tq[(k, i)], Tqd[(k, i)] = B.rows(Lq, s, s + n), B.rows(Lqd, s, s + n)
            if k != i:
                Tq[(i, k)], Tqd[(i, k)] = B.cols(Uq, s, s + n), B.cols(Uqd, s, s + n)
            s += n
        p = parents[i]
        if p >= 0:                                                          # lines 21-23
            IC[p] = IC[p] + inertia_congruence(B, Xup[i], IC[i])
            BC[p] = BC[p] + congruence(B, Xup[i], BC[i])
            fC[p] = fC[p] + xform_force_T(B, Xup[i], fC[i])
    return assemble_blocks(B, model, Tq), assemble_blocks(B, model, Tqd)


def _backward_ancestor(B: Backend, model, S, Sd, Psid, Psidd, IC, BC, fC):
    parents = model.parents
    Tq, Tqd = {}, {}
    for i in reversed(range(model.N)):
        t1, t2, t3, t4 = _ts(B, S[i], Sd[i], Psid[i], Psidd[i], IC[i], BC[i], fC[i])
        for j in model.ancestors[i]:                                        # j = i, lambda(i), ...
            Tq[(i, j)] = t4.T @ Psid[j] + t1.T @ Psidd[j]                   # dtau_i/dq_j
            Tqd[(i, j)] = t4.T @ S[j] + t1.T @ (Sd[j] + Psid[j])            # dtau_i/dqd_j
            if j != i:
                Tq[(j, i)] = S[j].T @ t3                                    # dtau_j/dq_i
                Tqd[(j, i)] = S[j].T @ t2                                   # dtau_j/dqd_i
        p = parents[i]
        if p >= 0:
            IC[p] = IC[p] + IC[i]
            BC[p] = BC[p] + BC[i]
            fC[p] = fC[p] + fC[i]
    return assemble_blocks(B, model, Tq), assemble_blocks(B, model, Tqd)
