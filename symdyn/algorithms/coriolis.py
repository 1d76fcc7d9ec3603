"""Coriolis matrix (paper 000 Algorithm 1) and O(N) Coriolis products without forming C.

Conventions: spatial vectors are [angular; linear]; paper body i is our i-1. Velocities are the
model's generalized speeds ``qd`` (length nv): joint rates for 1-DoF and planar joints, body
angular velocity for spherical joints, body twist [omega; v_O] for floating joints.

With factorization (10) ("christoffel") Algorithm 1 returns the Christoffel-consistent C* for any
open chain with these joints (paper 000 Prop. 2, generalized by paper 001 Sec. VI-B): C* is the
factorization of the Riemannian (Levi-Civita) connection in the model's speeds, linear in qd, with
C*(q, qd) = sum_k Gamma[:, :, k] qd[k] for the generalized Christoffel symbols Gamma of
:func:`symdyn.algorithms.christoffel.christoffel`.

Algorithm 1 is written once, in :func:`algorithm1`, over a :class:`Sweep`: the units it sweeps
(one joint each for a tree, or a cluster of bodies for closed loops, paper 001 Sec. VI-C2) and
the coordinates it works in (each body's own, paper 000's listing; or one common frame per tree,
footnote 2). The body frame, the root frame and :class:`symdyn.constrained.ClusterTree` differ
only in their kinematics (lines 1-4) and their sweep. Mdot is formed one way everywhere: lines 14
and 22 as ``Mdot = C + C^T`` (Prop. 1, which holds for every admissible body-level factorization
(9)/(10)); the tests check it against an independent derivative of CRBA.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from ..spatial import (composite_B, composite_B_add, composite_B_congruence,
                       composite_B_products, cross_force, cross_motion, inertia_congruence_sym,
                       xform_force_T, xform_motion)
from .common import entry, joint_kinematics
from .root_frame import root_inertias, root_kinematics
from .steps import step
from ..types import Array, Backend
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

FACTORIZATIONS = ("christoffel", "simple")
FRAMES = ("body", "root")


def check_factorization(factorization: str) -> None:
    """Raise ValueError unless ``factorization`` names a body-level factorization."""
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"unknown factorization {factorization!r}; choose 'christoffel' "
                         f"(paper 000 eq. (10), gives C*) or 'simple' (eq. (9), (v x*) I)")


def joint_velocities(B: Backend, model, q, qd, Xup, S):
    """Body velocities v_i (5) and Phidot_i = (v_i x) Phi_i + Phiring_i (Alg. 1 lines 3-4)."""
    v, Sdot = [None] * model.N, [None] * model.N
    for i, p in enumerate(model.parents):
        v[i], Sdot[i] = body_velocity(B, model.joints[i], Xup[i], S[i],
                                      None if p < 0 else v[p], q[i], qd[i])
    return v, Sdot


@step
def body_velocity(B: Backend, joint, Xup, S, v_p, q, qd):
    """v_i and Phidot_i of one body (``v_p`` None at the root)."""
    vJ = S @ qd
    v = vJ if v_p is None else xform_motion(B, Xup, v_p) + vJ                # line 3
    Sdot = cross_motion(B, v, S)                                              # line 4
    Sring = joint.Sring(B, q, qd)
    return v, (Sdot if Sring is None else Sdot + Sring)


class Sweep(NamedTuple):
    """Where Algorithm 1 runs.

    ``units[J]``: the bodies of unit J (one body per joint of a tree; the bodies of a cluster),
    units parents first. ``attach[J]``: the body unit J hangs from (-1: the world).
    ``unit_of[b]``: the unit of body b. ``X[b]``: the compact transform from the coordinates of
    ``attach[unit_of[b]]`` to body b's coordinates, or None when both use the same coordinates
    (root frame). Force blocks move toward the root with X^T (line 17), composites with the
    congruence X^T (.) X (lines 24-25).
    """

    units: Sequence[Sequence[int]]
    attach: Sequence[int]
    unit_of: Sequence[int]
    X: Sequence


def tree_sweep(model, X) -> Sweep:
    """The sweep of a kinematic tree: one unit per joint, hanging from its parent body."""
    N = model.N
    return Sweep([(i,) for i in range(N)], list(model.parents), list(range(N)), list(X))


def _up_force(B: Backend, X, F):
    return F if X is None else xform_force_T(B, X, F)


def composite_inertias(B: Backend, sweep: Sweep, I, units=None):
    """I^C per body (paper 000 eq. (15), Algorithm 1 line 24): I_b plus everything hanging from b.
    ``units``: accumulate only these (default all)."""
    IC = list(I)
    order = range(len(sweep.units)) if units is None else sorted(units)
    for J in reversed(order):
        a = sweep.attach[J]
        if a >= 0:
            for b in sweep.units[J]:
                X = sweep.X[b]
                IC[a] = IC[a] + (IC[b] if X is None else inertia_congruence_sym(B, X, IC[b]))
    return IC


def algorithm1(B: Backend, sweep: Sweep, S, Sdot, v, I, factorization: str = "christoffel", *,
               IC=None, units=None, rate: bool = False, armature=None):
    """Paper 000 Algorithm 1, lines 5-26, over ``sweep``; returns the blocks ``(M, C)`` as dicts
    keyed by unit pairs (J, L) for related units.

    ``S[b]``, ``Sdot[b]``: body b's rows of its unit's motion subspace Phi and of its rate Phidot
    (6 x n_J; for a tree the joint's S and (v x) S + Sring); ``v[b]`` and ``I[b]``: velocity and
    inertia of body b, all in the sweep's coordinates for b. A unit of several bodies sums lines
    9-14 over its bodies and moves their force blocks to its attachment (line 17). ``IC``:
    composite inertias computed beforehand (then not accumulated here); ``units``: sweep only
    these (closed under attachments; the others must be at rest with nothing moving below them,
    so their blocks of C vanish). Mdot = C + C^T (Prop. 1): see :func:`mass_matrix_rate`;
    ``rate=True`` forms its blocks inside the sweep (lines 14 and 22) and returns ``(M, C, Mdot)``.
    ``armature[J]``: None or a matrix added to M_JJ (rotor inertia of a tree's joint J).
    """
    accumulate = IC is None
    IC = list(I) if accumulate else list(IC)                                  # line 5
    order = range(len(sweep.units)) if units is None else sorted(units)
    BC = {b: composite_B_step(B, v[b], I[b], factorization)                   # line 6
          for J in order for b in sweep.units[J]}
    M: dict[tuple[int, int], Any] = {}
    C: dict[tuple[int, int], Any] = {}
    Mdot: dict[tuple[int, int], Any] = {}
    for J in reversed(order):                                                 # line 8
        nJ = S[sweep.units[J][0]].shape[1]
        i = sweep.attach[J]                                                   # line 15
        sums: Any = None                      # the unit's (C_JJ, M_JJ, F, Mdot_JJ) so far
        last = len(sweep.units[J]) - 1
        for n, b in enumerate(sweep.units[J]):
            sums = unit_body(B, BC[b], IC[b], S[b], Sdot[b], sweep.X[b], i >= 0, sums,
                             armature[J] if armature is not None and n == last else None,
                             rate and n == last)
        C[J, J], M[J, J], F, Mdot_JJ = sums
        if rate:
            Mdot[J, J] = Mdot_JJ                                              # line 14
        while i >= 0:                                                         # line 16
            L = sweep.unit_of[i]                                              # line 18
            i_next = sweep.attach[L]
            C[L, J], C[J, L], M[L, J], Mdot[L, J], F = ancestor_pair(
                B, S[i], Sdot[i], F, nJ, sweep.X[i], i_next >= 0, rate)
            M[J, L] = M[L, J].T
            if rate:
                Mdot[J, L] = Mdot[L, J].T
            i = i_next
        a = sweep.attach[J]
        if a >= 0:                                                            # lines 24-25
            for b in sweep.units[J]:
                IC[a], BC[a] = composite_up(B, IC[a], IC[b], BC[a], BC[b], sweep.X[b],
                                            accumulate)
    return (M, C, Mdot) if rate else (M, C)


composite_B_step = step(composite_B)


@step
def unit_body(B: Backend, BC, IC, S, Sdot, X, move_up: bool, sums, armature, rate: bool):
    """Lines 9-13 for one body of unit J and, when J has a parent, its force blocks
    [F1 F2 F3] moved to the attachment (line 17), added to ``sums``: ``(C_JJ, M_JJ, F, _)``
    of the unit's bodies before it (None for its first). Returns the new sums, with
    ``armature`` (None or a matrix) added to M_JJ and, when ``rate``, Mdot_JJ = C_JJ + C_JJ^T
    (line 14; give both with the unit's last body)."""
    BS, BtS = composite_B_products(B, BC, S)
    F1 = IC @ Sdot + BS                                                       # line 9
    F2 = IC @ S                                                               # line 10
    F3 = BtS                                                                  # line 11
    CJJ, MJJ = S.T @ F1, S.T @ F2                                             # lines 12-13
    F = _up_force(B, X, B.hcat([F1, F2, F3])) if move_up else None
    if sums is not None:
        CJJ, MJJ = sums[0] + CJJ, sums[1] + MJJ
        F = None if F is None else sums[2] + F
    if armature is not None:
        MJJ = MJJ + armature
    return CJJ, MJJ, F, (CJJ + CJJ.T if rate else None)


@step
def ancestor_pair(B: Backend, S, Sdot, F, nJ: int, X, move_up: bool, rate: bool):
    """Lines 19-22 for ancestor body i of unit J (Mdot_LJ = C_LJ + C_JL^T when ``rate``), and F
    moved on to i's attachment (line 17)."""
    F1, F2, F3 = B.cols(F, 0, nJ), B.cols(F, nJ, 2 * nJ), B.cols(F, 2 * nJ, 3 * nJ)
    C_LJ = S.T @ F1                                                           # line 19
    C_JL = (Sdot.T @ F2 + S.T @ F3).T                                         # line 20
    M_LJ = S.T @ F2                                                           # line 21
    Mdot_LJ = C_LJ + C_JL.T if rate else None                                 # line 22
    return C_LJ, C_JL, M_LJ, Mdot_LJ, (_up_force(B, X, F) if move_up else None)


@step
def composite_up(B: Backend, IC_a, IC_b, BC_a, BC_b, X, accumulate: bool):
    """Lines 24-25: body b's composite inertia and B^C added to its attachment a's."""
    if accumulate:
        IC_a = IC_a + (IC_b if X is None else inertia_congruence_sym(B, X, IC_b))
    up = BC_b if X is None else composite_B_congruence(B, X, BC_b)
    return IC_a, composite_B_add(B, BC_a, up)


def mass_matrix_rate(C: dict) -> dict:
    """Blocks of Mdot = C + C^T (Algorithm 1 lines 14 and 22 by Prop. 1) from the blocks of C;
    each pair's sum is formed once and mirrored (a CSE pass would not see that a + b == b + a)."""
    out = {}
    for (i, j), Cij in C.items():
        if (i, j) not in out:
            out[i, j] = Cij + C[j, i].T
            out[j, i] = out[i, j].T
    return out


def blocks_to_matrix(B: Backend, model, blocks):
    """nv x nv matrix from {(i, j): block}, writing only the given blocks into zeros (O(#blocks),
    unlike a dense block grid: O(Nd) for Algorithm 1's related pairs)."""
    out = B.zeros(model.nv, model.nv)
    for (i, j), blk in blocks.items():
        (a, b), (c, d) = model.v_idx[i], model.v_idx[j]
        out = B.assign(out, slice(a, b), slice(c, d), blk)
    return out


@dispatch
def coriolis_matrix(model: Model, q: Array, qd: Array, factorization: str = "christoffel", *,
                    frame: str = "body",
                    backend: str | None = None) -> tuple[Array, Array, Array]:
    """Mass matrix, its time derivative and a Coriolis matrix: paper 000 Algorithm 1, O(Nd).

    Returns ``(M, Mdot, C)``, each nv x nv in the inputs' backend (M with ``model.armature``
    on its diagonal, as :func:`~symdyn.algorithms.crba.crba`), with ``C(q, qd) qd`` the
    Coriolis/centripetal torques (``rnea(q, qd, 0)`` without gravity) and ``Mdot = C + C^T``.
    ``factorization="christoffel"`` (eq. (10)) gives the Christoffel-consistent C*;
    ``"simple"`` (eq. (9), B = (v x*) I) is admissible but in general not Christoffel-consistent.
    Joints whose motion subspace depends on q (planar) enter through Phidot = v x Phi + Phiring.

    ``frame="body"`` runs Algorithm 1 as printed (body coordinates, three force blocks moved up
    per ancestor); ``frame="root"`` computes the same matrices with every quantity in the
    coordinates of its tree's root body (paper 000 footnote 2): composites become plain sums and
    the pair loop needs no transforms, for O(N) work up front (poses, Phi and inertias in root
    coordinates, :mod:`symdyn.algorithms.root_frame`). Both run :func:`algorithm1`; which is
    smaller depends on the geometry (SX instructions, body vs root: serial:20 13.1k vs 17.4k,
    panda 3.5k vs 4.5k; random geometry serial_chain(20, seed=1) 37.7k vs 22.4k): trace both
    and keep the smaller graph.
    """
    check_factorization(factorization)
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; choose 'body' (Algorithm 1 as printed) or "
                         "'root' (common root-body coordinates, footnote 2)")
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    if frame == "root":
        X0, S, v, Sdot = root_kinematics(B, model, q, qd)                     # lines 1-4
        I, sweep = root_inertias(B, model, X0), tree_sweep(model, [None] * model.N)
    else:
        Xup, S = joint_kinematics(B, model, q)
        v, Sdot = joint_velocities(B, model, q, qd, Xup, S)                   # lines 1-4
        I, sweep = model.constants(B).I, tree_sweep(model, Xup)
    M, C, Mdot = algorithm1(B, sweep, S, Sdot, v, I, factorization, rate=True,  # lines 5-26
                            armature=model.constants(B).armature)
    return (blocks_to_matrix(B, model, M), blocks_to_matrix(B, model, Mdot),
            blocks_to_matrix(B, model, C))


def _B_times(B: Backend, v, I, w, factorization):
    """B(v, I) w without forming B: eq. (10) 1/2 [v x* I w + w x* I v - I (v x w)], or eq. (9)."""
    if factorization == "simple":
        return cross_force(B, v, I @ w)
    return (cross_force(B, v, I @ w) + cross_force(B, w, I @ v) - I @ cross_motion(B, v, w)) / 2


@dispatch
def coriolis_product(model: Model, q: Array, qd: Array, qd_r: Array,
                     factorization: str = "christoffel", *,
                     backend: str | None = None) -> Array:
    """``C(q, qd) qd_r`` in O(N) without forming C (Niemeyer-Slotine modified RNEA).

    ``qd_r`` is any vector of speeds (e.g. the reference velocity of Slotine-Li control); with the
    default factorization C is the Christoffel-consistent C* of :func:`coriolis_matrix`, and
    ``coriolis_product(q, qd, qd)`` equals ``rnea(q, qd, 0)`` without gravity. Derivation: eq. (14)
    with qdd -> 0 and the velocity factor qd_j -> qd_r,j, i.e. a_r,i = X a_r,p(i) + Phidot_i qd_r,i
    and f_i = I_i a_r,i + B(v_i, I_i) v_r,i with v_r the velocities of qd_r.
    """
    check_factorization(factorization)
    B, (q, qd, qr) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qd_r", qd_r, "v"),
                           backend=backend)
    I = model.constants(B).I
    Xup, S = joint_kinematics(B, model, q)
    N, parents = model.N, model.parents
    v, vr, ar, f = [None] * N, [None] * N, [None] * N, [None] * N
    for i, p in enumerate(parents):
        vJ, vrJ = S[i] @ qd[i], S[i] @ qr[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ            # (5)
        vr[i] = vrJ if p < 0 else xform_motion(B, Xup[i], vr[p]) + vrJ
        ar[i] = cross_motion(B, v[i], vrJ)                                    # Phidot_i qd_r,i
        Sring = model.joints[i].Sring(B, q[i], qd[i])
        if Sring is not None:
            ar[i] = ar[i] + Sring @ qr[i]
        if p >= 0:
            ar[i] = ar[i] + xform_motion(B, Xup[i], ar[p])                    # (12), qdd = 0
        f[i] = I[i] @ ar[i] + _B_times(B, v[i], I[i], vr[i], factorization)
    tau = [None] * N
    for i in reversed(range(N)):
        tau[i] = S[i].T @ f[i]                                                # (13)
        if parents[i] >= 0:
            f[parents[i]] = f[parents[i]] + xform_force_T(B, Xup[i], f[i])
    return B.vcat(tau)


@dispatch
def coriolis_transpose_product(model: Model, q: Array, qd: Array, *,
                               backend: str | None = None) -> Array:
    """``C(q, qd)^T qd`` in O(N) without forming C (the term of generalized-momentum observers).

    It is the same for every admissible factorization (C^T qd = Mdot qd - C qd), C* included.
    From eq. (30), C^T qd = sum_k J_k^T B_k^T v_k + Jdot_k^T I_k v_k and B(v, I)^T v = 0 for an
    admissible B, so [C^T qd]_j = Phidot_j^T h^C_j with h^C_j = sum_{k in subtree(j)} I_k v_k.
    """
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    I = model.constants(B).I
    Xup, S = joint_kinematics(B, model, q)
    v, Sdot = joint_velocities(B, model, q, qd, Xup, S)
    h = [I[i] @ v[i] for i in range(model.N)]
    out = [None] * model.N
    for j in reversed(range(model.N)):
        out[j] = Sdot[j].T @ h[j]
        p = model.parents[j]
        if p >= 0:
            h[p] = h[p] + xform_force_T(B, Xup[j], h[j])
    return B.vcat(out)
