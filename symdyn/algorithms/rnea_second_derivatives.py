"""Second-order partial derivatives of inverse dynamics: SO-IDSVA (Singh, Russell & Wensing,
arXiv 2203.01497, with multi-DoF joints, floating bases and external forces as in arXiv 2302.06001).

Every spatial quantity is expressed in one common frame, as in first-order IDSVA
(:mod:`.rnea_derivatives`, whose forward pass and composite recursion this module reuses), but the
frame of each tree's root body instead of the ground (:mod:`.root_frame`): the expressions are
coordinate-free sums and products of true spatial vectors, so any fixed frame gives the same
numbers, and in root coordinates a floating base keeps its constant ``S = 1`` (on solo12 the CasADi
graph has 2.3x fewer instructions than in ground coordinates); gravity is moved into the root
frame instead. For a column ``d`` of joint ``j`` the
listing's per-column quantities are ``S_d``, ``Sd_d = v_j x S_d``, ``psid_d = v_lambda(j) x S_d``
and ``psidd_d = a_lambda(j) x S_d + v_lambda(j) x psid_d``; each body ``i`` carries its composite
``I^C_i``, ``2 B^C_i`` (eq. (28) of the first-order paper) and ``f^C_i`` and the blocks
``T1 = I^C S``, ``T2 = -(2 B^C)^T S``, ``T3 = 2 B^C psid + I^C psidd + f^C xbar* S`` and
``T4 = 2 B^C S + I^C (Sd + psid)`` (the first-order ``t1``, ``-t4``, ``t3``, ``t2``).

Every second derivative couples three speeds on one root-to-leaf path: ``c`` (joint k) above or in
``d`` (joint j) above or in a row body ``i`` of the subtree of j. The authors' listing
(spatial_v2_extended's ``ID_SO_derivatives``, whose names p1..p5, T1..T4, D1..D4 this module keeps)
contracts per-row tensors ``D1 = (I^C)-dot along S_i``, ``D2 = 2 B(I^C, psid_i) + (2 B^C)-dot along
S_i``, ``D3 = 2 B(I^C, S_i)`` and ``D4 = (I^C S_i) xbar*`` as ``x^T D_i y``. Each ``D`` is linear in
the row's column ``S_i`` (or ``psid_i``), so each contraction is a row form of x applied to y:

    x^T D1 y = -S_i^T [(x x*) I^C + (I^C x) xbar*] y                                =: -F1(x) y
    x^T D3 y = -S_i^T 2 B(I^C, x) y                                                 =: -F3(x) y
    x^T D2 y = -[psid_i^T 2 B(I^C, x) + S_i^T ((x x*) 2B^C + ((2B^C)^T x) xbar*)] y  =: -F2(x) y
    x^T D4 y =  S_i^T I^C (x x) y                                                   =:  F4(x) y

by ``x^T (s x* g) = -s^T (x x* g)``, ``x^T (g xbar* y) = x^T (y x* g) = s^T I (x x y)`` for
``g = I s`` and ``-x^T A (s x y) = -s^T (y x* (A^T x))``. The pair forms ``F(x)`` of a row body and
an ancestor column cost O(N d) and every triple a few 6-vector products: O(N d^2) in all, the
paper's complexity.

Conventions. ``d2tau_dq2[i, j, k] = d/dq_k (dtau_i/dq_j)``, ``d2tau_dqd2[i, j, k] =
d^2 tau_i/(dqd_j dqd_k)``, ``d2tau_dq_dqd[i, j, k] = d^2 tau_i/(dq_j dqd_k)`` (the listing's mixed
tensor is indexed (i, qd, q); it is stored transposed) and ``dM_dq[i, j, k] = dM_ij/dq_k``.
Derivatives with respect to q are in the tangent space, as the first-order derivatives: ``d/dq_k``
of a function of q is ``d/db f(q (+) b e_k)`` at b = 0 with ``(+)`` the joints' :meth:`integrate`
(body-velocity perturbations for quaternion joints), so ``d2tau_dq2[:, j, k] = d^2/(da db)
tau((q (+) b e_k) (+) a e_j)`` at a = b = 0. That is symmetric in (j, k) for generalized
coordinates (revolute, prismatic, helical joints); within one spherical or floating joint
``d2tau_dq2[:, j, k] - d2tau_dq2[:, k, j]`` is ``dtau_dq`` along the Lie bracket ``e_k x e_j`` of
the joint's modes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import Transform, cross_force, cross_motion, xform_motion
from .aba import aba_pass
from .aba_derivatives import fdsva_ground
from .chain_rule import check_constant_S
from .common import entry, external_forces, joint_kinematics, per_body
from .rnea_derivatives import crfbar_mul, idsva_backward, idsva_forward
from .dense import negated_sum, product
from .steps import step
from ..types import Array, Backend, ExternalForces
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
def rnea_second_derivatives(model: Model, q: Array, qd: Array, qdd: Array,
                            f_ext: ExternalForces = None, *,
                            backend: str | None = None) -> tuple[Any, Any, Any, Any]:
    """Second-order partials ``(d2tau_dq2, d2tau_dqd2, d2tau_dq_dqd, dM_dq)`` of
    ``tau = rnea(model, q, qd, qdd, f_ext)``, each nv x nv x nv.

    ``d2tau_dq2[i, j, k] = d^2 tau_i / (dq_j dq_k)``, ``d2tau_dqd2[i, j, k] =
    d^2 tau_i / (dqd_j dqd_k)``, ``d2tau_dq_dqd[i, j, k] = d^2 tau_i / (dq_j dqd_k)`` and
    ``dM_dq[i, j, k] = dM_ij / dq_k`` (``M = crba(model, q)``; also
    ``d^2 tau_i / (dqdd_j dq_k)``).
    q-derivatives are taken in the tangent space as in
    :func:`~symdyn.algorithms.rnea_derivatives.rnea_derivatives`, the second one outermost:
    ``d2tau_dq2[:, j, k]`` is column j of ``dtau_dq`` differentiated along ``q (+) b e_k``; it is
    symmetric in (j, k) except within a spherical or floating joint (module docstring).
    ``f_ext[i]`` is a force [n; f] on body i in body-i coordinates. Spatial vectors are
    [angular; linear].

    Storage as :func:`~symdyn.algorithms.christoffel.christoffel`: an ndarray for NumPy,
    otherwise a :class:`~symdyn.backends.Tensor3` (pages ``T[:, :, k]``). Joints whose motion
    subspace varies in body coordinates (planar) are refused.
    """
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "rnea_second_derivatives")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    return so_idsva(B, model, qd, qdd, f_ext, Xup, S)


def so_idsva(B: Backend, model, qd, qdd, f_ext, Xup, S):
    """SO-IDSVA on per-body segments ``qd``, ``qdd``, forces ``f_ext`` (body coordinates, None
    entries allowed) and joint kinematics ``Xup``, ``S`` already in backend B: the four tensors
    of :func:`rnea_second_derivatives`."""
    consts = model.constants(B)
    N, parents = model.N, model.parents
    X0, S0, v, a, Sd, Psid, Psidd, IC, BC, fC = per_body(N, 10)
    identity = Transform(B.eye(3), B.zeros(3))
    for i, p in enumerate(parents):                                   # forward pass (root frame)
        m, c, Ic = consts.inertia_params[i]
        (X0[i], S0[i], v[i], a[i], Sd[i], Psid[i], Psidd[i], IC[i], BC[i],
         fC[i]) = idsva_forward(B, model.joints[i], identity if p < 0 else Xup[i],
                                None if p < 0 else X0[p], S[i], None if p < 0 else v[p],
                                gravity_in(B, Xup[i], consts.a_grav) if p < 0 else a[p],
                                m, c, Ic, qd[i], qdd[i], f_ext[i])
    t: list[Any] = [None] * N
    for i in reversed(range(N)):                                      # composites, T1..T4
        p = parents[i]
        t[i], parent = idsva_backward(B, IC[i], BC[i], fC[i], S0[i], Sd[i], Psid[i], Psidd[i],
                                      None if p < 0 else (IC[p], BC[p], fC[p]))
        if p >= 0:
            IC[p], BC[p], fC[p] = parent
    forms = {}                      # (row body r, column c of an ancestor joint k) -> F1..F4
    for r in range(N):
        for k in model.ancestors[r]:
            for c in range(model.joints[k].nv):
                forms[r, k, c] = pair_forms(B, IC[r], BC[r], S0[r], Psid[r], S0[k], Psid[k], c)
    out = _Writer(B, model.nv)
    cols = [(S0[i], Sd[i], Psid[i], Psidd[i]) for i in range(N)]
    for j in reversed(range(N)):
        # rows: numeric backends stack j's subtree (one product per term, as the listing's
        # st_j columns); the others take one body at a time (the same scalar operations)
        groups = [model.subtree[j]] if B.numeric else [(r,) for r in model.subtree[j]]
        stacked = [(g, _stack(B, [t[r] for r in g], 1),
                    [i for r in g for i in range(*model.v_idx[r])]) for g in groups]
        j0, nj = model.v_idx[j][0], model.joints[j].nv
        for d in range(nj):
            Fd = [_stack(B, [forms[r, j, d] for r in g], 0) for g, _, _ in stacked]
            for k in model.ancestors[j]:                              # k = j, lambda(j), ...
                k0 = model.v_idx[k][0]
                for c in range(model.joints[k].nv):
                    dd, cc = j0 + d, k0 + c
                    vecs = pair_vectors(B, cols[j], d, cols[k], c, k == j)
                    if k != j:
                        out.put(1, cc, list(range(j0, j0 + nj)), dd,
                                joint_dqd(B, IC[j], S0[j], d, S0[k], c))
                    for (g, tg, rows), Fd_g in zip(stacked, Fd):
                        Fc_g = _stack(B, [forms[r, k, c] for r in g], 0)
                        deeper = len(g) > 1 or g[0] != j
                        res = triple(B, Fd_g, Fc_g, tg, vecs, k == j, deeper)
                        out.triple(rows, nj if g[0] == j else 0, dd, cc, res)
    return out.tensors()


def _stack(B: Backend, blocks, axis: int):
    """Tuples of blocks of several row bodies joined entry by entry (vertically for the forms,
    ``axis`` 0; side by side for t1..t4, ``axis`` 1); one body's tuple unchanged."""
    if len(blocks) == 1:
        return blocks[0]
    cat = B.vcat if axis == 0 else B.hcat
    return tuple(cat([b[n] for b in blocks]) for n in range(len(blocks[0])))


gravity_in = step(xform_motion)   # a_grav in a root body's coordinates


class _Writer:
    """The four dense tensors, filled from the triples' vectors with ``B.assign3``: by index
    lists on the numeric backends, by slices of one body's speeds on the graph backends."""

    def __init__(self, B: Backend, nv: int):
        self.B = B
        self.T = [B.tensor3(nv, nv, nv) for _ in range(4)]   # dq2, dqd2, dq_dqd, dM

    def put(self, which: int, i: Any, j: Any, k: Any, vec) -> None:
        """T[i, j, k] = vec with exactly one of i, j, k a list of indices. The mixed tensor
        (``which`` 2) is addressed as the listing's (i, qd index, q index) and stored as
        (i, q index, qd index)."""
        if which == 2:
            j, k = k, j
        if self.B.graph:          # one body's speeds: a slice, the other axes as 2-D blocks
            if isinstance(i, list):
                i, j, vec = slice(i[0], i[-1] + 1), slice(j, j + 1), vec
            elif isinstance(j, list):
                i, j, vec = slice(i, i + 1), slice(j[0], j[-1] + 1), vec.T
            else:
                i, k, vec = slice(i, i + 1), slice(k[0], k[-1] + 1), vec.T
        self.T[which] = self.B.assign3(self.T[which], i, j, k, vec)

    def triple(self, rows: list[int], skip: int, dd: int, cc: int, res) -> None:
        """Write one group's vectors (:func:`triple`): ``rows`` are the row bodies' speeds, the
        first ``skip`` of them joint j's own (left out where the row body must lie below j)."""
        dq_rdc, x_rdc, dqd_rdc, succ, anc = res
        DQ, DQD, X, DM = range(4)
        r = rows
        self.put(DQ, r, dd, cc, dq_rdc)
        self.put(X, r, dd, cc, x_rdc)
        self.put(DQD, r, dd, cc, dqd_rdc)
        if anc is not None:                                     # k above j: swap d and c
            self.put(DQ, r, cc, dd, dq_rdc)
            self.put(DQD, r, cc, dd, dqd_rdc)
            x_rcd, dq_crd, x_crd, dm_crd, below = anc
            self.put(X, r, cc, dd, x_rcd)
            self.put(DQ, cc, r, dd, dq_crd)
            self.put(X, cc, r, dd, x_crd)
            self.put(DM, cc, r, dd, dm_crd)
            self.put(DM, r, cc, dd, dm_crd)
        s = rows[skip:]                                         # row bodies below j
        if not s:
            return
        dq, dqd, x_drc, x_dcr, dm = (self._below(v, skip) for v in succ)
        for j, k in ((cc, s), (s, cc)):
            self.put(DQ, dd, j, k, dq)
            self.put(DQD, dd, j, k, dqd)
        self.put(X, dd, s, cc, x_drc)
        self.put(X, dd, cc, s, x_dcr)
        self.put(DM, cc, dd, s, dm)
        self.put(DM, dd, cc, s, dm)
        if anc is not None:
            dqd_csd, x_cds = (self._below(v, skip) for v in anc[4])
            self.put(DQD, cc, s, dd, dqd_csd)
            self.put(DQD, cc, dd, s, dqd_csd)
            self.put(X, cc, dd, s, x_cds)
            self.put(DQ, cc, dd, s, self._below(anc[1], skip))

    def _below(self, vec, skip: int):
        return vec if skip == 0 else self.B.rows(vec, skip, vec.shape[0])

    def tensors(self):
        return tuple(self.T)


@step
def pair_forms(B: Backend, IC, BC, S_r, Psid_r, S_k, Psid_k, c: int):
    """Row forms of body r (composite ``IC``, ``BC`` = 2 B^C, columns ``S_r``, ``Psid_r``) for
    column c of an ancestor-or-self joint k: F1(S_c), F2(S_c), F3(S_c), F3(psid_c), F4(S_c)
    (module docstring), each n_r x 6."""
    x, px = S_k[:, c], Psid_k[:, c]
    F1, F4 = _f1(B, IC, S_r, x), _f4(B, IC, S_r, x)
    F1p, F4p = _f1(B, IC, S_r, px), _f4(B, IC, S_r, px)
    F2 = (_f1(B, IC, Psid_r, x) - _f4(B, IC, Psid_r, x)
          - (cross_motion(B, x, S_r).T @ BC) - crfbar_mul(B, BC.T @ x, S_r).T)
    return F1, F2, F1 - F4, F1p - F4p, F4


def _f1(B: Backend, IC, W, x):
    """W^T [(x x*) I^C + (I^C x) xbar*] (((h xbar*)^T = -(h xbar*)))."""
    return -(cross_motion(B, x, W).T @ IC) - crfbar_mul(B, IC @ x, W).T


def _f4(B: Backend, IC, W, x):
    """W^T I^C (x x) = -((x x*) I^C W)^T."""
    return -cross_force(B, x, IC @ W).T


@step
def joint_dqd(B: Backend, IC_j, S_j, d: int, S_k, c: int):
    """d2tau_c/(dqd_j' dqd_d) for the columns j' of joint j, d one of them, c above joint j:
    S_j^T [(S_c x)^T I^C_j S_d + I^C_j (S_d x*)^T S_c]."""
    x, y = S_j[:, d], S_k[:, c]
    return -(S_j.T @ (cross_force(B, y, IC_j @ x) + IC_j @ cross_motion(B, x, y)))


@step
def pair_vectors(B: Backend, joint_j, d: int, joint_k, c: int, same_joint: bool):
    """The columns of d (joint j) and c (joint k, k = j or above j) that the triples use:
    ``(S_d, Sd_d + psid_d, psid_d, psidd_d)``, ``(S_c, Sd_c + psid_c, psid_c, psidd_c)`` and the
    listing's p1 = psid_c x S_d, p2 = psidd_c x S_d and (k above j) p3 = S_c x S_d,
    p4 = (Sd_c + psid_c) x S_d - 2 psid_d x S_c, p5 = S_d x S_c."""
    S_j, Sd_j, Psid_j, Psidd_j = joint_j
    S_k, Sd_k, Psid_k, Psidd_k = joint_k
    Sd, psd, Sc, psc = S_j[:, d], Psid_j[:, d], S_k[:, c], Psid_k[:, c]
    dcol = (Sd, Sd_j[:, d] + psd, psd, Psidd_j[:, d])
    ccol = (Sc, Sd_k[:, c] + psc, psc, Psidd_k[:, c])
    p12 = (cross_motion(B, psc, Sd), cross_motion(B, Psidd_k[:, c], Sd))
    if same_joint:
        return dcol, ccol, p12, None
    p5 = cross_motion(B, Sd, Sc)
    p4 = cross_motion(B, ccol[1], Sd) - 2 * cross_motion(B, psd, Sc)
    return dcol, ccol, p12, (-p5, p4, p5)


@step
def triple(B: Backend, Fd, Fc, t, vecs, same_joint: bool, deeper: bool):
    """The entries of column d of joint j, column c of joint k (k = j or above j) and the row
    bodies r of a group in the subtree of j, with ``Fd``, ``Fc`` the (stacked) pair forms of
    (r, d) and (r, c), ``t`` = (t1, t2, t3, t4) of the rows (side by side) and ``vecs`` from
    :func:`pair_vectors`. ``deeper``: some row body lies below j (the rows' ``succ`` entries).
    Returns vectors over the rows (None where a case does not apply), as :meth:`_Writer.triple`
    writes them."""
    (Sd, Sdpd, psd, psdd), (Sc, Sdpc, psc, psdc), (p1, p2), anc_p = vecs
    F1d, F2d, F3d, F3pd, _ = Fd
    F1c, F2c, F3c, _, F4c = Fc
    t1, t2, t3, t4 = t
    dq_rdc = F3pd @ psc + t4.T @ p1 + t1.T @ p2                     # d2tau_r/dq_d dq_c
    x_rdc = F3d @ psc                                                # cross (r, d, c)
    dqd_rdc = F1d @ Sc if same_joint else F3d @ Sc
    succ = None
    if deeper:                                                       # r in succ(j)
        succ = (-(F2d @ psc + F1d @ psdc),                           # dq (d, c, r)
                -(F3d @ Sc),                                         # dqd (d, c, r)
                -(F3d @ psc),                                        # cross (d, r, c)
                -(F2d @ Sc + F1d @ Sdpc),                            # cross (d, c, r)
                -(F1c @ Sd))                                         # dM (c, d, r)
    anc = None
    if anc_p is not None:                                            # k strictly above j
        p3, p4, p5 = anc_p
        anc = (F3c @ psd + t4.T @ p3 + t1.T @ p4,                    # cross (r, c, d)
               -(F2c @ psd + F1c @ psdd) - t3.T @ p5,                # dq (c, r, d)
               -(F3c @ psd) - t2.T @ p5,                             # cross (c, r, d)
               F4c @ Sd,                                             # dM (c, r, d)
               (-(F3c @ Sd), -(F2c @ Sd + F1c @ Sdpd)) if deeper else None)
    return dq_rdc, x_rdc, dqd_rdc, succ, anc


# --- forward dynamics: the route through the ID second derivatives and M^-1 -----------------------

@dispatch
def aba_second_derivatives(model: Model, q: Array, qd: Array, tau: Array,
                           f_ext: ExternalForces = None, *,
                           backend: str | None = None) -> tuple[Any, Any, Any, Any]:
    """Second-order partials ``(d2qdd_dq2, d2qdd_dqd2, d2qdd_dq_dqd, dMinv_dq)`` of
    ``qdd = aba(model, q, qd, tau, f_ext)``, each nv x nv x nv.

    Indexing as :func:`rnea_second_derivatives`: ``d2qdd_dq2[i, j, k] = d/dq_k (dqdd_i/dq_j)``
    (tangent space, the second derivative outermost), ``d2qdd_dqd2[i, j, k] =
    d^2 qdd_i/(dqd_j dqd_k)``, ``d2qdd_dq_dqd[i, j, k] = d^2 qdd_i/(dq_j dqd_k)`` and
    ``dMinv_dq[i, j, k] = d(M^-1)_ij/dq_k = d^2 qdd_i/(dtau_j dq_k)``; qdd is affine in tau, so
    the other tau terms vanish. Same storage, ``f_ext`` and joint support as
    :func:`rnea_second_derivatives`.

    Route (the second-order papers' FD derivatives): differentiating ``ID(q, qd, FD(q, qd, tau))
    = tau`` twice, with ``G = dqdd/dq``, ``Gv = dqdd/dqd`` (eq. (5) of the first-order paper),
    ``dM_k = dM/dq_k`` and the ID tensors at ``qdd = FD(q, qd, tau)``:

        d2qdd_dq2[:, j, k]    = -M^-1 (d2tau_dq2[:, j, k] + dM_j G[:, k] + dM_k G[:, j])
        d2qdd_dqd2[:, j, k]   = -M^-1 d2tau_dqd2[:, j, k]
        d2qdd_dq_dqd[:, j, k] = -M^-1 (d2tau_dq_dqd[:, j, k] + dM_j Gv[:, k])
        dMinv_dq[:, :, k]     = -M^-1 dM_k M^-1

    (``d/dqdd_l`` of ``dtau_dq[:, j]`` is ``dM_j[:, l]``). G, Gv and M^-1 come from
    :func:`~symdyn.algorithms.aba_derivatives.aba_derivatives`' ground-frame route
    (``method="aza"``).
    """
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "aba_second_derivatives")
    f_ext = external_forces(B, model, f_ext)
    nv = model.nv
    out = [B.tensor3(nv, nv, nv) for _ in range(4)]
    if nv == 0:
        return tuple(out)
    Xup, S = joint_kinematics(B, model, q)
    qdd, _, _ = aba_pass(B, model, q, qd, tau, f_ext, Xup, S)
    G, Gv, Minv = fdsva_ground(B, model, qd, tau, f_ext, Xup, S)     # eq. (5), M^-1 by AZA
    d2q, d2v, d2x, dM = so_idsva(B, model, qd, qdd, f_ext, Xup, S)
    dMk = B.pages(dM)
    MG = [[product(B, P, X) for X in (G, Gv)] for P in dMk]         # dM_j G, dM_j Gv
    for k in range(nv):
        by_j = [B.hcat([B.cols(MG[j][n], k, k + 1) for j in range(nv)]) for n in range(2)]
        terms = ([B.page(d2q, k), by_j[0], MG[k][0]], [B.page(d2v, k)],
                 [B.page(d2x, k), by_j[1]])
        pages = [neg_product(B, Minv, *ts) for ts in terms]
        pages.append(neg_product(B, Minv, product(B, dMk[k], Minv)))
        for n, P in enumerate(pages):
            out[n] = B.assign3(out[n], slice(None), slice(None), k, P)
    return tuple(out)


def neg_product(B: Backend, A, X, *more):
    """``-A (X + more...)``: two steps, so that the product is :func:`.dense.product` (whole
    nv x nv products: where steps run as units, one native product loop of each shape)."""
    return product(B, A, negated_sum(B, X, *more))
