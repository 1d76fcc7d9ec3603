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
from sympy.printing.c import C99CodePrinter
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from .results import SymbolicResult

if TYPE_CHECKING:
    from .structured import StructuredResult

_C_RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "out", "sin", "cos", "tan", "sqrt", "pow", "exp", "log", "fabs",
    "y0", "y1", "yn", "j0", "j1", "jn", "M_PI",
}
_LIBM = {"gamma", "lgamma", "tgamma", "erf", "erfc", "exp2", "log2", "log10", "cbrt", "hypot",
         "atan2", "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil", "round", "trunc",
         "fmod", "fmin", "fmax", "expm1", "log1p", "remainder", "nan", "signbit", "sincos", "memset"}

_TITLES = {"mass_matrix": "Mass matrix", "coriolis_matrix": "Christoffel-consistent Coriolis matrix",
           "christoffel": "Christoffel symbols of the first kind",
           "joint_torque_regressor": "Joint-torque regressor (tau = Y pi)"}
_LATEX_SYMBOL = {"christoffel": r"\Gamma", "mass_matrix": "M", "coriolis_matrix": r"C^\star",
                 "joint_torque_regressor": "Y"}


class _PyPrinter(PythonCodePrinter):
    """Floats with round-trip precision, ``x**2`` as ``x*x``."""

    def __init__(self):
        super().__init__({"fully_qualified_modules": True})

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Pow(self, expr, rational=False):
        if expr.exp == 2:
            b = self.parenthesize(expr.base, PRECEDENCE["Mul"])
            return f"{b}*{b}"
        return super()._print_Pow(expr, rational)


class _CPrinter(C99CodePrinter):
    """Floats with round-trip precision, ``x**2`` as ``x*x``, ``1/x`` as ``1.0/x``."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Pow(self, expr):
        if expr.exp == 2:
            b = self.parenthesize(expr.base, PRECEDENCE["Mul"])
            return f"{b}*{b}"
        if expr.exp == -1:
            return f"1.0/{self.parenthesize(expr.base, PRECEDENCE['Pow'])}"
        return super()._print_Pow(expr)


class _LatexPrinter(LatexPrinter):
    """Floats with round-trip precision, exponents as ``\\cdot 10^{e}``."""

    def _print_Float(self, expr):
        text = repr(float(expr))
        if "e" in text:
            mant, ex = text.split("e")
            return rf"{mant} \cdot 10^{{{int(ex)}}}"
        return text


def _printer(cls, renames: dict):
    """``expr -> code`` with ``renames`` (symbol -> symbol) applied first."""
    pr = cls()
    return lambda e: pr.doprint(e.xreplace(renames))


def _document(frag: str, document: bool) -> str:
    if not document:
        return frag
    return ("\\documentclass{article}\n\\usepackage{amsmath}\n\\usepackage[margin=2cm]{geometry}\n"
            "\\allowdisplaybreaks\n\\begin{document}\n" + frag + "\\end{document}\n")


def _latex_index(key) -> str:
    return ",".join(str(i + 1) for i in key)


def _structured(res: object) -> StructuredResult | None:
    """``res`` if it is a StructuredResult (a result with ``definitions``), else None."""
    return res if hasattr(res, "definitions") and hasattr(res, "entries") else None  # type: ignore[return-value]


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


# --- shared helpers --------------------------------------------------------------------------------
def _tex_escape(s: str) -> str:
    return re.sub(r"([_&%$#{}])", r"\\\1", s)


def flat_index(shape: tuple, key: tuple) -> int:
    """Row-major position of ``key`` in an array of ``shape``."""
    idx = 0
    for d, k in zip(shape, key):
        idx = idx * d + k
    return idx


def _mirror_keys(res: SymbolicResult | StructuredResult, key) -> list:
    """``key`` and the entries equal to it by the result's symmetry."""
    keys = [key]
    if res.symmetric and key[0] != key[1]:
        keys.append((key[1], key[0]))
    if res.symmetric_jk and len(key) == 3 and key[1] != key[2]:
        keys.append((key[0], key[2], key[1]))
    return keys


def _used(exprs) -> set:
    used: set = set()
    for e in exprs:
        used |= e.free_symbols
    return used


def _renames(symbols, reserved: set) -> dict:
    """Symbols whose names cannot be used as they are in generated code (not an identifier, a
    ``reserved`` name or Python keyword, or equal to an earlier name once sanitized) -> symbols
    named ``s_<name>``; the others print as they are."""
    out, used = {}, set()
    for s in symbols:
        name = re.sub(r"\W", "_", s.name)
        if not name or name[0].isdigit() or name in reserved or keyword.iskeyword(name) or name in used:
            name = f"s_{name}"
            while name in used or name in reserved:
                name += "_"
        if name != s.name:
            out[s] = sp.Symbol(name, real=True)
        used.add(name)
    return out


def _loads(inputs: dict, used: set, ren: dict, fmt: str) -> list:
    """One line per used input symbol: ``fmt.format(name, array, index)``."""
    return [fmt.format(ren.get(s, s), a, k) for a, syms in inputs.items()
            for k, s in enumerate(syms) if s in used]


def _python_tail(res, inputs: dict, temps, entries: dict, ren: dict) -> list:
    """Input loads, temporaries and the output array of a generated Python function."""
    code = _printer(_PyPrinter, ren)
    lines = _loads(inputs, _used([e for _, e in temps] + list(entries.values())), ren,
                   "    {} = {}[{}]")
    lines += [f"    {ren.get(s, s)} = {code(e)}" for s, e in temps]
    lines.append(f"    out = np.zeros({tuple(res.shape)})")
    for key in sorted(entries):
        targets = " = ".join(f"out[{', '.join(map(str, k))}]" for k in _mirror_keys(res, key))
        lines.append(f"    {targets} = {code(entries[key])}")
    return lines + ["    return out"]


def _c_source(res, fname: str, comment: str, inputs: dict, temps, entries: dict,
              symbols: list) -> str:
    """``void fname(const double *<input>, ..., double *out)``: loads, temporaries, the full
    output row-major."""
    ren = _renames(symbols, _C_RESERVED | _LIBM | set(inputs))
    code = _printer(_CPrinter, ren)
    size = 1
    for d in res.shape:
        size *= d
    sig = ", ".join([f"const double *{a}" for a in inputs] + ["double *out"])
    lines = [f"/* {_TITLES.get(res.kind, res.kind)} of '{res.model_name}'{comment}; out has {size} "
             "entries (row-major). */", "#include <math.h>", "#include <string.h>", "",
             f"void {fname}({sig}) {{"]
    lines += _loads(inputs, _used([e for _, e in temps] + list(entries.values())), ren,
                    "  const double {} = {}[{}];")
    lines.append("  " + " ".join(f"(void){a};" for a in inputs))
    lines += [f"  const double {ren.get(s, s)} = {code(e)};" for s, e in temps]
    lines.append(f"  memset(out, 0, {size} * sizeof(double));")
    for key in sorted(entries):
        c = code(entries[key])
        lines += [f"  out[{flat_index(res.shape, k)}] = {c};" for k in _mirror_keys(res, key)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _identifier(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else "f_" + s


def _c_function_name(function_name: str | None, kind: str) -> str:
    fname = _identifier(function_name or kind)
    if fname in _C_RESERVED or fname in _LIBM:
        raise ValueError(f"C function name {fname!r} clashes with a C keyword or a math.h "
                         "function: choose another function_name")
    return fname


# --- LaTeX -----------------------------------------------------------------------------------------
def to_latex(res: SymbolicResult | StructuredResult, document: bool = True) -> str:
    """A LaTeX document (or fragment) listing the nonzero unique entries (and, for Gamma, C*).
    A StructuredResult prints its definitions as an aligned list, then its entries."""
    if (st := _structured(res)) is not None:
        return _document(_structured_latex(st), document)
    res = _check(res, "to_latex")
    tex = _LatexPrinter({"symbol_names": {s: rf"\dot{{q}}_{{{k + 1}}}"
                                          for k, s in enumerate(res.qd)}}).doprint
    title = _TITLES.get(res.kind, res.kind)
    conv = {"christoffel": r"Indices are 1-based; $C^\star_{ij} = \sum_k \Gamma_{ijk}\,\dot q_k$."
            + (r" $\Gamma_{ijk} = \Gamma_{ikj}$; only $j \le k$ is listed." if res.symmetric_jk else ""),
            "mass_matrix": r"Indices are 1-based; $M$ is symmetric, only $i \le j$ is listed.",
            "coriolis_matrix": r"Indices are 1-based."}[res.kind]
    lines = [rf"\section*{{{title}: {_tex_escape(res.model_name)}}}",
             conv + f" All entries not listed are zero ({len(res.entries)} nonzero listed).",
             r"\begin{align*}"]
    sym = _LATEX_SYMBOL[res.kind]
    body = []
    for key in sorted(res.entries):
        lhs = rf"{sym}_{{{_latex_index(key)}}}"
        if res.kind == "christoffel" and res.symmetric_jk and key[1] != key[2]:
            lhs += rf" = {sym}_{{{_latex_index((key[0], key[2], key[1]))}}}"
        body.append(rf"{lhs} &= {tex(res.entries[key])}")
    lines += [" \\\\\n".join(body) if body else r"\text{(all zero)}", r"\end{align*}"]
    if res.kind == "christoffel":
        C = coriolis_from_christoffel(res)
        lines += [r"\subsection*{Coriolis matrix $C^\star(q, \dot q)$}", r"\begin{align*}",
                  " \\\\\n".join(rf"C^\star_{{{_latex_index(k)}}} &= {tex(v)}"
                                 for k, v in sorted(C.items())) or r"\text{(all zero)}",
                  r"\end{align*}"]
    return _document("\n".join(lines) + "\n", document)


def _structured_latex(res: StructuredResult) -> str:
    names = {}
    for k, s in enumerate(res.inputs.get("qd", [])):
        names[s] = rf"\dot{{q}}_{{{k + 1}}}"
    for k, s in enumerate(res.inputs.get("qdd", [])):
        names[s] = rf"\ddot{{q}}_{{{k + 1}}}"
    for s, _ in res.definitions:
        m = re.fullmatch(r"([a-z]+)(\d+)", s.name)
        if m:
            names[s] = f"{m.group(1)}_{{{m.group(2)}}}"
    for k, s in enumerate(res.params):
        names[s] = rf"\pi_{{{k + 1}}}"
    tex = _LatexPrinter({"symbol_names": names}).doprint
    sym = _LATEX_SYMBOL.get(res.kind, res.kind)
    title = _TITLES.get(res.kind, res.kind)
    lines = [rf"\section*{{{title}: {_tex_escape(res.model_name)}}}",
             rf"Structured closed form: {len(res.definitions)} definitions in the order of the "
             rf"algorithm's recursion ($s_i = \sin q_i$, $c_i = \cos q_i$, $t_k$ shared "
             rf"intermediate values), then {len(res.entries)} nonzero unique entries "
             rf"(1-based indices; entries not listed are zero"
             + ("; $M_{ij} = M_{ji}$" if res.symmetric else "")
             + (r"; $\Gamma_{ijk} = \Gamma_{ikj}$, $j \le k$ listed" if res.symmetric_jk else "")
             + ").",
             r"\subsection*{Definitions}", r"\begin{align*}",
             " \\\\\n".join(rf"{tex(s)} &= {tex(e)}" for s, e in res.definitions) or r"\text{(none)}",
             r"\end{align*}", r"\subsection*{Entries}", r"\begin{align*}",
             " \\\\\n".join(rf"{sym}_{{{_latex_index(key)}}} &= {tex(res.entries[key])}"
                            for key in sorted(res.entries)) or r"\text{(all zero)}",
             r"\end{align*}"]
    return "\n".join(lines) + "\n"


# --- Python ----------------------------------------------------------------------------------------
def _inputs(res: SymbolicResult):
    inputs = list(res.q)
    if res.kind == "coriolis_matrix":
        inputs = inputs + list(res.qd)
    return inputs


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
    the argument and the expected length. A StructuredResult gives
    ``NAME(q[, qd[, qdd]][, pi])``: its definitions as assignments, then its entries."""
    if (st := _structured(res)) is not None:
        return _structured_python(st, function_name)
    res = _check(res, "to_python")
    fname = _identifier(function_name or res.kind)
    ren = _renames(_inputs(res) + list(res.params), {"q", "qd", "p", "out", "np", "math", "_vector"})
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
    if res.params:
        names = ", ".join(map(str, res.params))
        lines.append("    if p is None:")
        lines.append(f"        raise ValueError('p must hold {len(res.params)} parameters: "
                     f"{names}')")
        lines.append(f"    p = _vector(p, {len(res.params)}, 'p', 'the parameters {names}')")
    else:
        lines.append("    if p is not None:")
        lines.append("        _vector(p, 0, 'p', 'this function has no parameters; leave p out')")
    inputs = {"q": res.q, "qd": res.qd if res.kind == "coriolis_matrix" else [], "p": res.params}
    return "\n".join(lines + _python_tail(res, inputs, repl, reduced, ren)) + "\n"


def _structured_inputs(res: StructuredResult) -> dict:
    return {**res.inputs, **({"pi": res.params} if res.params else {})}


def _structured_symbols(res: StructuredResult) -> list:
    return [s for v in res.inputs.values() for s in v] + list(res.params) + \
        [s for s, _ in res.definitions]


def _structured_python(res: StructuredResult, function_name: str | None) -> str:
    fname = _identifier(function_name or res.kind)
    inputs = _structured_inputs(res)
    ren = _renames(_structured_symbols(res), {"np", "math", "out", *inputs})
    lines = [f'"""{_TITLES.get(res.kind, res.kind)} of {res.model_name!r}: structured closed '
             f'form generated by symdyn on {date.today()}', "",
             f"{len(res.definitions)} definitions, {len(res.entries)} entries, "
             f"{res.operations} operations.", '"""', "import math", "", "import numpy as np",
             "", "", f"def {fname}({', '.join(inputs)}):"]
    for a, syms in inputs.items():
        lines += [f"    {a} = np.asarray({a}, dtype=float).reshape(-1)",
                  f"    if {a}.size != {len(syms)}:",
                  f"        raise ValueError(f'{a} must hold {len(syms)} values, got {{{a}.size}}')"]
    return "\n".join(lines + _python_tail(res, inputs, res.definitions, res.entries, ren)) + "\n"


def lambdify(res: SymbolicResult | StructuredResult):
    """A callable evaluating the result with NumPy: ``f(q[, qd], p=None) -> array``.

    Called with the wrong number of arguments it raises a TypeError, with vectors of the wrong
    length a ValueError; both say what it takes (e.g. ``f(q, p) takes q (2 joint coordinates),
    p (7 parameters: ...)``). A StructuredResult gives ``f(q[, qd[, qdd]][, pi])``."""
    import functools
    import inspect

    ns: dict = {}
    if (st := _structured(res)) is not None:
        exec(compile(_structured_python(st, "f"), f"<symdyn structured {st.kind}>", "exec"), ns)
        return ns["f"]
    res = _check(res, "lambdify")
    exec(compile(to_python(res, "f"), f"<symdyn {res.kind}>", "exec"), ns)
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


# --- C ---------------------------------------------------------------------------------------------
def to_c(res: SymbolicResult | StructuredResult, function_name: str | None = None) -> str:
    """C source of ``void NAME(const double *q, [const double *qd,] const double *p, double *out)``
    writing the full quantity (row-major; Gamma as out[(i*n + j)*n + k]), with CSE temporaries.
    A StructuredResult gives ``void NAME(const double *q, [const double *qd, ...]
    [const double *pi,] double *out)`` with its definitions as temporaries. A function name
    that is a C keyword or a math.h function is a ValueError."""
    if (st := _structured(res)) is not None:
        return _c_source(st, _c_function_name(function_name, st.kind),
                         f": structured closed form generated by symdyn. {len(st.definitions)} "
                         f"definitions, {len(st.entries)} entries, {st.operations} operations",
                         _structured_inputs(st), st.definitions, st.entries,
                         _structured_symbols(st))
    res = _check(res, "to_c")
    repl, reduced = res.cse()
    inputs = {"q": res.q, **({"qd": res.qd} if res.kind == "coriolis_matrix" else {}),
              "p": res.params}
    return _c_source(res, _c_function_name(function_name, res.kind),
                     f", generated by symdyn; parameters p: "
                     f"{', '.join(map(str, res.params)) or 'none'}",
                     inputs, repl, reduced, _inputs(res) + list(res.params))
