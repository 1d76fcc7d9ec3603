"""Compiled functions with the inertial parameters as an input (``parameters="inertial"``).

``build(model, ["rnea", "crba", "aba"], parameters="inertial")`` gives functions with a last
input ``pi``: the 10 N inertial parameters in Pinocchio's order
(:func:`symdyn.inertial_parameters`: per body ``[m, m c, I_xx, I_xy, I_yy, I_xz, I_yz,
I_zz]``, inertia about the body origin), so that ``lib.rnea(q, qd, qdd, pi2)`` equals
``symdyn.rnea(with_inertial_parameters(model, pi2), q, qd, qdd)`` and an adaptive controller or an
identification loop runs compiled without rebuilding for every estimate.

Route: the model's public contract is unchanged (a :class:`~symdyn.model.Model` holds numbers or
SymPy expressions and refuses CasADi parameters, ``UnsupportedParameterError``). Here, inside
codegen, the algorithm is traced on a private stand-in of the model whose CasADi constants
(:meth:`~symdyn.model.Model.constants` for the CasADi backend) have the spatial inertias
``I_i = [[Ibar, S(h)], [S(h)^T, m 1]]`` and the per-body ``(m, c, Ic)`` written as SX functions of
``pi``; tree transforms, joints, gravity and armature stay the model's. Every algorithm reads the
inertias through ``model.constants(B)``, so each one runs unchanged; the stand-in refuses the
numeric ``model.I`` / ``model.body_params`` (an algorithm reading them would silently use the
model's own inertias), and any backend other than CasADi.

Which functions get ``pi`` (``AlgorithmSpec.inertial``): the dynamics algorithms (rnea, crba, aba,
nonlinear_effects, gravity_vector, coriolis_matrix, christoffel, christoffel_from_mass_matrix,
rnea_derivatives, aba_derivatives), the centre-of-mass and centroidal functions and the energies.
Frames and the regressors do not depend on the inertias and keep their inputs in such a build
(``f.input_names`` tells).

Unlike :func:`symdyn.with_inertial_parameters`, the compiled function does not check
that ``pi`` is physically consistent (positive mass, positive-definite inertia with the triangle
inequalities): aba of an inconsistent ``pi`` may divide by zero. A body mass of exactly 0 gives
``c = 0`` and ``Ic = Ibar`` (``m c`` must then be zero), as for the model's massless bodies. SX
graphs keep about the size of the numeric model's where its inertias are dense (SX instructions,
inertias compiled in / pi input: Panda arm rnea 1115 / 1066, aba 2360 / 2341, coriolis_matrix
2622 / 2626; talos crba 5931 / 5993, coriolis_matrix 24469 / 24661) and grow where they have
structural zeros (ur5, diagonal URDF inertias: rnea 628 / 982, coriolis_matrix 1352 / 1995);
``reports/fastpath.md`` times them.
"""
from __future__ import annotations

from typing import Any

from ..backends import get_backend

PARAMETER_MODES = ("inertial",)


def check_parameters(parameters: Any) -> str | None:
    """``None`` or ``"inertial"`` (ValueError otherwise)."""
    if parameters is None or parameters in PARAMETER_MODES:
        return parameters
    raise ValueError(f"parameters must be None or one of {', '.join(map(repr, PARAMETER_MODES))}, "
                     f"got {parameters!r}")


def _inertial_constants(model, pi):
    """The model's CasADi :class:`~symdyn.model.ModelConstants` with ``I`` and ``inertia_params``
    made SX functions of ``pi`` (10 N)."""
    import casadi as ca

    from .. import spatial
    from ..backends import get_backend

    B = get_backend("casadi")
    base = model.constants(B)
    I, params = [], []
    for i in range(model.N):
        m, hx, hy, hz, xx, xy, yy, xz, yz, zz = (pi[10 * i + k] for k in range(10))
        h = ca.vertcat(hx, hy, hz)
        H = spatial.skew(B, h)
        Ibar = ca.vertcat(ca.horzcat(xx, xy, xz), ca.horzcat(xy, yy, yz), ca.horzcat(xz, yz, zz))
        I.append(ca.vertcat(ca.horzcat(Ibar, H), ca.horzcat(H.T, m * ca.SX.eye(3))))
        massless = m == 0
        c = ca.if_else(massless, ca.SX.zeros(3), h / m)
        Ic = ca.if_else(massless, Ibar, Ibar - (H @ H.T) / m)
        params.append((m, c, Ic))
    return base._replace(I=tuple(I), inertia_params=tuple(params))


def parametrized_model(model, pi):
    """A private stand-in of ``model`` (same class, same fields) whose CasADi constants take their
    inertias from the SX vector ``pi`` (10 N entries, Pinocchio's order). For tracing only: it
    serves no other backend and refuses ``model.I`` / ``model.body_params``."""
    import casadi as ca

    if not isinstance(pi, ca.SX) or pi.numel() != 10 * model.N:
        raise ValueError(f"pi must be a casadi.SX with 10 N = {10 * model.N} entries")
    consts = _inertial_constants(model, pi)
    cls = _stand_in_class(type(model))
    clone: Any = object.__new__(cls)
    clone.__dict__.update(model.__dict__)
    clone.__dict__["_constants_cache"] = {"casadi": consts}
    return clone


_CLASSES: dict[type, type] = {}


def _refused(what):
    def get(self):
        raise RuntimeError(
            f"model.{what} was read while tracing with parameters='inertial': the inertias are "
            "SX parameters here and must be read through model.constants(B) (an algorithm that "
            "reads model.I directly cannot be compiled with parameters)")
    return property(get)


def _stand_in_class(cls: type) -> type:
    sub = _CLASSES.get(cls)
    if sub is None:
        def constants(self, B):
            if B is not get_backend("casadi"):  # the one backend the constants were made for
                raise RuntimeError(f"a model traced with parameters='inertial' serves the CasADi "
                                   f"backend only, not {B.name!r}")
            return self.__dict__["_constants_cache"]["casadi"]

        sub = _CLASSES[cls] = type(cls.__name__, (cls,), {
            "__module__": cls.__module__, "constants": constants,
            "I": _refused("I"), "body_params": _refused("body_params"),
            "__doc__": "A model whose CasADi inertias are SX parameters (symdyn.codegen.parameters)."})
    return sub
