"""casadi.Function objects of the symdyn algorithms, with named inputs and outputs.

Every algorithm is traced once with the CasADi SX backend (the same code that runs with NumPy
and SymPy) and wrapped in a ``casadi.Function``. Two output layouts:

* ``layout="casadi"`` (default, for CasADi users and ``.casadi`` files): vectors are (n, 1)
  columns, matrices keep their shape (and CasADi's structural zeros); the Christoffel tensor is an
  nv x nv^2 matrix ``[Gamma[:, :, 0], ..., Gamma[:, :, nv-1]]`` (C*[i, j] = sum_k Gamma[i, j, k] qd[k]).
* ``layout="numpy"`` (the compiled fast path and the exported C sources): every output is a dense
  column holding the C-order (row-major) flattening of the NumPy result: ``tau[i]``,
  ``M[i * nv + j]``, ``Gamma[(i * nv + j) * nv + k]``.

Inputs are dense columns in both layouts: ``q`` (nq), ``qd``/``qdd``/``tau`` (nv).
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .names import c_identifier

LAYOUTS = ("casadi", "numpy")


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registered algorithm: the function itself, its inputs ``(name, 'q'|'v')`` and its
    outputs ``(name, rank)`` (rank 1 vector, 2 matrix, 3 tensor Gamma[i, j, k])."""

    name: str
    function: Callable
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, int], ...]
    doc: str = ""

    def resolve(self) -> Callable:
        """The algorithm's function (kept for callers of the former string registry)."""
        return self.function

    def input_sizes(self, model) -> tuple[int, ...]:
        return tuple(model.nq if kind == "q" else model.nv for _, kind in self.inputs)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.outputs)


_Q, _QD, _QDD, _TAU = ("q", "q"), ("qd", "v"), ("qdd", "v"), ("tau", "v")


def _registry() -> dict[str, AlgorithmSpec]:
    """The algorithms the code generator knows, as callables (imported here, not by name)."""
    from .. import algorithms as alg

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
    ]}


ALGORITHMS: dict[str, AlgorithmSpec] = _registry()

# parameters of the algorithm functions that are inputs or fixed by the code generator
_NOT_OPTIONS = {"model", "q", "qd", "qdd", "tau", "backend", "f_ext"}


def algorithm_spec(algorithm: str) -> AlgorithmSpec:
    """The :class:`AlgorithmSpec` named ``algorithm`` (ValueError listing the known names)."""
    spec = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    if spec is None:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    return spec


def available_algorithms() -> list[str]:
    """Names of the registered algorithms."""
    return list(ALGORITHMS)


def algorithm_options(algorithm: str) -> dict[str, Any]:
    """Keyword options the algorithm accepts (name -> default), e.g. ``factorization``."""
    fn = algorithm_spec(algorithm).function
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.name not in _NOT_OPTIONS and p.default is not inspect.Parameter.empty}


def check_options(algorithm: str, options: dict) -> dict:
    """Validate algorithm options (TypeError naming the unknown ones and the accepted ones)."""
    allowed = algorithm_options(algorithm)
    bad = sorted(set(options) - set(allowed))
    if bad:
        acc = ", ".join(allowed) if allowed else "none"
        raise TypeError(f"{algorithm}: unknown option(s) {', '.join(bad)}; accepted: {acc}")
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
    if rank == 1:
        v = value if value.shape[1] == 1 else value.T
        return (v.shape[0],), v, ca.densify(v)
    shape = tuple(value.shape)
    return shape, value, ca.vec(ca.densify(value.T))


# Frames tried for algorithms with a ``frame`` option (coriolis_matrix) when it is "auto" or not
# given: the body frame (Algorithm 1 as printed) gives the smaller graph on models with sparse
# geometry (axis-aligned joints, tree rotations of +-90 deg: serial:20 13.1k vs 17.4k SX
# instructions, talos 24.5k vs 28.3k), the root frame on random geometry, where transforming the
# dense force blocks up the tree dominates (serial_chain(20, seed=1) 38.6k vs 23.0k, N = 40:
# 135.7k vs 67.5k). Generated-code time follows the instruction count, so the smaller one is used.
FRAME_CANDIDATES = ("body", "root")

_ROTATION_SNAP = 4 * 2.0 ** -52   # 4 eps: below one rounding of a unit rotation entry


def exact_rotations(model):
    """``model``, or a copy whose tree-transform rotation entries within 4 eps of 0, 1 or -1 are
    exactly 0, 1 or -1.

    URDF ``rpy`` angles of +-pi/2 give entries like cos(pi/2) = 6.1e-17: numerically zero, but
    CasADi must keep every product with them, which fills the sparse joint rotations
    (robot:panda: coriolis_matrix 5.1k -> 3.7k SX instructions, crba 1.5k -> 1.0k). The change is
    below one rounding of a rotation entry, so results agree with the model's to rounding.
    """
    import numpy as np

    from ..spatial import Transform

    def snap(E):
        E = np.asarray(E, dtype=float)
        out = E.copy()
        for target in (0.0, 1.0, -1.0):
            out[np.abs(E - target) <= _ROTATION_SNAP] = target
        return out

    Es = [snap(X.E) for X in model.Xtree]
    if all(np.array_equal(E, X.E) for E, X in zip(Es, model.Xtree)):
        return model
    return model.replace(Xtree=[Transform(E, X.r) for E, X in zip(Es, model.Xtree)])


def casadi_function(model, algorithm: str, *, name: str | None = None, layout: str = "casadi",
                    cse: bool = True, info: dict | None = None, snap_rotations: bool = True,
                    emit_order: bool = False, **options):
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
    smaller graph (``FRAME_CANDIDATES``; the choice is ``info["frame"]``).
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
    options = check_options(algorithm, options)
    if snap_rotations:
        model = exact_rotations(model)
    if emit_order and (layout != "numpy" or info is None):
        raise ValueError("emit_order=True needs layout='numpy' and an info dict")
    fname = c_identifier(name if name is not None else algorithm)
    best = None
    for frame in frames:  # frame="auto": keep the smaller graph (module docstring)
        opts = options if frame is None else dict(options, frame=frame)
        traced = _trace(model, spec, fn, opts, layout, cse, emit_order, fname)
        if best is None or traced[0].n_instructions() < best[0].n_instructions():
            best = traced + (frame,)
    assert best is not None  # frames is never empty
    f, shapes, orders, t_trace, t_function, frame = best
    if info is not None:
        info["trace"] = TraceInfo(algorithm, f.n_nodes(), f.n_instructions(), f.sz_w(), t_trace,
                                  t_function, shapes)
        if emit_order:
            info["orders"] = orders
        if frame is not None:
            info["frame"] = frame
    return f


def _trace(model, spec, fn, options, layout, cse, emit_order, fname):
    """(casadi.Function, output shapes, emit orders or None, trace and Function times)."""
    import casadi as ca

    syms = _symbols(model, spec)
    t0 = time.perf_counter()
    raw = fn(model, *syms, backend="casadi", **options)
    t_trace = time.perf_counter() - t0
    outs, shapes = [], {}
    for (oname, rank), value in zip(spec.outputs, _as_outputs(spec, raw)):
        shape, natural, flat = _shape_and_layouts(oname, rank, value)
        shapes[oname] = shape
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
