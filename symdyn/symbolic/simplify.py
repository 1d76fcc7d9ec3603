"""Simplification of robot-kinematics expressions.

Entries of M, C and Gamma are polynomials in sin(q_i), cos(q_i) (revolute joints), in q_i
(prismatic joints) and in the model parameters. :func:`trig_normal_form` rewrites sin/cos of each
joint angle as symbols s_i, c_i, expands, and reduces with s_i^2 = 1 - c_i^2 until every s_i
appears at most linearly. The generators s_i^2 + c_i^2 - 1 have pairwise coprime leading terms,
so they form a Groebner basis and the result is a canonical form: two such expressions are equal
exactly when their normal forms are equal. :func:`simplify_kinematic` maps the normal form back
to sin/cos, factors it term-wise for reading, and optionally folds sums of angles.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import sympy as sp


def _trig_symbols(q: Sequence[sp.Symbol]):
    s = [sp.Dummy(f"s{i}") for i in range(len(q))]
    c = [sp.Dummy(f"c{i}") for i in range(len(q))]
    fwd = {}
    for qi, si, ci in zip(q, s, c):
        fwd[sp.sin(qi)] = si
        fwd[sp.cos(qi)] = ci
    return s, c, fwd


def _reduce(expr: sp.Expr, s, c) -> sp.Expr:
    """Expand and replace s_i^k (k >= 2) by s_i^(k-2) (1 - c_i^2) until no s_i^2 remains."""
    e = sp.expand(expr)
    if not s:
        return e
    gens = [g for pair in zip(s, c) for g in pair]
    present = [g for g in gens if e.has(g)]
    if not present:
        return e
    poly = sp.Poly(e, *present)
    out = sp.S.Zero
    idx = {g: k for k, g in enumerate(present)}
    for monom, coeff in poly.terms():
        term = coeff
        for g, k in zip(present, monom):
            term *= g ** k
        out += term
    # term-by-term reduction of s_i powers (polynomial division by s_i^2 + c_i^2 - 1)
    for si, ci in zip(s, c):
        if si in idx:
            out = sp.expand(sp.rem(sp.Poly(out, si), sp.Poly(si ** 2 + ci ** 2 - 1, si)).as_expr())
    return out


def trig_normal_form(expr: sp.Expr, q: Sequence[sp.Symbol]) -> sp.Expr:
    """Canonical polynomial form of ``expr`` in sin(q_i), cos(q_i) (see the module docstring).

    Other appearances of q_i (prismatic joints, sums of angles) stay as they are: expand sums of
    angles first (``sympy.expand_trig``) when they occur.
    """
    expr = sp.sympify(expr)
    if any(isinstance(a, (sp.sin, sp.cos)) and not a.args[0].is_Symbol for a in expr.atoms(sp.sin, sp.cos)):
        expr = sp.expand_trig(expr)
    s, c, fwd = _trig_symbols(q)
    e = _reduce(expr.xreplace(fwd), s, c)
    back = {si: sp.sin(qi) for si, qi in zip(s, q)}
    back.update({ci: sp.cos(qi) for ci, qi in zip(c, q)})
    return e.xreplace(back)


def equal(a: sp.Expr, b: sp.Expr, q: Sequence[sp.Symbol]) -> bool:
    """Exact equality of two kinematic expressions through their normal forms."""
    d = trig_normal_form(sp.sympify(a) - sp.sympify(b), q)
    return d == 0 or sp.simplify(d) == 0


def simplify_kinematic(expr: sp.Expr, q: Sequence[sp.Symbol], fold_angles: bool = True) -> sp.Expr:
    """A readable simplified form: the normal form, with sums of angles folded back
    (s1 c2 + c1 s2 -> sin(q1 + q2)) when ``fold_angles`` and that shortens the expression, and
    common factors pulled out."""
    e = trig_normal_form(expr, q)
    if e == 0:
        return sp.S.Zero
    if fold_angles and e.has(sp.sin, sp.cos):
        folded = sp.trigsimp(e)
        if sp.count_ops(folded) < sp.count_ops(e):
            e = folded
    f = sp.factor_terms(e)
    return f if sp.count_ops(f) <= sp.count_ops(e) else e


def simplify_all(exprs: Iterable[sp.Expr], q: Sequence[sp.Symbol], fold_angles: bool = True,
                 progress=None) -> list:
    """simplify_kinematic over many expressions, calling ``progress(done, total)`` if given."""
    exprs = list(exprs)
    out = []
    for k, e in enumerate(exprs):
        out.append(simplify_kinematic(e, q, fold_angles))
        if progress is not None:
            progress(k + 1, len(exprs))
    return out


def operation_count(exprs: Iterable[sp.Expr]) -> int:
    """Total SymPy operation count (``count_ops``) of a collection of expressions."""
    return int(sum(sp.count_ops(e) for e in exprs))
