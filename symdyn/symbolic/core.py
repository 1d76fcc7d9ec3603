"""Closed-form M, C* and Gamma of a model with symbolic joint coordinates (and optionally
symbolic masses, lengths and inertias).

The generic algorithms run on SymEngine symbols when SymEngine is installed (much faster graph
construction) and otherwise on SymPy; results are converted to SymPy for simplification
(:mod:`symdyn.symbolic.simplify`) and printing (:mod:`symdyn.symbolic.export`).

Conventions: q = (q1, ..., q_nq) and qd = (qd1, ..., qd_nv) are SymPy symbols named 1-based as in
the papers; ``Gamma[i, j, k]`` (0-based indices) with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]``.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import sympy as sp

from .simplify import operation_count, simplify_kinematic

try:  # optional fast core
    import symengine as _se
except ImportError:  # pragma: no cover - depends on the environment
    _se = None


def coordinates(model) -> tuple[list[sp.Symbol], list[sp.Symbol]]:
    """Real SymPy symbols q1..q_nq and qd1..qd_nv."""
    q = list(sp.symbols(f"q1:{model.nq + 1}", real=True))
    qd = list(sp.symbols(f"qd1:{model.nv + 1}", real=True))
    return q, qd


@dataclass
class SymbolicResult:
    """Nonzero unique entries of a symbolic quantity.

    ``kind`` is 'mass_matrix', 'coriolis_matrix' or 'christoffel'; ``entries`` maps 0-based index
    tuples to SymPy expressions. Symmetry used: M[i, j] = M[j, i] (i <= j stored); for Gamma,
    when ``symmetric_jk`` only j <= k is stored and Gamma[i, k, j] = Gamma[i, j, k].
    """

    kind: str
    model_name: str
    shape: tuple
    entries: dict
    q: list
    qd: list
    params: list
    symmetric: bool = False          # mass matrix symmetry
    symmetric_jk: bool = False       # Christoffel symmetry in (j, k)
    seconds: dict = field(default_factory=dict)
    ops_raw: int | None = None       # operation count before simplification (measure=True)

    def full(self):
        """The full quantity as a SymPy Matrix (M, C) or a rank-3 Array (Gamma)."""
        if len(self.shape) == 2:
            out = sp.zeros(*self.shape)
            for (i, j), e in self.entries.items():
                out[i, j] = e
                if self.symmetric:
                    out[j, i] = e
            return out
        out = sp.MutableDenseNDimArray.zeros(*self.shape)
        for (i, j, k), e in self.entries.items():
            out[i, j, k] = e
            if self.symmetric_jk:
                out[i, k, j] = e
        return out

    @property
    def operations(self) -> int:
        return operation_count(self.entries.values())

    def cse(self, optimizations="basic"):
        """Common-subexpression elimination over all entries: (replacements, {index: expr})."""
        keys = list(self.entries)
        repl, reduced = sp.cse([self.entries[k] for k in keys], optimizations=optimizations)
        return repl, dict(zip(keys, reduced))

    def cse_operations(self) -> int:
        repl, reduced = self.cse()
        return operation_count([e for _, e in repl]) + operation_count(reduced.values())

    def __repr__(self) -> str:
        return (f"<SymbolicResult {self.kind} of {self.model_name!r}: shape {self.shape}, "
                f"{len(self.entries)} nonzero unique entries, {self.operations} ops>")


def _engine_inputs(model, q, engine):
    if engine == "symengine":
        if _se is None:
            raise ImportError("engine='symengine' needs the symengine package (pip install symengine)")
        return [_se.sympify(x) for x in q]
    if engine == "sympy":
        return sp.Matrix(q)
    raise ValueError(f"unknown engine {engine!r}; use 'symengine' or 'sympy'")


def _default_engine(model) -> str:
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


def _progress_printer(label: str, enabled: bool) -> Callable | None:
    if not enabled:
        return None
    t0 = time.perf_counter()

    def report(done, total):
        if done == total or done % max(1, total // 20) == 0:
            sys.stderr.write(f"\r{label}: simplified {done}/{total} entries "
                             f"({time.perf_counter() - t0:.1f} s)")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()
    return report


def _finish(kind, model, shape, raw: dict, q, qd, simplify, progress, seconds, measure=False,
            **flags):
    ops_raw = operation_count(raw.values()) if measure else None
    entries = {}
    report = _progress_printer(f"{kind} of {model.name}", progress)
    t0 = time.perf_counter()
    items = list(raw.items())
    for n, (key, e) in enumerate(items):
        e = simplify_kinematic(e, q) if simplify else e
        if e != 0:
            entries[key] = e
        if report:
            report(n + 1, len(items))
    if simplify:
        seconds["simplify"] = time.perf_counter() - t0
    return SymbolicResult(kind, model.name, shape, entries, q, qd, model.parameters(),
                          seconds=seconds, ops_raw=ops_raw, **flags)


def mass_matrix(model, simplify: bool = True, engine: str | None = None,
                progress: bool = False, measure: bool = False) -> SymbolicResult:
    """Closed-form M(q) (CRBA with symbolic q); entries i <= j."""
    from ..algorithms.crba import crba

    q, qd = coordinates(model)
    t0 = time.perf_counter()
    M = crba(model, _engine_inputs(model, q, engine or _default_engine(model)))
    conv = _converter(model, q, qd)
    raw = {(i, j): conv(M[i, j]) for i in range(model.nv) for j in range(i, model.nv)}
    seconds = {"algorithm": time.perf_counter() - t0}
    return _finish("mass_matrix", model, (model.nv, model.nv), raw, q, qd, simplify, progress,
                   seconds, measure, symmetric=True)


def coriolis_matrix(model, simplify: bool = True, engine: str | None = None,
                    progress: bool = False, measure: bool = False) -> SymbolicResult:
    """Closed-form Christoffel-consistent C*(q, qd) (paper 000 Algorithm 1 with eq. (10))."""
    from ..algorithms.coriolis import coriolis_matrix as alg1

    q, qd = coordinates(model)
    eng = engine or _default_engine(model)
    t0 = time.perf_counter()
    _, _, C = alg1(model, _engine_inputs(model, q, eng), _engine_inputs(model, qd, eng))
    conv = _converter(model, q, qd)
    raw = {(i, j): conv(C[i, j]) for i in range(model.nv) for j in range(model.nv)}
    seconds = {"algorithm": time.perf_counter() - t0}
    return _finish("coriolis_matrix", model, (model.nv, model.nv), raw, q, qd, simplify,
                   progress, seconds, measure)


def _symmetric_jk(model) -> bool:
    """Gamma is symmetric in (j, k) for generalized coordinates of 1-DoF joints with constant S."""
    return all(j.nv == 1 and j.S_constant for j in model.joints)


def christoffel(model, simplify: bool = True, method: str = "algorithm2", engine: str | None = None,
                progress: bool = False, measure: bool = False) -> SymbolicResult:
    """Closed-form Christoffel symbols of the first kind: nonzero unique Gamma[i, j, k].

    ``method="algorithm2"``: paper 000 Algorithm 2 (generalized) with symbolic inputs;
    ``method="eq4"``: symbolic partial derivatives of M (eq. (4)), the baseline of Table 2.
    """
    from ..algorithms.christoffel import christoffel as algorithm2
    from ..algorithms.christoffel import christoffel_from_mass_matrix as eq4

    if method == "algorithm2":
        fn = algorithm2
    elif method == "eq4":
        fn = eq4
    else:
        raise ValueError(f"unknown method {method!r}; use 'algorithm2' or 'eq4'")
    q, qd = coordinates(model)
    t0 = time.perf_counter()
    Gamma = fn(model, _engine_inputs(model, q, engine or _default_engine(model)))
    sym = _symmetric_jk(model)
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
    return _finish("christoffel", model, (n, n, n), raw, q, qd, simplify, progress, seconds,
                   measure, symmetric_jk=sym)


def symbolize_inertias(model):
    """A copy of a numeric model whose inertial parameters are positive/real SymPy symbols:
    body i (1-based) gets mass m_i, CoM (cx_i, cy_i, cz_i) and inertia about the CoM with entries
    Ixx_i, Ixy_i, ... (tree transforms, joints and gravity stay numeric)."""
    from ..model import Body, Model
    from ..spatial import Transform

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
