"""Closed-form M, C* and Gamma of a model with symbolic joint coordinates (and optionally
symbolic masses, lengths and inertias).

The generic algorithms run on SymEngine symbols when SymEngine is installed (much faster graph
construction) and otherwise on SymPy; results are converted to SymPy for simplification
(:mod:`symdyn.symbolic.simplify`) and printing (:mod:`symdyn.symbolic.export`).

Conventions: q = (q1, ..., q_nq) and qd = (qd1, ..., qd_nv) are SymPy symbols named 1-based as in
the papers; ``Gamma[i, j, k]`` (0-based indices) with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]``.

``model`` is a :class:`symdyn.Model` (from the builders of :mod:`symdyn.models`,
:func:`symdyn.load_urdf`, ...) or a model spec string such as ``"planar:3:symbolic"``, which is
built by :func:`symdyn.io.specs.from_spec` exactly as the ``symdyn`` command does; anything else
is a TypeError. ``progress=True`` prints progress on stderr (see :mod:`symdyn.progress`:
a status line on a terminal, periodic whole lines in a log).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable

import sympy as sp

from ..progress import Progress, make_progress
from .results import SymbolicResult, as_model, symmetric_jk
from .simplify import operation_count, simplify_kinematic

try:  # optional fast core
    import symengine as _se
except ImportError:  # pragma: no cover - depends on the environment
    _se = None


def coordinates(model) -> tuple[list[sp.Symbol], list[sp.Symbol]]:
    """Real SymPy symbols q1..q_nq and qd1..qd_nv."""
    model = as_model(model, "coordinates")
    q = list(sp.symbols(f"q1:{model.nq + 1}", real=True))
    qd = list(sp.symbols(f"qd1:{model.nv + 1}", real=True))
    return q, qd


def _engine_inputs(q, engine):
    if engine == "symengine":
        if _se is None:
            raise ImportError("engine='symengine' needs the symengine package (pip install symengine)")
        return [_se.sympify(x) for x in q]
    if engine == "sympy":
        return sp.Matrix(q)
    raise ValueError(f"unknown engine {engine!r}; use 'symengine' or 'sympy'")


def _default_engine() -> str:
    return "symengine" if _se is not None else "sympy"


def _converter(model, q, qd):
    """SymEngine -> SymPy conversion that restores the original symbols (and their assumptions)."""
    by_name = {str(s): s for s in [*q, *qd, *model.parameters()]}

    def convert(x):
        if isinstance(x, sp.Basic):
            return x
        e = sp.sympify(x)
        return e.xreplace({s: by_name[s.name] for s in e.free_symbols if s.name in by_name})
    return convert


def _start(kind: str, model, progress, engine: str | None, detail: str = ""):
    """Validated model, its engine and the Progress (or None) of one symbolic computation."""
    model = as_model(model, kind)
    eng = engine or _default_engine()
    prog = make_progress(progress, f"{kind} of {model.name}")
    return model, eng, prog, f"{eng}{', ' + detail if detail else ''}, nv = {model.nv}"


@contextmanager
def _building(prog: Progress | None, detail: str):
    if prog is None:
        yield
        return
    t0 = time.perf_counter()
    with prog.running("building expressions", detail):
        yield
    prog.line(f"built the expressions in {time.perf_counter() - t0:.1f} s")


def _finish(kind, model, shape, raw: dict, q, qd, simplify, progress, seconds, measure=False,
            **flags):
    ops_raw = operation_count(raw.values()) if measure else None
    entries = {}
    report = progress.loop("simplifying", len(raw)) if (progress and simplify) else None
    t0 = time.perf_counter()
    items = list(raw.items())
    for n, (key, e) in enumerate(items):
        e = simplify_kinematic(e, q) if simplify else e
        if e != 0:
            entries[key] = e
        if report:
            report(n + 1)
    if simplify:
        seconds["simplify"] = time.perf_counter() - t0
    return SymbolicResult(kind, model.name, shape, entries, q, qd, model.parameters(),
                          seconds=seconds, ops_raw=ops_raw, **flags)


def mass_matrix(model, simplify: bool = True, engine: str | None = None,
                progress: bool | Progress = False, measure: bool = False,
                structured: bool = False, parameters: str | None = None):
    """Closed-form M(q) (CRBA with symbolic q); entries i <= j.

    ``structured=True``: a :class:`symdyn.symbolic.structured.StructuredResult` (shared
    definitions in recursion order, then entries; numeric models, or ``parameters="inertial"``
    for the 10 N inertial parameters as symbols) instead of flattened simplified entries."""
    if structured or parameters is not None:
        from . import structured as st

        return st.mass_matrix(model, parameters=parameters, progress=progress)
    from ..algorithms.crba import crba

    model, eng, prog, detail = _start("mass_matrix", model, progress, engine, "CRBA")
    q, qd = coordinates(model)
    t0 = time.perf_counter()
    with _building(prog, detail):
        M = crba(model, _engine_inputs(q, eng))
        conv = _converter(model, q, qd)
        raw = {(i, j): conv(M[i, j]) for i in range(model.nv) for j in range(i, model.nv)}
    seconds = {"algorithm": time.perf_counter() - t0}
    return _finish("mass_matrix", model, (model.nv, model.nv), raw, q, qd, simplify, prog,
                   seconds, measure, symmetric=True)


def coriolis_matrix(model, simplify: bool = True, engine: str | None = None,
                    progress: bool | Progress = False, measure: bool = False,
                    structured: bool = False, parameters: str | None = None):
    """Closed-form Christoffel-consistent C*(q, qd) (paper 000 Algorithm 1 with eq. (10)).
    ``structured`` and ``parameters``: as in :func:`mass_matrix`."""
    if structured or parameters is not None:
        from . import structured as st

        return st.coriolis_matrix(model, parameters=parameters, progress=progress)
    from ..algorithms.coriolis import coriolis_matrix as alg1

    model, eng, prog, detail = _start("coriolis_matrix", model, progress, engine, "Algorithm 1")
    q, qd = coordinates(model)
    t0 = time.perf_counter()
    with _building(prog, detail):
        _, _, C = alg1(model, _engine_inputs(q, eng), _engine_inputs(qd, eng))
        conv = _converter(model, q, qd)
        raw = {(i, j): conv(C[i, j]) for i in range(model.nv) for j in range(model.nv)}
    seconds = {"algorithm": time.perf_counter() - t0}
    return _finish("coriolis_matrix", model, (model.nv, model.nv), raw, q, qd, simplify,
                   prog, seconds, measure)


def christoffel(model, simplify: bool = True, method: str = "algorithm2", engine: str | None = None,
                progress: bool | Progress = False, measure: bool = False,
                structured: bool = False, parameters: str | None = None):
    """Closed-form Christoffel symbols of the first kind: nonzero unique Gamma[i, j, k].

    ``method="algorithm2"``: paper 000 Algorithm 2 (generalized) with symbolic inputs;
    ``method="eq4"``: symbolic partial derivatives of M (eq. (4)), the baseline of Table 2.
    ``structured`` and ``parameters``: as in :func:`mass_matrix` (Algorithm 2 only).
    """
    if structured or parameters is not None:
        if method != "algorithm2":
            raise ValueError("structured closed forms trace Algorithm 2: leave method out")
        from . import structured as st

        return st.christoffel(model, parameters=parameters, progress=progress)
    from ..algorithms.christoffel import christoffel as algorithm2
    from ..algorithms.christoffel import christoffel_from_mass_matrix as eq4

    fn: Callable[..., Any]
    if method == "algorithm2":
        fn = algorithm2
    elif method == "eq4":
        fn = eq4
    else:
        raise ValueError(f"unknown method {method!r}; use 'algorithm2' or 'eq4'")
    model, eng, prog, detail = _start("christoffel", model, progress, engine,
                                      {"algorithm2": "Algorithm 2", "eq4": "eq. (4)"}[method])
    q, qd = coordinates(model)
    t0 = time.perf_counter()
    with _building(prog, detail):
        Gamma = fn(model, _engine_inputs(q, eng))
        sym = symmetric_jk(model)
        n = model.nv
        conv = _converter(model, q, qd)
        raw = {}
        for i in range(n):
            for j in range(n):
                for k in range(j if sym else 0, n):
                    e = Gamma[i, j, k]      # the backends' rank-3 contract (a Tensor3 here)
                    if e != 0:
                        raw[i, j, k] = conv(e)
    seconds = {"algorithm": time.perf_counter() - t0}
    return _finish("christoffel", model, (n, n, n), raw, q, qd, simplify, prog, seconds,
                   measure, symmetric_jk=sym)


def symbolize_inertias(model):
    """A copy of a numeric model whose inertial parameters are positive/real SymPy symbols:
    body i (1-based) gets mass m_i, CoM (cx_i, cy_i, cz_i) and inertia about the CoM with entries
    Ixx_i, Ixy_i, ... (tree transforms, joints and gravity stay numeric)."""
    from ..model import Body, Model
    from ..spatial import Transform

    model = as_model(model, "symbolize_inertias")
    if model.is_symbolic:
        return model
    bodies = []
    for i, name in enumerate(model.names):
        k = i + 1
        m = sp.Symbol(f"m{k}", positive=True)
        c = sp.Matrix(sp.symbols(f"cx{k} cy{k} cz{k}", real=True))
        xx, yy, zz = sp.symbols(f"Ixx{k} Iyy{k} Izz{k}", positive=True)
        xy, xz, yz = sp.symbols(f"Ixy{k} Ixz{k} Iyz{k}", real=True)
        Ic = sp.Matrix([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        p = model.parents[i]
        E, r = model.Xtree[i]
        bodies.append(Body(name, None if p < 0 else model.names[p], model.joints[i], m, c, Ic,
                           Transform(sp.Matrix(E.tolist()), sp.Matrix(list(r.reshape(3))))))
    return Model(bodies, gravity=sp.Matrix(list(model.gravity.reshape(3))), name=f"{model.name}_symbolic",
                 check_inertias=False)
