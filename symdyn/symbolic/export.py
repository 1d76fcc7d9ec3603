"""Printing of closed-form results as LaTeX, Python and C (with common-subexpression elimination).

Index conventions of the generated code: matrices are row-major (``out[i*n + j]``); Gamma is
``out[(i*n + j)*n + k]`` with ``C*[i, j] = sum_k Gamma[i, j, k] qd[k]``. Inputs are ``q`` (joint
coordinates, length nq) and ``p`` (the model parameters, in the order of ``result.params``).
"""
from __future__ import annotations

import keyword
import re
from datetime import date
from typing import TYPE_CHECKING

import sympy as sp
from sympy.printing.pycode import pycode

from .core import SymbolicResult

if TYPE_CHECKING:
    from .structured import StructuredResult

_C_RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "q", "p", "out", "sin", "cos", "tan", "sqrt", "pow", "exp", "log", "fabs",
    "y0", "y1", "yn", "j0", "j1", "jn", "M_PI",
}

_TITLES = {"mass_matrix": "Mass matrix", "coriolis_matrix": "Christoffel-consistent Coriolis matrix",
           "christoffel": "Christoffel symbols of the first kind"}


def _latex_names(res: SymbolicResult) -> dict:
    return {s: rf"\dot{{q}}_{{{k + 1}}}" for k, s in enumerate(res.qd)}


def _index_latex(key) -> str:
    return ",".join(str(i + 1) for i in key)


def _structured(res: object) -> StructuredResult | None:
    """``res`` if it is a StructuredResult (printed by its own methods), else None."""
    from .structured import StructuredResult

    return res if isinstance(res, StructuredResult) else None


def _check(res, fn: str) -> SymbolicResult:
    if not isinstance(res, SymbolicResult):
        raise TypeError(f"{fn}: expected a SymbolicResult (from symdyn.symbolic.christoffel, "
                        f"coriolis_matrix or mass_matrix), got {type(res).__name__}")
    return res


def coriolis_from_christoffel(res: SymbolicResult) -> dict:
    """C*[i, j] = sum_k Gamma[i, j, k] qd[k] from a Christoffel result (nonzero entries)."""
    _check(res, "coriolis_from_christoffel")
    if res.kind != "christoffel":
        raise ValueError("coriolis_from_christoffel needs a christoffel result")
    C: dict = {}
    for (i, j, k), e in res.entries.items():
        C[i, j] = C.get((i, j), 0) + e * res.qd[k]
        if res.symmetric_jk and j != k:
            C[i, k] = C.get((i, k), 0) + e * res.qd[j]
    return {key: sp.collect(sp.expand(v), res.qd) for key, v in C.items() if v != 0}


def to_latex(res: SymbolicResult | StructuredResult, document: bool = True) -> str:
    """A LaTeX document (or fragment) listing the nonzero unique entries (and, for Gamma, C*).
    A StructuredResult prints its definitions as an aligned list, then its entries."""
    if (s := _structured(res)) is not None:
        return s.to_latex(document)
    res = _check(res, "to_latex")
    names = _latex_names(res)
    lines = []
    title = _TITLES.get(res.kind, res.kind)
    lines.append(rf"\section*{{{title}: {_tex_escape(res.model_name)}}}")
    conv = {"christoffel": r"Indices are 1-based; $C^\star_{ij} = \sum_k \Gamma_{ijk}\,\dot q_k$."
            + (r" $\Gamma_{ijk} = \Gamma_{ikj}$; only $j \le k$ is listed." if res.symmetric_jk else ""),
            "mass_matrix": r"Indices are 1-based; $M$ is symmetric, only $i \le j$ is listed.",
            "coriolis_matrix": r"Indices are 1-based."}[res.kind]
    lines.append(conv + f" All entries not listed are zero ({len(res.entries)} nonzero listed).")
    sym = {"christoffel": r"\Gamma", "mass_matrix": "M", "coriolis_matrix": r"C^\star"}[res.kind]
    lines.append(r"\begin{align*}")
    body = []
    for key in sorted(res.entries):
        lhs = rf"{sym}_{{{_index_latex(key)}}}"
        if res.kind == "christoffel" and res.symmetric_jk and key[1] != key[2]:
            lhs += rf" = {sym}_{{{_index_latex((key[0], key[2], key[1]))}}}"
        body.append(rf"{lhs} &= {sp.latex(res.entries[key], symbol_names=names)}")
    lines.append(" \\\\\n".join(body) if body else r"\text{(all zero)}")
    lines.append(r"\end{align*}")
    if res.kind == "christoffel":
        C = coriolis_from_christoffel(res)
        lines.append(r"\subsection*{Coriolis matrix $C^\star(q, \dot q)$}")
        lines.append(r"\begin{align*}")
        lines.append(" \\\\\n".join(rf"C^\star_{{{_index_latex(k)}}} &= {sp.latex(v, symbol_names=names)}"
                                    for k, v in sorted(C.items())) or r"\text{(all zero)}")
        lines.append(r"\end{align*}")
    frag = "\n".join(lines) + "\n"
    if not document:
        return frag
    return ("\\documentclass{article}\n\\usepackage{amsmath}\n\\usepackage[margin=2cm]{geometry}\n"
            "\\allowdisplaybreaks\n\\begin{document}\n" + frag + "\\end{document}\n")


def _tex_escape(s: str) -> str:
    return re.sub(r"([_&%$#{}])", r"\\\1", s)


def _flat_index(res: SymbolicResult, key) -> int:
    n = res.shape[0]
    if len(key) == 2:
        return key[0] * res.shape[1] + key[1]
    return (key[0] * n + key[1]) * n + key[2]


def _mirror_keys(res: SymbolicResult, key):
    keys = [key]
    if res.symmetric and key[0] != key[1]:
        keys.append((key[1], key[0]))
    if res.symmetric_jk and len(key) == 3 and key[1] != key[2]:
        keys.append((key[0], key[2], key[1]))
    return keys


def _used(res: SymbolicResult) -> set:
    used = set()
    for e in res.entries.values():
        used |= e.free_symbols
    return used


def _inputs(res: SymbolicResult):
    inputs = list(res.q)
    if res.kind == "coriolis_matrix":
        inputs = inputs + list(res.qd)
    return inputs


def _safe_names(symbols, reserved) -> dict:
    out, used = {}, set()
    for s in symbols:
        name = re.sub(r"\W", "_", s.name)
        if not name or name[0].isdigit() or name in reserved or keyword.iskeyword(name) or name in used:
            name = f"s_{name}"
            while name in used:
                name += "_"
        used.add(name)
        out[s] = sp.Symbol(name, real=True)
    return out


_VECTOR_HELPER = '''def _vector(x, n, name, what):
    """x as a float vector of length n, or a ValueError naming the argument and the length."""
    try:
        a = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {n} numbers ({what}), got {x!r}") from None
    if a.size != n:
        raise ValueError(f"{name} must hold {n} values ({what}), got {a.size}")
    return a
'''


def _signature(res: SymbolicResult, fname: str) -> str:
    """How the generated function is called, with the lengths it expects (for error messages)."""
    parts = [f"q ({len(res.q)} joint coordinates)"]
    if res.kind == "coriolis_matrix":
        parts.append(f"qd ({len(res.qd)} joint velocities)")
    parts.append(f"p ({len(res.params)} parameters: {', '.join(map(str, res.params))})"
                 if res.params else "no p (no parameters)")
    args = "q, qd" if res.kind == "coriolis_matrix" else "q"
    return f"{fname}({args}{', p' if res.params else ''}) takes " + ", ".join(parts)


def to_python(res: SymbolicResult | StructuredResult, function_name: str | None = None) -> str:
    """Source of a Python module with one function ``NAME(q[, qd], p=None) -> numpy array``.

    The function checks its arguments: q (and qd) must hold nq (nv) numbers and p the
    ``len(res.params)`` parameters in the order of ``res.params``; otherwise a ValueError names
    the argument and the expected length. A StructuredResult prints its own module
    (:meth:`symdyn.symbolic.structured.StructuredResult.to_python`)."""
    if (s := _structured(res)) is not None:
        return s.to_python(function_name)
    res = _check(res, "to_python")
    fname = _identifier(function_name or res.kind)
    ins = _inputs(res)
    ren = _safe_names(ins + list(res.params), {"q", "qd", "p", "out", "np", "math", "_vector"})
    repl, reduced = res.cse()
    lines = [f'"""{_TITLES.get(res.kind, res.kind)} of {res.model_name!r}, generated by symdyn on {date.today()}.',
             "",
             f"Parameters p (in order): {', '.join(str(s) for s in res.params) or 'none'}.",
             '"""', "import math", "", "import numpy as np", "", "",
             _VECTOR_HELPER, ""]
    args = "q, qd, p=None" if res.kind == "coriolis_matrix" else "q, p=None"
    lines.append(f"def {fname}({args}):")
    lines.append(f'    """{_signature(res, fname)}."""')
    lines.append(f"    q = _vector(q, {len(res.q)}, 'q', 'the joint coordinates')")
    if res.kind == "coriolis_matrix":
        lines.append(f"    qd = _vector(qd, {len(res.qd)}, 'qd', 'the joint velocities')")
    used = _used(res)
    for k, s in enumerate(res.q):
        if s in used:
            lines.append(f"    {ren[s]} = q[{k}]")
    if res.kind == "coriolis_matrix":
        for k, s in enumerate(res.qd):
            if s in used:
                lines.append(f"    {ren[s]} = qd[{k}]")
    if res.params:
        names = ", ".join(map(str, res.params))
        lines.append("    if p is None:")
        lines.append(f"        raise ValueError('p must hold {len(res.params)} parameters: "
                     f"{names}')")
        lines.append(f"    p = _vector(p, {len(res.params)}, 'p', 'the parameters {names}')")
        for k, s in enumerate(res.params):
            if s in used:
                lines.append(f"    {ren[s]} = p[{k}]")
    else:
        lines.append("    if p is not None:")
        lines.append("        _vector(p, 0, 'p', 'this function has no parameters; leave p out')")
    for sym, e in repl:
        lines.append(f"    {sym} = {pycode(e.xreplace(ren), fully_qualified_modules=True)}")
    lines.append(f"    out = np.zeros({res.shape})")
    for key in sorted(reduced):
        code = pycode(reduced[key].xreplace(ren), fully_qualified_modules=True)
        targets = " = ".join(f"out[{', '.join(map(str, k))}]" for k in _mirror_keys(res, key))
        lines.append(f"    {targets} = {code}")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def lambdify(res: SymbolicResult | StructuredResult):
    """A callable evaluating the result with NumPy: ``f(q[, qd], p=None) -> array``.

    Called with the wrong number of arguments it raises a TypeError, with vectors of the wrong
    length a ValueError; both say what it takes (e.g. ``f(q, p) takes q (2 joint coordinates),
    p (7 parameters: ...)``). A StructuredResult gives ``f(q[, qd[, qdd]][, pi])``."""
    if (s := _structured(res)) is not None:
        return s.lambdify()
    import functools
    import inspect

    res = _check(res, "lambdify")
    src = to_python(res, "f")
    ns: dict = {}
    exec(compile(src, f"<symdyn {res.kind}>", "exec"), ns)
    fn = ns["f"]
    sig = inspect.signature(fn)
    usage = _signature(res, "f")

    @functools.wraps(fn)
    def f(*args, **kwargs):
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{usage}; {exc}") from None
        return fn(*args, **kwargs)
    return f


def _identifier(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "f_" + s
    return s


def to_c(res: SymbolicResult | StructuredResult, function_name: str | None = None) -> str:
    """C source of ``void NAME(const double *q, [const double *qd,] const double *p, double *out)``
    writing the full quantity (row-major; Gamma as out[(i*n + j)*n + k]), with CSE temporaries.
    A StructuredResult prints its definitions as temporaries
    (:meth:`symdyn.symbolic.structured.StructuredResult.to_c`)."""
    if (s := _structured(res)) is not None:
        return s.to_c(function_name)
    res = _check(res, "to_c")
    fname = _identifier(function_name or res.kind)
    ins = _inputs(res)
    ren = _safe_names(ins + list(res.params), _C_RESERVED)
    repl, reduced = res.cse()
    size = 1
    for d in res.shape:
        size *= d
    args = "const double *q, const double *qd, const double *p, double *out" \
        if res.kind == "coriolis_matrix" else "const double *q, const double *p, double *out"
    lines = [f"/* {_TITLES.get(res.kind, res.kind)} of '{res.model_name}', generated by symdyn.",
             f"   out has {size} entries; parameters p: {', '.join(map(str, res.params)) or 'none'}. */",
             "#include <math.h>", "#include <string.h>", "",
             f"void {fname}({args}) {{"]
    used = _used(res)
    for k, s in enumerate(res.q):
        if s in used:
            lines.append(f"  const double {ren[s]} = q[{k}];")
    if res.kind == "coriolis_matrix":
        for k, s in enumerate(res.qd):
            if s in used:
                lines.append(f"  const double {ren[s]} = qd[{k}];")
    for k, s in enumerate(res.params):
        if s in used:
            lines.append(f"  const double {ren[s]} = p[{k}];")
    lines.append("  (void)q; (void)p;" if res.kind != "coriolis_matrix" else "  (void)q; (void)qd; (void)p;")
    for sym, e in repl:
        lines.append(f"  const double {sym} = {sp.ccode(e.xreplace(ren))};")
    lines.append(f"  memset(out, 0, {size} * sizeof(double));")
    for key in sorted(reduced):
        code = sp.ccode(reduced[key].xreplace(ren))
        for k in _mirror_keys(res, key):
            lines.append(f"  out[{_flat_index(res, k)}] = {code};")
    lines.append("}")
    return "\n".join(lines) + "\n"
