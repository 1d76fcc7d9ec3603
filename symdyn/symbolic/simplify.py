"""Simplification of robot-kinematics expressions by a trigonometric (Fourier) normal form.

Entries of M, C and Gamma are polynomials in sin(q_i), cos(q_i) of the joint angles whose
coefficients depend on the model parameters (and polynomially on prismatic coordinates).
:func:`trig_normal_form` rewrites every such polynomial as a sum of ``a_k cos(k . q)`` and
``b_k sin(k . q)`` over integer vectors k (product-to-sum: with z_i = exp(i q_i),
cos q_i = (z_i + 1/z_i)/2 and sin q_i = (z_i - 1/z_i)/(2i)). Trigonometric monomials are linearly
independent, so this form is canonical: two expressions are equal exactly when their normal forms
are. It is also the readable textbook form (e.g. a 3-link planar arm's M11 = a + b cos q2 +
c cos q3 + d cos(q2 + q3)), and it costs only polynomial expansion, no search.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Sequence

import sympy as sp


@lru_cache(maxsize=None)
def _fourier_1d(a: int, b: int) -> dict:
    """sin^a cos^b as {k: (re, im)} with sin^a cos^b = sum_k (re + i im) e^{i k q}."""
    z = sp.Symbol("z")
    poly = sp.expand((z + 1 / z) ** b * (z - 1 / z) ** a * z ** (a + b))
    scale = 1 / (sp.Integer(2) ** b * (2 * sp.I) ** a)
    out = {}
    for term in sp.Add.make_args(poly):
        coeff, power = term.as_coeff_exponent(z)
        c = sp.expand(coeff * scale)
        re, im = c.as_real_imag()
        out[int(power) - (a + b)] = (sp.Rational(re), sp.Rational(im))
    return out


def _split_term(term, index):
    """term = rest * prod s_i^a_i c_i^b_i; returns (rest, {i: (a_i, b_i)})."""
    rest: list[Any] = []
    powers: dict[int, tuple[int, int]] = {}
    for f in sp.Mul.make_args(term):
        base, exp = f.as_base_exp()
        hit = index.get(base)
        if hit is not None and exp.is_Integer and exp > 0:
            i, which = hit
            a, b = powers.get(i, (0, 0))
            powers[i] = (a + int(exp), b) if which == "s" else (a, b + int(exp))
        else:
            rest.append(f)
    return sp.Mul(*rest), powers


class _Unsupported(Exception):
    """The expression is not a trigonometric polynomial in q (e.g. divides by a parameter)."""


def _add(a: dict, b: dict, sign=1) -> dict:
    out = dict(a)
    for key, (r, i) in b.items():
        r0, i0 = out.get(key, (0, 0))
        out[key] = (r0 + sign * r, i0 + sign * i)
    return out


def _mul(a: dict, b: dict) -> dict:
    out: dict = {}
    for (ka, ma), (ra, ia) in a.items():
        for (kb, mb), (rb, ib) in b.items():
            key = (tuple(x + y for x, y in zip(ka, kb)), tuple(x + y for x, y in zip(ma, mb)))
            r0, i0 = out.get(key, (0, 0))
            out[key] = (r0 + ra * rb - ia * ib, i0 + ra * ib + ia * rb)
    return _prune(out)


def _prune(d: dict) -> dict:
    """Drop cancelled terms (exactly zero, or below 1e-13 of the largest float coefficient)."""
    big = max((abs(float(r)) + abs(float(i)) for r, i in d.values()), default=0.0)
    tol = 1e-13 * big
    out = {}
    for key, (r, i) in d.items():
        inexact = isinstance(r, float) or isinstance(i, float)
        if (r == 0 and i == 0) or (inexact and abs(r) + abs(i) <= tol):
            continue
        out[key] = (r, i)
    return out


def _fourier(expr, q, gens) -> dict:
    """expr as {(k, m): (re, im)}: sum of (re + i im) e^{i k.q} prod gens^m (memoized on the DAG)."""
    from fractions import Fraction

    n, ng = len(q), len(gens)
    qpos = {s: i for i, s in enumerate(q)}
    gpos = {s: i for i, s in enumerate(gens)}
    zk, zm = (0,) * n, (0,) * ng
    memo: dict = {}

    def const(x):
        return {(zk, zm): (x, 0)} if x != 0 else {}

    def angle(arg):
        k = [0] * n
        for term in sp.Add.make_args(arg):
            coeff, rest = term.as_coeff_Mul()
            if rest not in qpos or not (coeff.is_Integer or coeff == 1):
                raise _Unsupported(arg)
            k[qpos[rest]] += int(coeff)
        return tuple(k)

    def go(e):
        hit = memo.get(e)
        if hit is not None:
            return hit
        if e.is_Integer or e.is_Rational:
            res = const(Fraction(int(e.p), int(e.q)))
        elif e.is_Float:
            res = const(float(e))
        elif e in gpos:
            m = [0] * ng
            m[gpos[e]] = 1
            res = {(zk, tuple(m)): (1, 0)}
        elif e.is_Add:
            res = {}
            for a in e.args:
                res = _add(res, go(a))
            res = _prune(res)
        elif e.is_Mul:
            res = {(zk, zm): (1, 0)}
            for a in e.args:
                res = _mul(res, go(a))
        elif e.is_Pow and e.exp.is_Integer and e.exp > 0:
            base, res = go(e.base), {(zk, zm): (1, 0)}
            for _ in range(int(e.exp)):
                res = _mul(res, base)
        elif isinstance(e, (sp.sin, sp.cos)):
            k = angle(e.args[0])
            kn = tuple(-x for x in k)
            half = Fraction(1, 2)
            if isinstance(e, sp.cos):
                res = _add({(k, zm): (half, 0)}, {(kn, zm): (half, 0)})
            else:  # (e^{ik} - e^{-ik}) / (2i) = -i/2 e^{ik} + i/2 e^{-ik}
                res = _add({(k, zm): (0, -half)}, {(kn, zm): (0, half)})
            res = _prune(res)
        else:
            raise _Unsupported(e)
        memo[e] = res
        return res

    return go(expr)


def _number(x):
    from fractions import Fraction

    if isinstance(x, Fraction):
        return sp.Rational(x.numerator, x.denominator)
    if isinstance(x, float):
        return sp.Float(x)
    return sp.Integer(x)


def trig_normal_form(expr, q: Sequence[sp.Symbol]) -> sp.Expr:
    """Canonical Fourier form of ``expr`` in the angles ``q`` (see the module docstring).

    Works structurally on the expression DAG (no global expansion), so it scales to the large
    expression graphs of long chains. Expressions that are not polynomials in sin/cos(q) and
    other symbols (e.g. with divisions) fall back to expansion.
    """
    expr = sp.sympify(expr)
    q = list(q)
    gens = sorted(expr.free_symbols - set(q), key=lambda s: s.name)
    # q_i outside sin/cos (prismatic, helical) is a polynomial generator too
    outside = set(_non_trig_parts(expr))
    gens += [s for s in q if s in outside]
    try:
        d = _fourier(expr, q, gens)
    except _Unsupported:
        return _trig_normal_form_expand(expr, q)
    by_k: dict = {}
    for (k, m), (r, i) in d.items():
        mono = sp.Mul(*[g ** e for g, e in zip(gens, m) if e])
        by_k.setdefault(k, []).append((mono, r, i))
    out, done = [], set()
    for k in sorted(by_k, key=lambda t: (sum(map(abs, t)), [-x for x in t])):
        if k in done:
            continue
        kn = tuple(-x for x in k)
        done.update({k, kn})
        if not any(k):
            out.append(sp.Add(*[mono * _number(r) for mono, r, _ in by_k[k]]))
            continue
        if next(x for x in k if x) < 0:
            k, kn = kn, k
        ang = sp.Add(*[x * qi for x, qi in zip(k, q) if x])
        # c e^{ik} + c' e^{-ik} = (re + re') cos + (im' - im) sin
        cos_c = sp.Add(*[m * _number(r) for m, r, _ in by_k.get(k, [])],
                       *[m * _number(r) for m, r, _ in by_k.get(kn, [])])
        sin_c = sp.Add(*[m * _number(i) for m, _, i in by_k.get(kn, [])],
                       *[-m * _number(i) for m, _, i in by_k.get(k, [])])
        if cos_c != 0:
            out.append(sp.factor_terms(cos_c) * sp.cos(ang))
        if sin_c != 0:
            out.append(sp.factor_terms(sin_c) * sp.sin(ang))
    return sp.Add(*out)


def _non_trig_parts(expr):
    """Symbols of expr that occur outside sin/cos (to find q_i used polynomially); memoized."""
    memo: dict = {}

    def go(e):
        hit = memo.get(e)
        if hit is None:
            if isinstance(e, (sp.sin, sp.cos)):
                hit = frozenset()
            elif e.is_Symbol:
                hit = frozenset([e])
            else:
                hit = frozenset().union(*[go(a) for a in e.args]) if e.args else frozenset()
            memo[e] = hit
        return hit
    return list(go(expr))


def _trig_normal_form_expand(expr, q):
    """Fallback by global expansion for expressions with non-polynomial parts (divisions)."""
    if any(not a.args[0].is_Symbol for a in expr.atoms(sp.sin, sp.cos)):
        expr = sp.expand_trig(expr)
    n = len(q)
    s = [sp.Dummy(f"s{i}") for i in range(n)]
    c = [sp.Dummy(f"c{i}") for i in range(n)]
    fwd, index = {}, {}
    for i, qi in enumerate(q):
        fwd[sp.sin(qi)], fwd[sp.cos(qi)] = s[i], c[i]
        index[s[i]], index[c[i]] = (i, "s"), (i, "c")
    acc: dict = {}
    for term in sp.Add.make_args(sp.expand(expr.xreplace(fwd))):
        rest, powers = _split_term(term, index)
        series: dict[tuple[tuple[int, int], ...], tuple[Any, Any]] = {
            (): (sp.Integer(1), sp.Integer(0))}
        for i, (a, b) in sorted(powers.items()):
            new: dict[tuple[tuple[int, int], ...], tuple[Any, Any]] = {}
            for kv, (r0, i0) in series.items():
                for k, (r1, i1) in _fourier_1d(a, b).items():
                    key = kv + ((i, k),) if k else kv
                    pr, pi = new.get(key, (0, 0))
                    new[key] = (pr + r0 * r1 - i0 * i1, pi + r0 * i1 + i0 * r1)
            series = new
        for kv, (r, im) in series.items():
            slot = acc.setdefault(kv, ([], []))
            slot[0].append(r * rest)
            slot[1].append(im * rest)
    out, done = [], set()
    for kv in sorted(acc, key=lambda t: (len(t), t)):
        if kv in done:
            continue
        neg = tuple((i, -k) for i, k in kv)
        done.update({kv, neg})
        if not kv:
            out.append(sp.expand(sp.Add(*acc[kv][0])))
            continue
        if kv[0][1] < 0:
            kv, neg = neg, kv
        re_k, im_k = acc.get(kv, ([], []))
        re_n, im_n = acc.get(neg, ([], []))
        ang = sp.Add(*[k * q[i] for i, k in kv])
        cos_c = sp.simplify(sp.expand(sp.Add(*re_k) + sp.Add(*re_n)))
        sin_c = sp.simplify(sp.expand(sp.Add(*im_n) - sp.Add(*im_k)))
        out.append(cos_c * sp.cos(ang) + sin_c * sp.sin(ang))
    return sp.Add(*out)


def equal(a, b, q: Sequence[sp.Symbol]) -> bool:
    """Exact equality of two kinematic expressions through their normal forms."""
    return trig_normal_form(sp.sympify(a) - sp.sympify(b), q) == 0


def simplify_kinematic(expr, q: Sequence[sp.Symbol]) -> sp.Expr:
    """The normal form, with common factors pulled out of the sum when that is shorter."""
    e = trig_normal_form(expr, q)
    if e == 0:
        return sp.S.Zero
    f = sp.factor_terms(e)
    return f if sp.count_ops(f) < sp.count_ops(e) else e


def operation_count(exprs: Iterable) -> int:
    """Total SymPy operation count (``count_ops``) of a collection of expressions."""
    return int(sum(sp.count_ops(e) for e in exprs))
