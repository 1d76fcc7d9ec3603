"""Spatial vector algebra over a backend (Featherstone; papers 000 App. A and 003).

Conventions
-----------
* Motion vectors are ``[angular; linear]`` = ``[w; v]``, force vectors ``[moment; force]`` = ``[n; f]``.
* A transform ``X = (E, r)`` is Featherstone's compact Plucker transform from frame A to frame B:
  ``E`` rotates A-coordinates into B-coordinates and ``r`` is the position of B's origin in
  A-coordinates, so that ``X = [[E, 0], [-E S(r), E]]`` maps motion vectors from A to B and
  ``X^T`` maps force vectors from B to A.
* ``crm(v) = (v x)``, ``crf(v) = (v x*) = -crm(v)^T``, ``crfbar(f) = (f xbar*)`` with
  ``crfbar(f) v = crf(v) f``.

Every function takes the backend ``B`` first and uses 3x3 blocks rather than dense 6x6 products:
this keeps SymPy expressions and CasADi graphs small. A numeric backend that offers
``kernels`` (NumPy: see :class:`symdyn.backends.numpy_backend.Kernels`) pays per
operation rather than per expression node, so there the cross products and transforms are
applied as one 6x6 product each (same values up to rounding).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, NamedTuple



class _CompactTransform(NamedTuple):
    E: Any   # 3x3 rotation, a native array of the backend (symdyn.types.Array)
    r: Any   # 3-vector


class Transform(_CompactTransform):
    """Compact spatial transform ``(E, r)``; see the module docstring.

    A tuple of two fields. With a numeric backend's kernels (``B.kernels``, NumPy)
    the transform functions below apply X as its 6x6 motion matrix (:func:`to_matrix`): one
    6x6 product costs less than the 3x3-block form's several small operations there, while
    graph backends keep the 3x3 blocks (smaller expressions). A transform made by
    :func:`compose` from its own new arrays keeps that matrix in its ``__dict__`` after the
    first use; any other transform (whose arrays the caller may change in place) gets it
    built at each use."""


_OWN_ARRAYS = "own arrays"   # key in a Transform's __dict__: E and r were made for it alone


def _motion_matrix(B, X: Transform):
    """X's 6x6 motion matrix for a numeric backend's kernels; kept in X when X owns its arrays
    (callers look in ``X.__dict__`` first)."""
    M = B.kernels.motion_matrix(X.E, X.r)
    cache = X.__dict__
    if _OWN_ARRAYS in cache:
        cache[B.name] = M
    return M


def skew(B, w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return B.skew(w)


def top(B, x):
    return B.rows(x, 0, 3)


def bottom(B, x):
    return B.rows(x, 3, 6)


# --- cross products ---------------------------------------------------------------------------

# _kernels: ``getattr(B, "kernels", None) if B.numeric else None``, written out where used (a
# call per use would cost as much as what it saves): the numeric backend's kernels
# (``B.kernels``: ``crm``, ``crf``, ``crfbar`` of a 6-vector, ``motion_matrix(E, r)`` as
# :func:`to_matrix` and ``mul(A, x)`` = A @ x, each cheaper than its generic form), or None:
# graph backends, and numeric backends without them, take the 3x3-block forms.

def crm(B, v):
    """Motion cross-product matrix (v x), 6x6."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        return k.crm(v)
    w, u = skew(B, top(B, v)), skew(B, bottom(B, v))
    Z = B.zeros(3, 3)
    return B.block([[w, Z], [u, w]])


def crf(B, v):
    """Force cross-product matrix (v x*) = -(v x)^T, 6x6."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        return k.crf(v)
    w, u = skew(B, top(B, v)), skew(B, bottom(B, v))
    Z = B.zeros(3, 3)
    return B.block([[w, u], [Z, w]])


def crfbar(B, f):
    """(f xbar*), 6x6: the operator with (f xbar*) v = v x* f (paper 000 App. A)."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        return k.crfbar(f)
    n, g = skew(B, top(B, f)), skew(B, bottom(B, f))
    return B.block([[-n, -g], [-g, B.zeros(3, 3)]])


def cross_motion(B, v, m):
    """(v x) m for a motion vector or a 6xk matrix of motion vectors m, without forming 6x6
    (except with a numeric backend's kernels: there one 6x6 product is cheaper)."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        return k.mul(k.crm(v), m)
    w, u = skew(B, top(B, v)), skew(B, bottom(B, v))
    m0, m1 = top(B, m), bottom(B, m)
    return B.vcat([w @ m0, w @ m1 + u @ m0])


def cross_force(B, v, f):
    """(v x*) f for a force vector or a 6xk matrix of force vectors f."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        return k.mul(k.crf(v), f)
    w, u = skew(B, top(B, v)), skew(B, bottom(B, v))
    f0, f1 = top(B, f), bottom(B, f)
    return B.vcat([w @ f0 + u @ f1, w @ f1])


# --- transforms ---------------------------------------------------------------------------------

def xform_motion(B, X: Transform, m):
    """X m: motion vector(s) from frame A to frame B."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        M = X.__dict__.get(B.name)
        return k.mul(_motion_matrix(B, X) if M is None else M, m)
    m0 = top(B, m)
    return B.vcat([X.E @ m0, X.E @ (bottom(B, m) - skew(B, X.r) @ m0)])


def xform_force_T(B, X: Transform, f):
    """X^T f: force vector(s) from frame B back to frame A."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        M = X.__dict__.get(B.name)
        return k.mul((_motion_matrix(B, X) if M is None else M).T, f)
    f1 = X.E.T @ bottom(B, f)
    return B.vcat([X.E.T @ top(B, f) + skew(B, X.r) @ f1, f1])


def xform_motion_inv(B, X: Transform, m):
    """X^-1 m: motion vector(s) from frame B back to frame A."""
    m0 = X.E.T @ top(B, m)
    return B.vcat([m0, X.E.T @ bottom(B, m) + skew(B, X.r) @ m0])


def xform_force(B, X: Transform, f):
    """X^-T f: force vector(s) from frame A to frame B."""
    f1 = bottom(B, f)
    return B.vcat([X.E @ (top(B, f) - skew(B, X.r) @ f1), X.E @ f1])


def compose(B, X2: Transform, X1: Transform) -> Transform:
    """X2 X1 (first X1: A->B, then X2: B->C)."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        X = Transform(k.mul(X2.E, X1.E), X1.r + k.mul(X1.E.T, X2.r))
        X.__dict__[_OWN_ARRAYS] = True   # new arrays: X may keep its 6x6 matrix
        return X
    return Transform(X2.E @ X1.E, X1.r + X1.E.T @ X2.r)


def inverse(B, X: Transform) -> Transform:
    return Transform(X.E.T, -(X.E @ X.r))


def to_matrix(B, X: Transform):
    """The 6x6 motion transform [[E, 0], [-E S(r), E]]."""
    return B.block([[X.E, B.zeros(3, 3)], [-(X.E @ skew(B, X.r)), X.E]])


def congruence(B, X: Transform, A):
    """X^T A X for any 6x6 operator A in L(M, F) (inertias, B^C terms), using 3x3 blocks."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        M = X.__dict__.get(B.name)
        M = _motion_matrix(B, X) if M is None else M
        return k.mul(k.mul(M.T, A), M)
    E, rx = X.E, skew(B, X.r)
    A11 = E.T @ B.rows(B.cols(A, 0, 3), 0, 3) @ E
    A12 = E.T @ B.rows(B.cols(A, 3, 6), 0, 3) @ E
    A21 = E.T @ B.rows(B.cols(A, 0, 3), 3, 6) @ E
    A22 = E.T @ B.rows(B.cols(A, 3, 6), 3, 6) @ E
    T12 = A12 + rx @ A22
    return B.block([[A11 + rx @ A21 - T12 @ rx, T12], [A21 - A22 @ rx, A22]])


def inertia_congruence(B, X: Transform, I):
    """X^T I X for a rigid-body (or composite) inertia I = [[Ibar, S(h)], [S(h)^T, m 1]] using its
    10 parameters (m, h = m c, Ibar about the frame origin): with h1 = E^T h,
    h' = h1 + m r and Ibar' = E^T Ibar E - S(r) S(h1) - S(h1) S(r) - m S(r) S(r)
    (Featherstone 2008, Sec. 2.13). About 2.5x fewer operations than :func:`congruence`."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:   # two 6x6 products (the parameters' form takes a dozen small operations)
        M = X.__dict__.get(B.name)
        M = _motion_matrix(B, X) if M is None else M
        return k.mul(k.mul(M.T, I), M)
    E, m = X.E, I[3, 3]
    h = B.vector([I[2, 4], I[0, 5], I[1, 3]])                       # S(h)[2,1] = h_x, ...
    Ibar = B.rows(B.cols(I, 0, 3), 0, 3)
    h1 = E.T @ h
    rx, h1x = skew(B, X.r), skew(B, h1)
    Ibar2 = E.T @ Ibar @ E - rx @ h1x - h1x @ rx - m * (rx @ rx)
    H = skew(B, h1 + m * X.r)
    return B.block([[Ibar2, H], [H.T, m * B.eye(3)]])


def congruence_inv(B, X: Transform, A):
    """X^-T A X^-1: an operator in L(M, F) from frame A's coordinates to frame B's."""
    return congruence(B, inverse(B, X), A)


# --- rotations ----------------------------------------------------------------------------------

def rot_axis(B, axis, c, s):
    """Coordinate rotation E (parent -> child) for a rotation by angle theta about a unit axis.

    ``axis`` is 'x', 'y', 'z' (fast forms) or a unit 3-vector; ``c, s`` = cos, sin of theta.
    E = R^T with R = I + s S(a) + (1 - c) S(a)^2 (Rodrigues).
    """
    if axis == "x":
        return B.matrix([[1, 0, 0], [0, c, s], [0, -s, c]])
    if axis == "y":
        return B.matrix([[c, 0, -s], [0, 1, 0], [s, 0, c]])
    if axis == "z":
        return B.matrix([[c, s, 0], [-s, c, 0], [0, 0, 1]])
    ax, ay, az = axis
    t = 1 - c
    return B.matrix([
        [c + t * ax * ax, t * ax * ay + s * az, t * ax * az - s * ay],
        [t * ax * ay - s * az, c + t * ay * ay, t * ay * az + s * ax],
        [t * ax * az + s * ay, t * ay * az - s * ax, c + t * az * az],
    ])


def quat_to_rot(B, x, y, z, w):
    """Rotation matrix R (child orientation in parent coordinates) of a unit quaternion (x, y, z, w).

    The coordinate transform of a joint is E = R^T.
    """
    return B.matrix([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


# --- inertia and body-level factorizations ---------------------------------------------------------

def mcI(B, m, c, Ic):
    """Spatial inertia (6x6) of a body of mass m, CoM c and rotational inertia Ic about the CoM,
    expressed at the frame origin: [[Ic + m S(c) S(c)^T, m S(c)], [m S(c)^T, m 1]]."""
    C = skew(B, c)
    return B.block([[Ic + m * (C @ C.T), m * C], [m * C.T, m * B.eye(3)]])


def inertia_rate(B, v, I):
    """Idot = (v x*) I - I (v x) = A + A^T with A = (v x*) I: the rate of change of a body inertia
    moving with velocity v (paper 000 Sec. 2.3); again rigid-body structured (mass rate 0)."""
    A = crf(B, v) @ I
    return A + A.T


def factorization_B(B, v, I, kind: str = "christoffel"):
    """Body-level factorization B(v, I) with B(v, I) v = v x* I v (paper 000, Def. 4).

    ``kind="christoffel"``: eq. (10), 1/2 [(v x*) I + (I v) xbar* - I (v x)], which makes
    Algorithm 1 return the Christoffel-consistent C*. ``kind="simple"``: eq. (9), (v x*) I.
    """
    if kind == "simple":
        return crf(B, v) @ I
    if kind == "christoffel":
        return (crf(B, v) @ I + crfbar(B, I @ v) - I @ crm(B, v)) / 2
    raise ValueError(f"unknown factorization {kind!r}; choose 'christoffel' (eq. 10) or "
                     f"'simple' (eq. 9)")


class CompositeB(NamedTuple):
    """A composite body-level factorization B^C = sum_k B(v_k, I_k) (paper 000 eq. (16)).

    Eq. (10) is B = 1/2 (Idot + (I v) xbar*) with Idot = (v x*) I - I (v x) (Prop. 1: B + B^T =
    Idot). Both parts sum over a subtree in compact form, so for ``kind="christoffel"`` B^C is
    carried as ``Idot`` (the composite inertia rate, rigid-body structured: 10 numbers) and ``h``
    (the composite momentum sum I v, a force vector) instead of a general 6x6 operator; other
    factorizations (``"simple"``, eq. (9)) keep the 6x6 matrix in ``dense``. Use
    :func:`composite_B`, :func:`composite_B_products`, :func:`composite_B_add` and
    :func:`composite_B_congruence`; Algorithm 1 never looks inside.
    """

    Idot: Any    # native arrays of the backend (None where unused)
    h: Any
    dense: Any


def composite_B(B, v, I, kind: str = "christoffel") -> CompositeB:
    """B(v, I) of one body moving with velocity v (Algorithm 1 line 6)."""
    if kind == "christoffel":
        return CompositeB(inertia_rate_rigid(B, v, I), I @ v, None)
    return CompositeB(None, None, factorization_B(B, v, I, kind))


def composite_B_products(B, BC: CompositeB, S):
    """``(B^C S, (B^C)^T S)`` for a 6 x n matrix S of motion vectors. In the compact form,
    with (f xbar*)^T = -(f xbar*) and (f xbar*) S = S x* f:
    B^C S = 1/2 (Idot^C S + (h^C xbar*) S) and (B^C)^T S = 1/2 (Idot^C S - (h^C xbar*) S)."""
    if BC.dense is not None:
        return BC.dense @ S, BC.dense.T @ S
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        IdS, Sxh = k.mul(BC.Idot, S), k.mul(k.crfbar(BC.h), S)
    else:
        IdS, Sxh = BC.Idot @ S, crfbar(B, BC.h) @ S
    return (IdS + Sxh) / 2, (IdS - Sxh) / 2


def composite_B_add(B, a: CompositeB, b: CompositeB) -> CompositeB:
    """a + b (composites of two subtrees in the same coordinates, eq. (16))."""
    if a.dense is not None:
        return CompositeB(None, None, a.dense + b.dense)
    return CompositeB(a.Idot + b.Idot, a.h + b.h, None)


def composite_B_congruence(B, X: "Transform", BC: CompositeB) -> CompositeB:
    """X^T B^C X: B^C moved from the coordinates of X's target frame to its source frame
    (Algorithm 1 line 25); the inertia rate by its 10 parameters, h as a force vector."""
    if BC.dense is not None:
        return CompositeB(None, None, congruence(B, X, BC.dense))
    return CompositeB(inertia_congruence_sym(B, X, BC.Idot), xform_force_T(B, X, BC.h), None)


def inertia_rate_rigid(B, v, I):
    """Idot = (v x*) I - I (v x) from the 10 parameters of a rigid-body (or composite) inertia
    I = [[Ibar, S(h)], [S(h)^T, m 1]] moving with velocity v = [w; u], with fewer operations than
    :func:`inertia_rate`: hdot = w x h + m u and Ibar_dot = P + P^T with P = S(w) Ibar - S(u) S(h)
    (mass points x move with u + w x x); the mass rate is zero. With a numeric backend's kernels
    :func:`inertia_rate`'s two 6x6 products are the cheaper form."""
    k = getattr(B, "kernels", None) if B.numeric else None   # see _kernels
    if k is not None:
        A = k.mul(k.crf(v), I)
        return A + A.T
    m = I[3, 3]
    h = B.vector([I[2, 4], I[0, 5], I[1, 3]])                       # S(h)[2,1] = h_x, ...
    Ibar = B.rows(B.cols(I, 0, 3), 0, 3)
    w, u = top(B, v), bottom(B, v)
    P = skew(B, w) @ Ibar - skew(B, u) @ skew(B, h)
    Hd = skew(B, skew(B, w) @ h + m * u)
    return B.block([[P + P.T, Hd], [Hd.T, B.zeros(3, 3)]])


def inertia_congruence_sym(B, X: Transform, I):
    """:func:`inertia_congruence` computing each entry of the symmetric 3x3 block Ibar' once
    (six instead of nine; CasADi's CSE does not see that (i, j) and (j, i) are equal):
    ``Ibar'_ij = (E^T Ibar)_i. E_.j - P_ij - P_ji - m (S(r) S(r))_ij`` with ``P = S(r) S(E^T h)``.
    Numeric backends take :func:`inertia_congruence` (two vectorized 3x3 products beat six
    row-column products there); the choice follows ``B.numeric``."""
    if B.numeric:
        return inertia_congruence(B, X, I)
    E, m = X.E, I[3, 3]
    h = B.vector([I[2, 4], I[0, 5], I[1, 3]])                       # S(h)[2,1] = h_x, ...
    Ibar = B.rows(B.cols(I, 0, 3), 0, 3)
    h1 = E.T @ h
    rx = skew(B, X.r)
    A, P = E.T @ Ibar, rx @ skew(B, h1)
    U = {(i, j): (B.rows(A, i, i + 1) @ B.cols(E, j, j + 1))[0, 0] - P[i, j] - P[j, i]
         - m * (B.rows(rx, i, i + 1) @ B.cols(rx, j, j + 1))[0, 0]
         for i in range(3) for j in range(i, 3)}
    Ibar2 = B.matrix([[U[min(i, j), max(i, j)] for j in range(3)] for i in range(3)])
    H = skew(B, h1 + m * X.r)
    return B.block([[Ibar2, H], [H.T, m * B.eye(3)]])


# --- logarithms of rotations and placements (SO(3), SE(3)) ---------------------------------------
#
# log3(R) is the rotation vector w (|w| = theta in [0, pi]) with exp(S(w)) = R; log6(R, p) the
# twist [w; u] ([angular; linear]) whose exponential is the placement (R, p): R = exp(S(w)),
# p = V(w) u with V the left Jacobian of SO(3). jlog3 / jlog6 are the *right* Jacobians of the
# logarithms: d log(M exp(xi)) / d xi at xi = 0 (Pinocchio's Jlog3 / Jlog6, whose 6-D rows and
# columns are [linear; angular]).
#
# theta = atan2(s, c) with s = |vee(R - R^T)| / 2 = sin(theta) and c = (trace R - 1) / 2, in three
# regimes of s^2 and c, chosen with B.where_positive (graph backends and JAX keep every branch,
# each finite everywhere, so that values and AD derivatives are finite; NumPy evaluates only the
# branch taken):
#
# * s^2 > _LOG_S2: w = vee(R - R^T)/2 / sin_over_x(theta^2);
# * s^2 <= _LOG_S2, c > 0 (theta near 0): w = vee(R - R^T)/2 * asin(s)/s, the ratio a power series
#   in s^2 (no square root of s^2: the graph is smooth at R = I, where AD gives the exact
#   derivative);
# * s^2 <= _LOG_S2, c <= 0 (theta near pi, where vee(R - R^T) vanishes): the axis n from the
#   symmetric part, (R + R^T)/2 - c I = (1 - c) n n^T (its largest diagonal entry), signed so that
#   n . vee(R - R^T) >= 0, and w = theta n. At theta = pi exactly the logarithm is two-valued
#   (+-pi n) and not differentiable; AD derivatives there are not meaningful.

_LOG_S2 = 0.1    # sin^2(theta) below which the series (near 0) or the axis form (near pi) apply

#: asin(s)/s = sum_k _ASIN_OVER_X[k] s^(2k): theta/sin(theta) for s^2 = sin^2(theta) <= _LOG_S2
#: (terms below 1e-18 relative there)
_ASIN_OVER_X = tuple(math.comb(2 * k, k) / (4 ** k * (2 * k + 1)) for k in range(17))


def _bernoulli(n: int) -> list[Fraction]:
    """Bernoulli numbers B_0..B_n (B_1 = -1/2), exact."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum((math.comb(m + 1, k) * b[k] for k in range(m)), Fraction(0)) / (m + 1))
    return b


def _dlog_series(terms: int, rate: bool) -> tuple[float, ...]:
    """Coefficients in x2 = theta^2 of D(x2) = 1/theta^2 - cot(theta/2)/(2 theta) =
    sum_{n>=1} (-1)^(n+1) B_2n / (2n)! x2^(n-1) (the Laurent series of cot; B_2n the Bernoulli
    numbers) or, with ``rate``, of 2 dD/dx2."""
    b = _bernoulli(2 * terms + 4)
    if rate:
        return tuple(float(2 * (-1) ** (n + 1) * (n - 1) * b[2 * n] / math.factorial(2 * n))
                     for n in range(2, terms + 2))
    return tuple(float((-1) ** (n + 1) * b[2 * n] / math.factorial(2 * n))
                 for n in range(1, terms + 1))


#: D = 1/theta^2 - (1 + cos theta)/(2 theta sin theta), the coefficient of S(w)^2 in jlog3 and in
#: V(w)^-1, and E = 2 dD/dx2 (Pinocchio's ``beta_dot_over_theta``), as power series in
#: x2 = theta^2: radius 4 pi^2, all terms positive; for theta <= pi (all that log3 returns) each
#: term is at most 1/4 of the one before, so 34 terms leave a remainder below 1e-18 relative.
#: One polynomial on every backend: no branch, exact at 0 (1/12, 1/360) and at pi (where the
#: forms through the helpers, (Bc - 2C)/(2A) at the full angle, are 0/0; SymPy's closed-form
#: helpers are undefined at 0).
_DLOG = _dlog_series(34, rate=False)
_DLOG_RATE = _dlog_series(34, rate=True)


def _power_series(coeffs, x):
    """sum_k coeffs[k] x^k as a flat sum of terms (SymPy keeps ``x^k`` one power: its evalf of
    Horner's nested form, with pi inside x from atan2, takes time exponential in the depth)."""
    out, xk = coeffs[0], x
    for c in coeffs[1:]:
        out = out + c * xk
        xk = xk * x
    return out


def _pick(B, x, a: Callable[[], tuple], b: Callable[[], tuple]) -> tuple:
    """The entries of ``a()`` where the scalar ``x > 0``, else those of ``b()``. A numeric backend
    evaluates only the branch taken; the others select entry by entry with ``B.where_positive``
    (both branches evaluated: each must be finite for every input)."""
    if B.numeric:
        return a() if x > 0 else b()
    return tuple(B.where_positive(x, u, v) for u, v in zip(a(), b()))


def _log3_parts(B, R) -> tuple:
    """``(w0, w1, w2, theta^2)``: the entries of log3(R) and its squared angle (scalars)."""
    a = ((R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2)
    s2 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2]          # sin^2(theta)
    c = (R[0, 0] + R[1, 1] + R[2, 2] - 1) / 2              # cos(theta)

    def regular():
        s = B.sqrt(B.where_positive(s2 - _LOG_S2, s2, _LOG_S2))
        th = B.atan2(s, c)
        x2 = th * th
        k = 1 / B.sin_over_x(x2)
        return (a[0] * k, a[1] * k, a[2] * k, x2)

    def near_zero():
        g = _power_series(_ASIN_OVER_X, s2)                # theta / sin(theta)
        return (a[0] * g, a[1] * g, a[2] * g, s2 * g * g)

    def near_pi():
        cg = B.where_positive(c, 0, c)                     # c <= 0 here (guard: 1 - cg >= 1)
        omc = 1 - cg
        d = [(R[k, k] - cg) / omc for k in range(3)]       # n_k^2; the largest is >= 1/3

        def axis(k):
            nk = B.sqrt(B.where_positive(d[k] - 0.25, d[k], 1))
            return tuple(nk if j == k else (R[j, k] + R[k, j]) / (2 * omc * nk) for j in range(3))

        n01 = _pick(B, d[1] - d[0], lambda: axis(1), lambda: axis(0))
        d01 = B.where_positive(d[1] - d[0], d[1], d[0])
        n = _pick(B, d[2] - d01, lambda: axis(2), lambda: n01)
        sigma = n[0] * a[0] + n[1] * a[1] + n[2] * a[2]    # sin(theta) up to the sign of n
        n = _pick(B, sigma, lambda: n, lambda: tuple(-x for x in n))
        th = B.atan2(B.where_positive(sigma, sigma, -sigma), c)
        return (th * n[0], th * n[1], th * n[2], th * th)

    return _pick(B, s2 - _LOG_S2, regular, lambda: _pick(B, c, near_zero, near_pi))


def _dlog_coefficient(B, x2):
    """D(x2) of the comment above ``_DLOG`` (1/12 at 0, 1/pi^2 at pi)."""
    return _power_series(_DLOG, x2)


def log3(B, R):
    """The rotation vector ``w`` (3) of a rotation matrix ``R``: ``exp(S(w)) = R``, ``|w| = theta``
    in [0, pi] (at theta = pi either of +-pi n). ``theta = atan2(s, c)`` with ``s = |vee(R -
    R^T)|/2``, ``c = (trace R - 1)/2``; finite values on every backend for every rotation, and
    finite AD derivatives except at theta = pi (comment above ``_LOG_S2``)."""
    w0, w1, w2, _ = _log3_parts(B, R)
    return B.vector([w0, w1, w2])


def _jlog3_of(B, w, x2):
    W = skew(B, w)
    return B.eye(3) + W / 2 + _dlog_coefficient(B, x2) * (W @ W)


def jlog3(B, R):
    """The right Jacobian of :func:`log3` (3x3): ``d log3(R exp(S(dw))) / d dw`` at dw = 0,
    ``I + S(w)/2 + D S(w)^2`` with ``w = log3(R)`` and ``D = 1/theta^2 - (1 + cos theta)/(2 theta
    sin theta)`` (Pinocchio's ``Jlog3``); finite up to theta = pi."""
    w0, w1, w2, x2 = _log3_parts(B, R)
    return _jlog3_of(B, B.vector([w0, w1, w2]), x2)


def log6(B, R, p):
    """The twist ``[w; u]`` (6, ``[angular; linear]``) of the placement ``(R, p)`` (rotation and
    translation, Pinocchio's SE3): ``w = log3(R)``, ``u = V(w)^-1 p = p - w x p / 2 + D w x (w x
    p)`` (D as in :func:`jlog3`). Pinocchio's ``log6(M)`` is ``[u; w]``."""
    w0, w1, w2, x2 = _log3_parts(B, R)
    w = B.vector([w0, w1, w2])
    W = skew(B, w)
    Wp = W @ p
    return B.vcat([w, p - Wp / 2 + _dlog_coefficient(B, x2) * (W @ Wp)])


def jlog6(B, R, p):
    """The right Jacobian of :func:`log6` (6x6, rows and columns ``[angular; linear]``):
    ``d log6(M exp(xi)) / d xi`` at xi = 0 for M = (R, p), a twist xi = [dw; du] in M's frame:
    ``[[Jw, 0], [K Jw, Jw]]`` with ``Jw = jlog3(R)`` and ``K`` the derivative of ``u = V(w)^-1 p``
    with respect to w at fixed p (``V(w)^-1 R = Jw``):
    ``K = S(p)/2 + D (w p^T + (w.p) I - 2 p w^T) + E (w x (w x p)) w^T``, ``E = 2 dD/d(theta^2)``
    a power series (exact to rounding for theta <= pi). Pinocchio's ``Jlog6`` has the 3-blocks
    in ``[linear; angular]`` order."""
    w0, w1, w2, x2 = _log3_parts(B, R)
    w = B.vector([w0, w1, w2])
    Jw = _jlog3_of(B, w, x2)
    W = skew(B, w)
    WWp = W @ (W @ p)
    D, E = _power_series(_DLOG, x2), _power_series(_DLOG_RATE, x2)
    ws, ps, qs = (w0, w1, w2), [p[k] for k in range(3)], [WWp[k] for k in range(3)]
    wp = ws[0] * ps[0] + ws[1] * ps[1] + ws[2] * ps[2]
    K = B.matrix([[D * (ws[i] * ps[j] - 2 * ps[i] * ws[j] + (wp if i == j else 0))
                   + E * qs[i] * ws[j] for j in range(3)] for i in range(3)]) + skew(B, p) / 2
    return B.block([[Jw, B.zeros(3, 3)], [K @ Jw, Jw]])
