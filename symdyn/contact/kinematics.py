"""Contact kinematics: the stacked contact Jacobian, its time variation, the contact velocity and
the acceleration drift that the constrained dynamics uses.

Rows: each contact in turn (the order of the contact list); a 6-D contact gives 6 rows
``[angular; linear]``, a 3-D contact the 3 linear rows, all in the contact's reference axes
(:class:`~symdyn.contact.contact.Contact`). Columns run over the model's speeds ``qd``
(free-flyer ``[omega; v]`` in body coordinates, see :mod:`symdyn.algorithms.frames`).

The *acceleration drift* ``gamma0`` is the contact acceleration at ``qdd = 0`` (no gravity), so
that the contact acceleration is ``J qdd + gamma0``. It follows Pinocchio's
``constraintDynamics`` (``contact1_acceleration_drift``) reference by reference:

* 3-D contacts: the *classical* acceleration of the contact point (``pddot``, the spatial
  acceleration plus ``omega x v``), in frame axes (``"local"``) or world axes
  (``"local_world_aligned"``);
* 6-D contacts: the *spatial* acceleration of the frame: in frame coordinates (``"local"``;
  ``= dJ/dt qd``), moved to the frame origin in world axes (``"local_world_aligned"``:
  ``[alpha; a_O + alpha x p]`` with ``a_O`` the world spatial acceleration at the world origin; it
  differs from ``dJ/dt qd`` by ``[0; omega x pdot]``, which vanishes while the contact is at
  rest), or in world coordinates (``"world"``; ``= dJ/dt qd``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..algorithms.common import entry
from ..algorithms.frames import (assemble_columns, frame_jacobian_time_variation, frame_transform,
                                 lwa_shift, path_kinematics)
from ..spatial import log6, skew, xform_motion, xform_motion_inv
from ..types import Array, Backend
from .contact import Contact, ResolvedContact, resolve_contacts
from ..algorithms.dispatch import dispatch

__all__ = ["ContactTerms", "contact_acceleration_drift", "contact_jacobian",
           "contact_jacobian_time_variation", "contact_terms", "contact_velocity",
           "placement_error", "relative_placement"]


class ContactTerms:
    """Stacked contact quantities at one state (backend arrays): ``J`` (nc x nv), and with ``qd``:
    ``velocity = J qd``, ``drift`` (module docstring), ``position_error`` (zero rows except
    contacts with a target; :class:`~symdyn.contact.contact.Contact`) and
    ``gamma = drift + kd velocity + kp position_error``, the right-hand side of
    ``J qdd = -gamma``."""

    def __init__(self, J, velocity=None, drift=None, position_error=None, gamma=None):
        self.J, self.velocity, self.drift = J, velocity, drift
        self.position_error, self.gamma = position_error, gamma


def _rows(B: Backend, x, dim: int):
    return x if dim == 6 else B.rows(x, 3, 6)


def _world_jacobian(B: Backend, model, K, body: int):
    """World-coordinate Jacobian of ``body`` (6 x nv): columns ``^0X_j S_j`` of the joints that
    support it, zeros elsewhere."""
    return assemble_columns(B, model, {j: xform_motion_inv(B, K.X0[j], K.S[j])
                                       for j in model.ancestors[body]})


def _one_contact(B: Backend, model, K, rc: ResolvedContact, with_rates: bool):
    """(J rows, drift rows or None, position error rows or None) of one contact."""
    c, fr = rc.contact, rc.frame
    Xf0, Xf = frame_transform(B, model, K, fr)          # world -> frame, body -> frame (or None)
    J0 = _world_jacobian(B, model, K, fr.body)
    ref = c.reference
    J = J0 if ref == "world" else xform_motion(B, Xf0, J0) if ref == "local" \
        else lwa_shift(B, Xf0.r, J0)
    if not with_rates:
        return _rows(B, J, c.dim), None, None
    vb, ab = K.v[fr.body], K.a[fr.body]
    if ref == "world" or (ref == "local_world_aligned" and c.dim == 6):
        a0 = xform_motion_inv(B, K.X0[fr.body], ab)             # world coordinates
        drift = a0 if ref == "world" else lwa_shift(B, Xf0.r, a0)
    else:
        vf, af = (vb, ab) if Xf is None else (xform_motion(B, Xf, vb), xform_motion(B, Xf, ab))
        if c.dim == 6:                                           # local, spatial
            drift = af
        else:                                                    # classical: a + omega x v
            lin = B.rows(af, 3, 6) + skew(B, B.rows(vf, 0, 3)) @ B.rows(vf, 3, 6)
            drift = B.vcat([B.zeros(3), lin if ref == "local" else Xf0.E.T @ lin])
    if c.target is None:
        err = None
    elif c.dim == 3:
        e_world = Xf0.r - B.const(list(c.target))
        err = Xf0.E @ e_world if ref == "local" else e_world
    else:
        err = placement_error(B, Xf0, c.target, ref)
    return _rows(B, J, c.dim), _rows(B, drift, c.dim), err


def relative_placement(B: Backend, Xf0, target):
    """``c2Mc1 = (R2^T R1, R2^T (p1 - p2))``: the placement ``(R1, p1) = (Xf0.E^T, Xf0.r)`` of a
    contact frame (``Xf0``: world -> frame) seen from a 6-D contact's ``target`` ``(R2, p2)``
    (:class:`~symdyn.contact.contact.Contact`'s stored pair)."""
    R2 = B.const([list(row) for row in target[0]])
    p2 = B.const(list(target[1]))
    return R2.T @ Xf0.E.T, R2.T @ (Xf0.r - p2)


def placement_error(B: Backend, Xf0, target, reference: str):
    """A 6-D contact's position error (6, ``[angular; linear]``): ``e = log6(c2Mc1)`` (Pinocchio
    4.1's ``-log6(c1Mc2)``) in frame coordinates for ``"local"``; its 3-blocks rotated to world
    axes for ``"local_world_aligned"``; ``^0X_f e`` (world coordinates) for ``"world"``."""
    e = log6(B, *relative_placement(B, Xf0, target))
    if reference == "local":
        return e
    if reference == "world":
        return xform_motion_inv(B, Xf0, e)
    R = Xf0.E.T
    return B.vcat([R @ B.rows(e, 0, 3), R @ B.rows(e, 3, 6)])


def contact_terms(B: Backend, model, qs, vs, resolved: Sequence[ResolvedContact]) -> ContactTerms:
    """:class:`ContactTerms` of the resolved contacts at the per-joint segments ``qs`` (and
    ``vs``; None: the Jacobian only), with one forward pass over the bodies that carry contacts
    and their ancestors."""
    bodies = [rc.frame.body for rc in resolved]
    with_rates = vs is not None
    zeros = [B.zeros(b - a) for a, b in model.v_idx] if with_rates else None
    K = path_kinematics(B, model, qs, vs, zeros, bodies=bodies)
    parts = [_one_contact(B, model, K, rc, with_rates) for rc in resolved]
    J = B.vcat([p[0] for p in parts])
    if not with_rates:
        return ContactTerms(J)
    velocity = J @ B.vcat(vs)
    drift = B.vcat([p[1] for p in parts])
    err = B.vcat([p[2] if p[2] is not None else B.zeros(rc.contact.dim)
                  for p, rc in zip(parts, resolved)])
    gains_p, gains_d = [], []
    for rc in resolved:
        kp, kd = rc.contact.baumgarte
        gains_p += [kp] * rc.contact.dim
        gains_d += [kd] * rc.contact.dim
    gamma = drift
    if any(gains_d):
        gamma = gamma + _diag_times(B, gains_d, velocity)
    if any(gains_p) and any(rc.contact.target is not None for rc in resolved):
        gamma = gamma + _diag_times(B, gains_p, err)
    return ContactTerms(J, velocity, drift, err, gamma)


def _diag_times(B: Backend, gains: list, x):
    return B.vcat([gains[k] * B.rows(x, k, k + 1) for k in range(len(gains))])


def _prepare(model, q, qd, contacts, backend):
    resolved = resolve_contacts(model, contacts)
    if qd is None:
        B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
        return B, qs, None, resolved
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return B, qs, vs, resolved


@dispatch
def contact_jacobian(model: Any, q: Array, contacts: Contact | Sequence[Contact], *,
                     backend: str | None = None) -> Array:
    """The stacked contact Jacobian (nc x nv): rows of each contact in turn, ``[angular; linear]``
    for 6-D contacts and linear for 3-D ones, in each contact's reference (module docstring).
    Row blocks equal :func:`symdyn.frame_jacobian` of the contact frame (its rows 3:6 for a 3-D
    contact). Pinocchio's ``getConstraintJacobian`` has ``[linear; angular]`` rows for 6-D
    contacts and columns over its own speed order."""
    B, qs, _, resolved = _prepare(model, q, None, contacts, backend)
    return contact_terms(B, model, qs, None, resolved).J


@dispatch
def contact_velocity(model: Any, q: Array, qd: Array, contacts: Contact | Sequence[Contact], *,
                     backend: str | None = None) -> Array:
    """``J qd`` (nc): the contact velocities in their references."""
    B, qs, vs, resolved = _prepare(model, q, qd, contacts, backend)
    return contact_terms(B, model, qs, vs, resolved).velocity


@dispatch
def contact_jacobian_time_variation(model: Any, q: Array, qd: Array,
                                    contacts: Contact | Sequence[Contact], *,
                                    backend: str | None = None) -> Array:
    """``dJ/dt`` (nc x nv): the exact time derivative of :func:`contact_jacobian` while ``q``
    moves with speeds ``qd`` (rows of :func:`symdyn.frame_jacobian_time_variation`).

    It is not the drift of the constrained dynamics for every contact kind: see
    :func:`contact_acceleration_drift`."""
    B, qs, vs, resolved = _prepare(model, q, qd, contacts, backend)
    return B.vcat([_rows(B, frame_jacobian_time_variation(model, B.vcat(qs), B.vcat(vs), rc.frame,
                                                          rc.contact.reference, backend=B),
                         rc.contact.dim) for rc in resolved])


@dispatch
def contact_acceleration_drift(model: Any, q: Array, qd: Array,
                               contacts: Contact | Sequence[Contact], *,
                               backend: str | None = None) -> Array:
    """The contact acceleration at ``qdd = 0`` (nc; no gravity, no Baumgarte terms): the
    classical point acceleration for 3-D contacts, the spatial frame acceleration for 6-D
    contacts, as Pinocchio's ``constraintDynamics`` (module docstring). The contact acceleration
    is ``contact_jacobian(q) qdd + contact_acceleration_drift(q, qd)``."""
    B, qs, vs, resolved = _prepare(model, q, qd, contacts, backend)
    return contact_terms(B, model, qs, vs, resolved).drift
