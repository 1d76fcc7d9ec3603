"""Analytical derivatives of the gravity and static torques and of the centroidal dynamics.

Pinocchio's ``computeGeneralizedGravityDerivatives``, ``computeStaticTorqueDerivatives`` and
``computeCentroidalDynamicsDerivatives``, written once over the backend (no numeric
differentiation, no AD). Derivatives with respect to ``q`` are taken in the tangent space
(column k: ``d/de x(q (+) e e_k)`` at e = 0, the joints' ``integrate``; body-twist perturbations
for floating and spherical joints, as Pinocchio); columns run over symdyn's speeds (free-flyer
``[omega; v]``; Pinocchio's ``[v; omega]``: ``symdyn.interop.pinocchio.matrix_from_pin``).

Gravity and static torques: ``g(q) = rnea(q, 0, 0)`` and ``tau_s(q) = rnea(q, 0, 0, f_ext)``, so
their q-derivatives are IDSVA's ``dtau_dq`` (paper 003, Algorithm 1) at ``qd = qdd = 0``: exact,
not an approximation (the velocity terms vanish identically there).

Centroidal dynamics. With world-coordinate spatial quantities of body i (``I_i`` inertia,
``v_i``, ``a_i`` velocity and acceleration without gravity), the momentum about the world origin
is ``h0 = sum I_i v_i`` and its rate ``f0 = sum (I_i a_i + v_i x* I_i v_i)``. Perturbing ``q_j``
moves the subtree of joint j by the world twist ``S_j de``; with the composites of that subtree
(``IC_j``, ``hC_j``, ``fC_j``, ``2 B^C_j``, paper 003 eq. (28)) and paper 003's
``Psid_j = v_p(j) x S_j``, ``Sd_j = v_j x S_j``, ``Psidd_j = a_p(j) x S_j + v_p(j) x Psid_j``:

    dh0/dq_j   = (hC_j xbar*) S_j + IC_j Psid_j
    df0/dq_j   = (fC_j xbar*) S_j + IC_j Psidd_j + 2 B^C_j Psid_j          (IDSVA's t3, no gravity)
    df0/dqd_j  = IC_j (Sd_j + Psid_j) + 2 B^C_j S_j                           (IDSVA's t2)
    df0/dqdd_j = IC_j S_j                                                     (IDSVA's t1)

The centroidal momentum ``h_G = [k0 - c x l; l]`` (``h0 = [k0; l]``, ``c`` the centre of mass)
and its rate ``hdot_G = [n0 - c x f; f]`` (``f0 = [n0; f]``; ``cdot x l = 0`` since
``l = m cdot``) are moved to the CoM; the q-derivatives add ``l x Jc`` resp. ``f x Jc`` to the
angular rows (``Jc = dc/dq``, :func:`~symdyn.algorithms.com.com_jacobian`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import cross_force, cross_motion, skew, xform_motion_inv
from ..types import Array, Backend, ExternalForces
from .common import entry, per_body
from .frames import check_order, in_order, path_kinematics
from .kinematics_derivatives import check_support
from .rnea_derivatives import crfbar_mul, ground_inertia, rnea_derivatives, twice_B
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["centroidal_dynamics_derivatives", "generalized_gravity_derivatives",
           "static_torque_derivatives"]


@dispatch
def generalized_gravity_derivatives(model: Model, q: Array, *,
                                    backend: str | None = None) -> Array:
    """``dg/dq`` (nv x nv) of the generalized gravity ``g(q) = gravity_vector(model, q)``
    (Pinocchio's ``computeGeneralizedGravityDerivatives``), tangent-space in q.

    Computed by IDSVA (:func:`~symdyn.algorithms.rnea_derivatives.rnea_derivatives`) at
    ``qd = qdd = 0``, which is exact: g is RNEA there."""
    zero = [0.0] * getattr(model, "nv", 0)   # (a non-model is refused by rnea_derivatives)
    return rnea_derivatives(model, q, zero, zero, backend=backend)[0]


@dispatch
def static_torque_derivatives(model: Model, q: Array, f_ext: ExternalForces, *,
                              backend: str | None = None) -> Array:
    """``d tau_s/dq`` (nv x nv) of the static torque ``tau_s(q) = g(q) - sum_i J_i^T f_i``
    (``rnea(model, q, 0, 0, f_ext)``; Pinocchio's ``computeStaticTorqueDerivatives``).

    ``f_ext[i]``: the external force ``[n; f]`` on body i in body-i coordinates (it turns with
    the body; Pinocchio's ``fext`` per joint in the joint's local frame, rows ``[f; n]``);
    ``None`` entries mean no force. Tangent-space in q. Computed by IDSVA at ``qd = qdd = 0``,
    which is exact."""
    if f_ext is None:
        raise TypeError("f_ext is required: one 6-vector [n; f] (or None) per body, in body "
                        "coordinates (generalized_gravity_derivatives is the case without forces)")
    zero = [0.0] * getattr(model, "nv", 0)   # (a non-model is refused by rnea_derivatives)
    return rnea_derivatives(model, q, zero, zero, f_ext, backend=backend)[0]


@dispatch
def centroidal_dynamics_derivatives(model: Model, q: Array, qd: Array, qdd: Array, *,
                                    order: str = "angular_first", backend: str | None = None
                                    ) -> tuple[Array, Array, Array, Array]:
    """``(dh_dq, dhdot_dq, dhdot_dqd, dhdot_dqdd)`` (6 x nv each): the partial derivatives of
    the centroidal momentum ``h_G = Ag(q) qd``
    (:func:`~symdyn.algorithms.com.centroidal_momentum`) and of its rate ``hdot_G = Ag qdd + dAg/dt qd`` (gravity excluded),
    both about the centre of mass in world-aligned axes: Pinocchio's
    ``computeCentroidalDynamicsDerivatives`` (whose rows are ``[linear; angular]``:
    ``order="linear_first"``). Rows ``[angular; linear]`` by default; ``dhdot_dqdd = Ag`` (and
    ``dh_dqd = Ag``, not returned, as Pinocchio). Tangent-space in q; see the module docstring
    for the recursion."""
    check_order(order)
    B, (qs, vs, us) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    if model.N == 0:
        raise ValueError(f"centroidal_dynamics_derivatives: model {model.name!r} has no moving "
                         "body (nv = 0), so its centre of mass is undefined")
    for i in range(model.N):
        if not model.children[i]:
            check_support(model, i, "centroidal_dynamics_derivatives")
    cols = _centroidal_columns(B, model, qs, vs, us)
    return tuple(in_order(B, x, order) for x in cols)  # type: ignore[return-value]


def _centroidal_columns(B: Backend, model, qs, vs, us):
    K = path_kinematics(B, model, qs, vs, us)
    params = model.constants(B).inertia_params
    N, parents = model.N, model.parents
    S0, v0, a0, IC, BC, hC, fC = per_body(N, 7)
    for i in range(N):                                         # world-frame body quantities
        X0 = K.X0[i]
        S0[i] = xform_motion_inv(B, X0, K.S[i])
        v0[i] = xform_motion_inv(B, X0, K.v[i])
        a0[i] = xform_motion_inv(B, X0, K.a[i])
        IC[i] = ground_inertia(B, X0, *params[i])
        hC[i] = IC[i] @ v0[i]
        BC[i] = twice_B(B, v0[i], IC[i], hC[i])
        fC[i] = IC[i] @ a0[i] + cross_force(B, v0[i], hC[i])
    for i in reversed(range(N)):                               # composites of the subtrees
        p = parents[i]
        if p >= 0:
            IC[p], BC[p], hC[p], fC[p] = IC[p] + IC[i], BC[p] + BC[i], hC[p] + hC[i], fC[p] + fC[i]
    dh, dfq, dfv, dfa = [], [], [], []
    for j in range(N):
        p = parents[j]
        S = S0[j]
        Sd = cross_motion(B, v0[j], S)
        t1 = IC[j] @ S
        if p < 0:                                              # the world does not move
            dh.append(crfbar_mul(B, hC[j], S))
            dfq.append(crfbar_mul(B, fC[j], S))
            dfv.append(IC[j] @ Sd + BC[j] @ S)
        else:
            Psid = cross_motion(B, v0[p], S)
            Psidd = cross_motion(B, a0[p], S) + cross_motion(B, v0[p], Psid)
            dh.append(crfbar_mul(B, hC[j], S) + IC[j] @ Psid)
            dfq.append(crfbar_mul(B, fC[j], S) + IC[j] @ Psidd + BC[j] @ Psid)
            dfv.append(IC[j] @ (Sd + Psid) + BC[j] @ S)
        dfa.append(t1)
    roots = [j for j in range(N) if parents[j] < 0]
    h0, f0, Itot = _sum(hC, roots), _sum(fC, roots), _sum(IC, roots)
    A0 = B.hcat(dfa)
    M = Itot[3, 3]                                             # total mass
    c = B.vector([Itot[2, 4], Itot[0, 5], Itot[1, 3]]) / M     # first moment / mass
    Jc = B.rows(A0, 3, 6) / M                                  # dc/dq (tangent) = CoM Jacobian
    l, f = B.rows(h0, 3, 6), B.rows(f0, 3, 6)
    return (_to_com(B, c, B.hcat(dh), skew(B, l) @ Jc), _to_com(B, c, B.hcat(dfq), skew(B, f) @ Jc),
            _to_com(B, c, B.hcat(dfv)), _to_com(B, c, A0))


def _sum(xs, idx) -> Any:
    out = xs[idx[0]]
    for k in idx[1:]:
        out = out + xs[k]
    return out


def _to_com(B: Backend, c, F, extra=None):
    """Force columns about the world origin moved to the point c: [n - c x f; f] (+ extra on
    the angular rows)."""
    top = B.rows(F, 0, 3) - skew(B, c) @ B.rows(F, 3, 6)
    if extra is not None:
        top = top + extra
    return B.vcat([top, B.rows(F, 3, 6)])
