"""casadi.Function objects of the symdyn algorithms, with named inputs and outputs.

Every algorithm (the same code that runs with NumPy and SymPy) is recorded into a step program
(:func:`record_algorithm`; :mod:`symdyn.codegen.recursive`) and lowered to one SX graph, every
kernel call inlined (:func:`symdyn.codegen.recursive.lower`), wrapped in a ``casadi.Function``:
the one recorded representation the unrolled C, the recursive C and the JAX routes all come
from. Two output layouts:

* ``layout="casadi"`` (default, for CasADi users and ``.casadi`` files): vectors are (n, 1)
  columns, matrices keep their shape (and CasADi's structural zeros); the Christoffel tensor is an
  nv x nv^2 matrix ``[Gamma[:, :, 0], ..., Gamma[:, :, nv-1]]`` (C*[i, j] = sum_k Gamma[i, j, k] qd[k]).
* ``layout="numpy"`` (the compiled fast path and the exported C sources): every output is a dense
  column holding the C-order (row-major) flattening of the NumPy result: ``tau[i]``,
  ``M[i * nv + j]``, ``Gamma[(i * nv + j) * nv + k]``.

Inputs are dense columns in both layouts: ``q`` (nq), ``qd``/``qdd``/``tau``/``qr_d``/``qr_dd``
(nv), ``f_ext`` (6 N: the external forces stacked, body i's ``[n; f]`` in body coordinates at
rows ``6 i .. 6 i + 5``; ``static_torque_derivatives``) and, with ``parameters="inertial"``,
``pi`` (10 N, :mod:`symdyn.codegen.parameters`).
Scalar outputs (energies) have rank 0: NumPy shape ``()``, one double in C.

Groups of :data:`ALGORITHMS` (``AlgorithmSpec.group``): ``"dynamics"`` (rnea ... aba_derivatives,
what :func:`available_algorithms` lists by default), ``"frames"`` (frame placement, velocity,
Jacobian, its time variation, classical and spatial acceleration; the frame and ``reference`` are
fixed at build time: ``frame`` is a required option), ``"com"`` (centre of mass, its Jacobian,
centroidal momentum), ``"energy"``, ``"regressors"``, ``"derivatives"`` (frame velocity and
acceleration derivatives, the kinematic Hessian, gravity and centroidal derivatives, the
second-order derivatives of inverse and forward dynamics), ``"contact"`` (contact Jacobian and
its time variation, constraint and impulse dynamics, the KKT inverse, the contact inverse
dynamics; ``contacts`` is a required option, a list of :class:`symdyn.Contact`; for
``contact_inverse_dynamics`` ``dt`` and ``compliance`` are required options too, and
``constraint_correction`` (nc numbers), ``friction`` and ``solve_ncp`` are options: fixed at
build time, since inputs are only ``q``/``v``/``pi``-sized, so each correction is one build) and ``"baselines"`` (the chain-rule and body-coordinate derivative
algorithms papers 003/004 compare IDSVA with). Spatial vectors and Jacobian rows are
``[angular; linear]``.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .names import c_identifier

LAYOUTS = ("casadi", "numpy")


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registered algorithm: the function itself, its inputs ``(name, 'q'|'v'|'pi'|'f')``
    (sizes nq, nv, 10 N and 6 N: the stacked external forces) and its outputs ``(name, rank)``
    (rank 0 scalar, 1 vector, 2 matrix, 3 tensor Gamma[i, j, k]).

    ``group``: see the module docstring. ``inertial``: the result depends on the inertias, so
    ``parameters="inertial"`` gives the function an input ``pi`` (frames and regressors do not:
    they keep their inputs)."""

    name: str
    function: Callable
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, int], ...]
    doc: str = ""
    group: str = "dynamics"
    inertial: bool = True

    def resolve(self) -> Callable:
        """The algorithm's function (kept for callers of the former string registry)."""
        return self.function

    def input_sizes(self, model) -> tuple[int, ...]:
        return tuple(_KIND_SIZES[kind](model) for _, kind in self.inputs)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.outputs)


_KIND_SIZES = {"q": lambda m: m.nq, "v": lambda m: m.nv, "pi": lambda m: 10 * m.N,
               "f": lambda m: 6 * m.N}
_Q, _QD, _QDD, _TAU = ("q", "q"), ("qd", "v"), ("qdd", "v"), ("tau", "v")
_F_EXT = ("f_ext", "f")   # stacked body forces: [n; f] of body i at rows 6 i .. 6 i + 5
_QRD, _QRDD = ("qr_d", "v"), ("qr_dd", "v")
PI_INPUT = ("pi", "pi")   # appended by parameters="inertial"


def _com_position(model, q, *, backend=None):
    """Centre of mass (3, world coordinates): ``center_of_mass(model, q)``."""
    from ..algorithms import center_of_mass

    return center_of_mass(model, q, backend=backend)


def _com_position_velocity(model, q, qd, *, backend=None):
    """``(c, cdot)``: ``center_of_mass(model, q, qd)``."""
    from ..algorithms import center_of_mass

    return center_of_mass(model, q, qd, backend=backend)


def _registry() -> dict[str, AlgorithmSpec]:
    """The algorithms the code generator knows, as callables (imported here, not by name)."""
    from .. import algorithms as alg
    from .. import contact
    from ..algorithms import chain_rule as cr
    from ..algorithms import idsva_body as ib
    from ..algorithms import regressors as reg

    return {s.name: s for s in [
        AlgorithmSpec("rnea", alg.rnea, (_Q, _QD, _QDD), (("tau", 1),),
                      "inverse dynamics tau = M qdd + C qd + g"),
        AlgorithmSpec("crba", alg.crba, (_Q,), (("M", 2),), "mass matrix M(q)"),
        AlgorithmSpec("aba", alg.aba, (_Q, _QD, _TAU), (("qdd", 1),),
                      "forward dynamics qdd = M^-1 (tau - C qd - g)"),
        AlgorithmSpec("nonlinear_effects", alg.nonlinear_effects, (_Q, _QD), (("h", 1),),
                      "C(q, qd) qd + g(q)"),
        AlgorithmSpec("gravity_vector", alg.gravity_vector, (_Q,), (("g", 1),),
                      "gravity torques g(q)"),
        AlgorithmSpec("coriolis_matrix", alg.coriolis_matrix, (_Q, _QD),
                      (("M", 2), ("Mdot", 2), ("C", 2)),
                      "M, dM/dt and the Coriolis matrix C(q, qd)"),
        AlgorithmSpec("christoffel", alg.christoffel, (_Q,), (("Gamma", 3),),
                      "Christoffel symbols Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] qd[k]"),
        AlgorithmSpec("christoffel_from_mass_matrix", alg.christoffel_from_mass_matrix, (_Q,),
                      (("Gamma", 3),),
                      "Christoffel symbols by differentiating M (eq. (4) baseline)"),
        AlgorithmSpec("rnea_derivatives", alg.rnea_derivatives, (_Q, _QD, _QDD),
                      (("dtau_dq", 2), ("dtau_dqd", 2)),
                      "partial derivatives of inverse dynamics (IDSVA)"),
        AlgorithmSpec("aba_derivatives", alg.aba_derivatives, (_Q, _QD, _TAU),
                      (("dqdd_dq", 2), ("dqdd_dqd", 2), ("Minv", 2)),
                      "partial derivatives of forward dynamics and M^-1"),
        # frames: the frame (and reference) are build-time options; nothing depends on inertias
        AlgorithmSpec("frame_placement", alg.frame_placement, (_Q,), (("R", 2), ("p", 1)),
                      "frame rotation (frame -> world) and origin in world coordinates",
                      "frames", False),
        AlgorithmSpec("frame_velocity", alg.frame_velocity, (_Q, _QD), (("v", 1),),
                      "frame spatial velocity [omega; v] in the reference", "frames", False),
        AlgorithmSpec("frame_jacobian", alg.frame_jacobian, (_Q,), (("J", 2),),
                      "frame Jacobian (6 x nv, rows [angular; linear]) in the reference",
                      "frames", False),
        AlgorithmSpec("frame_jacobian_time_variation", alg.frame_jacobian_time_variation,
                      (_Q, _QD), (("dJ", 2),), "dJ/dt of frame_jacobian", "frames", False),
        AlgorithmSpec("frame_classical_acceleration", alg.frame_classical_acceleration,
                      (_Q, _QD, _QDD), (("a", 1),),
                      "classical acceleration [alpha; pddot] of the frame", "frames", False),
        # centre of mass and centroidal momentum
        AlgorithmSpec("center_of_mass", _com_position, (_Q,), (("c", 1),),
                      "centre of mass (world coordinates)", "com"),
        AlgorithmSpec("center_of_mass_velocity", _com_position_velocity, (_Q, _QD),
                      (("c", 1), ("cdot", 1)), "centre of mass and its velocity", "com"),
        AlgorithmSpec("com_jacobian", alg.com_jacobian, (_Q,), (("Jc", 2),),
                      "centre-of-mass Jacobian (3 x nv)", "com"),
        AlgorithmSpec("centroidal_momentum_matrix", alg.centroidal_momentum_matrix, (_Q,),
                      (("Ag", 2),), "centroidal momentum matrix (6 x nv)", "com"),
        AlgorithmSpec("centroidal_momentum_matrix_time_variation",
                      alg.centroidal_momentum_matrix_time_variation, (_Q, _QD), (("dAg", 2),),
                      "dAg/dt", "com"),
        AlgorithmSpec("centroidal_momentum", alg.centroidal_momentum, (_Q, _QD), (("hg", 1),),
                      "centroidal momentum [angular; linear]", "com"),
        # energies (scalars: shape ())
        AlgorithmSpec("kinetic_energy", alg.kinetic_energy, (_Q, _QD), (("T", 0),),
                      "kinetic energy 1/2 qd^T M qd", "energy"),
        AlgorithmSpec("potential_energy", alg.potential_energy, (_Q,), (("V", 0),),
                      "potential energy (world origin as the reference)", "energy"),
        AlgorithmSpec("mechanical_energy", alg.mechanical_energy, (_Q, _QD), (("E", 0),),
                      "kinetic plus potential energy", "energy"),
        # regressors: linear in the inertial parameters, which they do not take
        AlgorithmSpec("joint_torque_regressor", reg.joint_torque_regressor, (_Q, _QD, _QDD),
                      (("Y", 2),), "Y (nv x 10N) with rnea(q, qd, qdd) = Y pi",
                      "regressors", False),
        AlgorithmSpec("slotine_li_regressor", reg.slotine_li_regressor,
                      (_Q, _QD, _QRD, _QRDD), (("Y", 2),),
                      "Y (nv x 10N) with Y pi = M qr_dd + C*(q, qd) qr_d + g",
                      "regressors", False),
        AlgorithmSpec("kinetic_energy_regressor", reg.kinetic_energy_regressor, (_Q, _QD),
                      (("Y", 2),), "Y (1 x 10N) with T = Y pi", "regressors", False),
        AlgorithmSpec("potential_energy_regressor", reg.potential_energy_regressor, (_Q,),
                      (("Y", 2),), "Y (1 x 10N) with V = Y pi", "regressors", False),
        # kinematic derivatives (the frame and reference are build-time options)
        AlgorithmSpec("frame_acceleration", alg.frame_acceleration, (_Q, _QD, _QDD),
                      (("a", 1),), "frame spatial acceleration [alpha; a] in the reference",
                      "frames", False),
        AlgorithmSpec("frame_velocity_derivatives", alg.frame_velocity_derivatives, (_Q, _QD),
                      (("dv_dq", 2), ("dv_dqd", 2)), "partials of frame_velocity", "derivatives",
                      False),
        AlgorithmSpec("frame_acceleration_derivatives", alg.frame_acceleration_derivatives,
                      (_Q, _QD, _QDD), (("dv_dq", 2), ("da_dq", 2), ("da_dqd", 2),
                                        ("da_dqdd", 2)),
                      "partials of frame_velocity and frame_acceleration", "derivatives", False),
        AlgorithmSpec("frame_kinematic_hessian", alg.frame_kinematic_hessian, (_Q,),
                      (("H", 3),), "H[:, i, j] = dJ[:, i]/dq_j of frame_jacobian", "derivatives",
                      False),
        AlgorithmSpec("generalized_gravity_derivatives", alg.generalized_gravity_derivatives,
                      (_Q,), (("dg_dq", 2),), "dg/dq of gravity_vector", "derivatives"),
        AlgorithmSpec("static_torque_derivatives", alg.static_torque_derivatives, (_Q, _F_EXT),
                      (("dtau_dq", 2),), "d/dq of the static torque g(q) - sum_i J_i^T f_i "
                      "(f_ext stacked: body i's [n; f], body coordinates, at rows 6 i .. 6 i + 5)",
                      "derivatives"),
        AlgorithmSpec("centroidal_dynamics_derivatives", alg.centroidal_dynamics_derivatives,
                      (_Q, _QD, _QDD), (("dh_dq", 2), ("dhdot_dq", 2), ("dhdot_dqd", 2),
                                        ("dhdot_dqdd", 2)),
                      "partials of the centroidal momentum and its rate", "derivatives"),
        # second-order derivatives (SO-IDSVA): [i, j, k] = d^2 y_i / (dx_j dz_k)
        AlgorithmSpec("rnea_second_derivatives", alg.rnea_second_derivatives, (_Q, _QD, _QDD),
                      (("d2tau_dq2", 3), ("d2tau_dqd2", 3), ("d2tau_dq_dqd", 3), ("dM_dq", 3)),
                      "second-order partials of inverse dynamics and dM/dq", "derivatives"),
        AlgorithmSpec("aba_second_derivatives", alg.aba_second_derivatives, (_Q, _QD, _TAU),
                      (("d2qdd_dq2", 3), ("d2qdd_dqd2", 3), ("d2qdd_dq_dqd", 3),
                       ("dMinv_dq", 3)),
                      "second-order partials of forward dynamics and dM^-1/dq", "derivatives"),
        # contact dynamics: the contacts are a build-time option
        AlgorithmSpec("contact_jacobian", contact.contact_jacobian, (_Q,), (("J", 2),),
                      "stacked contact Jacobian", "contact", False),
        AlgorithmSpec("contact_jacobian_time_variation", contact.contact_jacobian_time_variation,
                      (_Q, _QD), (("dJ", 2),), "dJ/dt of contact_jacobian", "contact", False),
        # dt, compliance, constraint_correction (nc numbers, default zero), friction and
        # solve_ncp are build-time options like the contacts: inputs are q/v/pi-sized only
        AlgorithmSpec("contact_inverse_dynamics", contact.contact_inverse_dynamics,
                      (_Q, _QD, _QDD), (("tau", 1), ("lam", 1)),
                      "torques and forces of compliant contacts (friction cones optional)",
                      "contact"),
        AlgorithmSpec("constraint_dynamics", contact.constraint_dynamics, (_Q, _QD, _TAU),
                      (("qdd", 1), ("lam", 1)),
                      "accelerations and contact forces of the KKT system", "contact"),
        AlgorithmSpec("impulse_dynamics", contact.impulse_dynamics, (_Q, ("qd_minus", "v")),
                      (("qd_plus", 1), ("impulse", 1)),
                      "velocities after an impact and the contact impulses", "contact"),
        AlgorithmSpec("kkt_matrix_inverse", contact.kkt_matrix_inverse, (_Q,), (("Kinv", 2),),
                      "inverse of the KKT matrix [M J^T; J -damping I]", "contact"),
        AlgorithmSpec("constraint_dynamics_derivatives", contact.constraint_dynamics_derivatives,
                      (_Q, _QD, _TAU), (("dqdd_dq", 2), ("dqdd_dqd", 2), ("dqdd_dtau", 2),
                                        ("dlam_dq", 2), ("dlam_dqd", 2), ("dlam_dtau", 2)),
                      "partials of constraint_dynamics", "contact"),
        AlgorithmSpec("impulse_dynamics_derivatives", contact.impulse_dynamics_derivatives,
                      (_Q, ("qd_minus", "v")), (("dqdplus_dq", 2), ("dqdplus_dqdminus", 2),
                                                ("dimpulse_dq", 2), ("dimpulse_dqdminus", 2)),
                      "partials of impulse_dynamics", "contact"),
        # baselines of papers 003/004: same outputs as rnea_/aba_derivatives, other algorithms
        AlgorithmSpec("rnea_derivatives_cr", cr.rnea_derivatives_cr, (_Q, _QD, _QDD),
                      (("dtau_dq", 2), ("dtau_dqd", 2)),
                      "RNEA_CR: chain rule through every RNEA step (paper 004 baseline)",
                      "baselines"),
        AlgorithmSpec("aba_derivatives_cr", cr.aba_derivatives_cr, (_Q, _QD, _TAU),
                      (("dqdd_dq", 2), ("dqdd_dqd", 2), ("Minv", 2)),
                      "ABA_CR: chain rule through the three ABA passes", "baselines"),
        AlgorithmSpec("fd_derivatives_cr", cr.fd_derivatives_cr, (_Q, _QD, _TAU),
                      (("dqdd_dq", 2), ("dqdd_dqd", 2), ("Minv", 2)),
                      "FD_CR: RNEA_CR at qdd = aba, then eq. (5) by DMM", "baselines"),
        AlgorithmSpec("rnea_derivatives_body", ib.rnea_derivatives_body, (_Q, _QD, _QDD),
                      (("dtau_dq", 2), ("dtau_dqd", 2)),
                      "IDSVA in body coordinates (paper 003 Fig. 3)", "baselines"),
        AlgorithmSpec("rnea_derivatives_ancestor", ib.rnea_derivatives_ancestor,
                      (_Q, _QD, _QDD), (("dtau_dq", 2), ("dtau_dqd", 2)),
                      "IDSVA with the ancestor loop of paper 004 App. B", "baselines"),
    ]}


ALGORITHMS: dict[str, AlgorithmSpec] = _registry()
GROUPS = ("dynamics", "frames", "com", "energy", "regressors", "derivatives", "contact",
          "baselines")

# parameters of the algorithm functions that are inputs or fixed by the code generator
_NOT_OPTIONS = {"model", "q", "qd", "qdd", "tau", "qr_d", "qr_dd", "qd_minus", "backend",
                "f_ext"}


def algorithm_spec(algorithm: str) -> AlgorithmSpec:
    """The :class:`AlgorithmSpec` named ``algorithm`` (ValueError listing the known names)."""
    spec = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    if spec is None:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    return spec


def available_algorithms(group: str | tuple[str, ...] = "dynamics") -> list[str]:
    """Names of the registered algorithms of ``group`` (a name of :data:`GROUPS`, a tuple of them,
    or ``"all"``). The default, ``"dynamics"``, lists the algorithms whose inputs are state
    vectors only and that need no build-time option (rnea ... aba_derivatives)."""
    groups = GROUPS if group == "all" else (group,) if isinstance(group, str) else tuple(group)
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        raise ValueError(f"unknown group(s) {', '.join(map(repr, bad))}; choose from "
                         f"{', '.join(GROUPS)} or 'all'")
    return [n for n, s in ALGORITHMS.items() if s.group in groups]


def _signature_options(algorithm: str):
    spec = algorithm_spec(algorithm)
    inputs = set(spec.input_names)
    return [p for p in inspect.signature(spec.function).parameters.values()
            if p.name not in _NOT_OPTIONS and p.name not in inputs
            and p.kind is not inspect.Parameter.VAR_KEYWORD]


def algorithm_options(algorithm: str) -> dict[str, Any]:
    """Keyword options the algorithm accepts that have defaults (name -> default), e.g.
    ``factorization``, ``reference``; see :func:`required_options` for the others."""
    return {p.name: p.default for p in _signature_options(algorithm)
            if p.default is not inspect.Parameter.empty}


def required_options(algorithm: str) -> tuple[str, ...]:
    """Options the build must fix because they have no default: ``("frame",)`` for the frame
    functions (a frame or joint name of the model, or a body index), ``()`` otherwise."""
    return tuple(p.name for p in _signature_options(algorithm)
                 if p.default is inspect.Parameter.empty)


def check_options(algorithm: str, options: dict) -> dict:
    """Validate algorithm options (TypeError naming the unknown ones and the accepted ones, or a
    missing required one)."""
    allowed = [*required_options(algorithm), *algorithm_options(algorithm)]
    bad = sorted(set(options) - set(allowed))
    if bad:
        acc = ", ".join(allowed) if allowed else "none"
        raise TypeError(f"{algorithm}: unknown option(s) {', '.join(bad)}; accepted: {acc}")
    missing = [r for r in required_options(algorithm) if r not in options]
    if missing:
        raise TypeError(f"{algorithm} needs the build-time option(s) {', '.join(missing)} "
                        f"(e.g. {{{algorithm!r}: {{'frame': 'tool0'}}}}: a frame or joint name of "
                        "the model, or a body index)")
    return dict(options)


@dataclass
class TraceInfo:
    """Sizes and timings of one traced function (seconds; counts from CasADi)."""

    algorithm: str
    n_nodes: int
    n_instructions: int
    sz_w: int
    t_trace: float
    t_function: float
    output_shapes: dict = field(default_factory=dict)


def _symbols(model, spec):
    import casadi as ca

    return [ca.SX.sym(name, n) for (name, _), n in zip(spec.inputs, spec.input_sizes(model))]


def _as_outputs(spec, raw) -> list:
    if len(spec.outputs) == 1:
        return [raw]
    if not isinstance(raw, (tuple, list)) or len(raw) != len(spec.outputs):
        raise RuntimeError(f"{spec.name} returned {type(raw).__name__}; expected "
                           f"{len(spec.outputs)} outputs {spec.output_names}")
    return list(raw)


def _shape_and_layouts(name: str, rank: int, value):
    """(numpy shape, casadi-layout SX, numpy-layout SX column) of one traced output."""
    import casadi as ca

    if rank == 3:
        from ..backends import get_backend

        try:
            value = get_backend("casadi").pages(value)        # [Gamma[:, :, k] for every k]
        except TypeError as exc:
            raise RuntimeError(f"output {name}: {exc}") from None
        if not value:
            raise RuntimeError(f"output {name}: a rank-3 result without pages")
        r, c = value[0].shape
        shape: tuple[int, ...] = (r, c, len(value))
        natural = ca.horzcat(*value)
        stacked = ca.horzcat(*[ca.vec(ca.densify(g).T) for g in value])   # [(i*c + j), k]
        flat = ca.vec(ca.densify(stacked.T))                                  # C order (i, j, k)
        return shape, natural, flat
    if not isinstance(value, ca.SX):
        raise RuntimeError(f"output {name}: expected casadi.SX, got {type(value).__name__}")
    if rank == 0:
        if value.numel() != 1:
            raise RuntimeError(f"output {name}: expected a scalar, got shape {value.shape}")
        v = ca.densify(ca.reshape(value, 1, 1))
        return (), v, v
    if rank == 1:
        v = value if value.shape[1] == 1 else value.T
        return (v.shape[0],), v, ca.densify(v)
    shape = tuple(value.shape)
    return shape, value, ca.vec(ca.densify(value.T))


# Frames tried for algorithms with a ``frame`` option (coriolis_matrix) when it is "auto" or not
# given: the body frame (Algorithm 1 as printed) gives the smaller graph on models with sparse
# geometry (axis-aligned joints, tree rotations of +-90 deg: serial:20 11.4k vs 17.4k SX
# instructions, talos 21.3k vs 28.1k), the root frame on random geometry from about 6 bodies on,
# where transforming the dense force blocks up the tree dominates (serial_chain(20, seed=1)
# 31.8k vs 22.4k). Generated-code time follows the instruction count, so the smaller one is used.
FRAME_CANDIDATES = ("body", "root")

# --- aba_derivatives method rule (method="auto" in generated code) -------------------------------
# The eq. (5) routes of AUTO_METHODS are traced and the smallest graph is kept, AZA's weighted by
# 1 / AZA_MAX_RATIO (each AZA step is a dependent 6-vector recursion: more time per instruction).
# "ltdl" (M^-1 through the sparse LTDL factors, no ABA pass) has the smallest graph on branched
# trees and robots and the lowest time per instruction; "dmm" is not a candidate (never the
# smallest nor the fastest). On long chains of simple geometry AZA's graph is small enough to win.
# AZA_MAX_RATIO is where AZA's time per call matches LTDL's (experiments/derivatives_compiled.py,
# DMM vs AZA crossover). The choice is info["method"] and the manifest's "method".
AUTO_METHODS = ("ltdl", "aza")
AZA_MAX_RATIO = 0.72

def exact_rotations(model):
    """``model``, or a copy whose rotation entries (tree transforms and frames) and joint-axis
    entries within 4 eps of 0, 1 or -1 are exactly 0, 1 or -1 (:func:`symdyn.snapping.snap_model`
    at :data:`~symdyn.snapping.ROUNDING_SNAP`).

    URDF ``rpy`` angles of +-pi/2 give entries like cos(pi/2) = 6.1e-17: numerically zero, but
    CasADi must keep every product with them, which fills the sparse joint rotations
    (robot:panda: coriolis_matrix 5.1k -> 3.7k SX instructions, crba 1.5k -> 1.0k). The change is
    below one rounding of a rotation entry, so results agree with the model's to rounding. The
    larger leftovers of angles written to 10-12 digits are snapped when a file is loaded
    (``snap=`` of the loaders, :meth:`symdyn.Model.snapped`).
    """
    from ..snapping import ROUNDING_SNAP, snap_model

    snapped = snap_model(model, ROUNDING_SNAP)
    return snapped if snapped.snap_report is not None and snapped.snap_report.entries else model


def casadi_function(model, algorithm: str, *, name: str | None = None, layout: str = "casadi",
                    cse: bool = True, info: dict | None = None, snap_rotations: bool = True,
                    emit_order: bool = False, parameters: str | None = None, **options):
    """A ``casadi.Function`` evaluating ``algorithm`` on ``model``.

    Inputs are named after the algorithm's arguments (``q``, ``qd``, ``qdd``, ``tau``) and
    outputs after its results (``tau``, ``M``, ``qdd``, ``M``/``Mdot``/``C``, ``Gamma``,
    ``dtau_dq``/``dtau_dqd``, ``dqdd_dq``/``dqdd_dqd``/``Minv``, ``h``, ``g``); see the module
    docstring for the two output layouts. ``options`` are the algorithm's own keyword options
    (e.g. ``factorization="simple"`` for ``coriolis_matrix``, ``method="aza"`` for
    ``aba_derivatives``). ``cse`` applies CasADi's common-subexpression elimination.
    ``name`` (default: the algorithm's name) is sanitized into a C identifier. When ``info`` is a
    dict it receives a :class:`TraceInfo` under ``"trace"``. The result can be saved with
    ``f.save("file.casadi")`` and loaded with ``casadi.Function.load``. ``snap_rotations``
    traces :func:`exact_rotations` of the model (numerically-zero rotation entries made exact).
    ``emit_order=True`` (``layout="numpy"`` only, for code generation) permutes each nv x nv
    output into the tree-sweep order of :mod:`symdyn.codegen.emit_order`: entry k holds the
    row-major entry ``info["orders"][o][k]`` (``info`` must be given). For ``coriolis_matrix``,
    ``frame="auto"`` (the default here) traces the body- and root-frame forms and keeps the
    smaller graph (``FRAME_CANDIDATES``; the choice is ``info["frame"]``); for
    ``aba_derivatives``, ``method="auto"`` traces DMM and AZA and keeps AZA where its graph is at
    most ``AZA_MAX_RATIO`` times DMM's (the choice is ``info["method"]``).

    ``parameters="inertial"``: the function takes the 10 N inertial parameters ``pi`` (Pinocchio's
    order, :func:`symdyn.inertial_parameters`) as a last input instead of the model's
    inertias, for the algorithms whose result depends on them (``AlgorithmSpec.inertial``; see
    :mod:`symdyn.codegen.parameters`); the others keep their inputs (``info["parameters"]`` says
    which applied). Frame functions need ``frame=`` (a frame or joint name, or a body index).
    """
    import casadi as ca

    from ..model import Model

    if not isinstance(model, Model):
        raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    if model.is_symbolic:
        raise ValueError(f"model {model.name!r} has SymPy parameters; substitute numbers with "
                         "model.subs(...) before generating CasADi functions")
    spec = algorithm_spec(algorithm)
    fn = spec.function
    frames: list[str | None] = [None]
    if "frame" in algorithm_options(algorithm) and options.get("frame", "auto") == "auto":
        options.pop("frame", None)
        frames = list(FRAME_CANDIDATES)
    methods: list[str | None] = [None]
    if algorithm_options(algorithm).get("method") == "auto" and \
            options.get("method", "auto") == "auto":
        options.pop("method", None)
        methods = list(AUTO_METHODS)  # aba_derivatives method rule (AUTO_METHODS)
    options = check_options(algorithm, options)
    if snap_rotations:
        model = exact_rotations(model)
    if emit_order and (layout != "numpy" or info is None):
        raise ValueError("emit_order=True needs layout='numpy' and an info dict")
    fname = c_identifier(name if name is not None else algorithm)
    from .parameters import check_parameters

    parameters = check_parameters(parameters)
    pspec = spec if parameters is None or not spec.inertial else \
        replace(spec, inputs=spec.inputs + (PI_INPUT,))
    best = None
    for frame in frames:  # frame="auto": keep the smaller graph (module docstring)
        for method in methods:  # method="auto": smallest graph, AZA's weighted (AUTO_METHODS)
            opts = dict(options)
            if frame is not None:
                opts["frame"] = frame
            if method is not None:
                opts["method"] = method
            traced = _trace(model, pspec, fn, opts, layout, cse, emit_order, fname)
            n = traced[0].n_instructions() / (AZA_MAX_RATIO if method == "aza" else 1.0)
            if best is None or n < best[0]:
                best = (n,) + traced + (frame, method)
    assert best is not None  # frames and methods are never empty
    _, f, shapes, orders, t_trace, t_function, frame, method = best
    if info is not None:
        info["function"] = best[1]
        info["trace"] = TraceInfo(algorithm, f.n_nodes(), f.n_instructions(), f.sz_w(), t_trace,
                                  t_function, shapes)
        if emit_order:
            info["orders"] = orders
        if frame is not None:
            info["frame"] = frame
        if method is not None:
            info["method"] = method
        info["parameters"] = parameters if pspec is not spec else None
        info["input_names"] = pspec.input_names
        info["input_sizes"] = pspec.input_sizes(model)
    return f


def _trace(model, spec, fn, options, layout, cse, emit_order, fname):
    """(casadi.Function, output shapes, emit orders or None, trace and Function times): the
    algorithm recorded (:func:`record_algorithm`) and lowered to one SX graph."""
    import casadi as ca

    from . import recursive

    syms = _symbols(model, spec)
    t0 = time.perf_counter()
    program, shapes = record_algorithm(model, spec, options, name=fname, cse=cse)
    entries = recursive.lower(program, syms)
    t_trace = time.perf_counter() - t0
    outs = []
    for oname, values in zip(spec.output_names, entries):
        natural, flat = _layouts(shapes[oname], values)
        outs.append(natural if layout == "casadi" else flat)
    orders = None
    if emit_order:
        from .emit_order import output_orders

        orders = output_orders(model, [shapes[o] for o in spec.output_names])
        outs = [o if p is None else o[p] for o, p in zip(outs, orders)]
    t0 = time.perf_counter()
    f = ca.Function(fname, syms, outs, list(spec.input_names), list(spec.output_names),
                    {"cse": bool(cse)})
    return f, shapes, orders, t_trace, time.perf_counter() - t0


def recorded_options(algorithm: str, options: dict) -> dict:
    """``options`` of ``algorithm`` as its recorded form takes them: ``frame="auto"`` is
    :data:`symdyn.codegen.recursive.RECURSIVE_FRAME`, ``method="auto"`` the last method :data:`~symdyn.codegen.choose.RECURSIVE_OPTIONS`
    allows (aba_derivatives: ``"aza"``)."""
    from .recursive import RECURSIVE_FRAME, RECURSIVE_OPTIONS
    options = dict(options)
    if "frame" in algorithm_options(algorithm) and options.get("frame", "auto") == "auto":
        options["frame"] = RECURSIVE_FRAME
    if "method" in RECURSIVE_OPTIONS.get(algorithm, {}) and \
            options.get("method", "auto") == "auto":
        options["method"] = RECURSIVE_OPTIONS[algorithm]["method"][-1]
    return options


def record_algorithm(model, spec: AlgorithmSpec, options: dict, *, name: str,
                     cse: bool = True) -> tuple[Any, dict[str, tuple[int, ...]]]:
    """The recorded program of ``spec`` on ``model`` and its outputs' NumPy shapes: step by step
    where the algorithm has a recorded form (:func:`symdyn.codegen.choose.choose_form`), else the
    whole algorithm as one step (one kernel traced with the CasADi backend; ``spec`` with the
    ``pi`` input traces :func:`~symdyn.codegen.parameters.parametrized_model`). Every output is
    then a dense result; :func:`symdyn.codegen.recursive.lower` makes the unrolled graph of
    either."""
    from . import recursive
    from .choose import choose_form

    parametrized = spec.inputs[-1] == PI_INPUT
    sizes = list(spec.input_sizes(model))
    if choose_form(model, spec.name, "auto", parameters="inertial" if parametrized else None,
                   options=options)[0] == "measure":
        program = recursive.record(model, spec.function, sizes, name=name, cse=cse, fuse=1,
                                   **options)
        shapes = {oname: _numpy_shape(rank, shape) for (oname, rank), (*_, shape)
                  in zip(spec.outputs, program.outputs)}
        return program, shapes
    shapes = {}

    def whole_algorithm(B, *xs):
        traced_model = model
        if parametrized:
            from .parameters import parametrized_model

            traced_model, xs = parametrized_model(model, xs[-1]), xs[:-1]
        raw = spec.function(traced_model, *xs, backend=B, **options)
        flat = []
        for (oname, rank), value in zip(spec.outputs, _as_outputs(spec, raw)):
            shapes[oname], _, column = _shape_and_layouts(oname, rank, value)
            flat.append(column)
        return tuple(flat)
    whole_algorithm.__name__ = spec.name

    def one_step(model, *xs, backend):
        return backend.call_step(whole_algorithm, xs)
    return recursive.record(model, one_step, sizes, name=name, cse=cse, fuse=1), shapes


def _numpy_shape(rank: int, recorded: tuple[int, ...]) -> tuple[int, ...]:
    n = 1
    for d in recorded:
        n *= d
    return () if rank == 0 else (n,) if rank == 1 else tuple(recorded)


def _layouts(shape: tuple[int, ...], entries: list):
    """(casadi-layout SX, numpy-layout SX column) of one output from its row-major entries (see
    the module docstring; structural zeros where an entry is an exact zero, casadi layout)."""
    import casadi as ca

    flat = ca.vertcat(*entries)
    if not shape:
        return flat, flat
    if len(shape) == 1:
        return ca.sparsify(flat), flat
    if len(shape) == 2:
        return ca.sparsify(ca.reshape(flat, shape[1], shape[0]).T), flat
    n1, n2, n3 = shape
    pages = [ca.reshape(flat[k::n3], n2, n1).T for k in range(n3)]   # Gamma[:, :, k]
    return ca.sparsify(ca.horzcat(*pages)), flat
