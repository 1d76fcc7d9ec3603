"""Closed kinematic loops by the spanning-tree method (paper 001 Sec. VI-C1, Thm. V.1).

A :class:`LoopModel` is a spanning tree (a :class:`~symdyn.model.Model`) plus loop-closure joints
(:class:`LoopClosure`) between two bodies (or a body and the world). Closure c ties a frame A fixed
on its predecessor body to a frame B fixed on its successor body; the relative twist of B with
respect to A must lie in the closure joint's motion subspace. Stacking the constrained components
of ``{v_B - v_A}_A`` (coordinate-free relative twist in A coordinates, [angular; linear] about A's
origin) gives ``K(q) qd = 0``. Splitting the tree speeds into ``independent`` ones ``y`` and the
rest, ``qd = G(q) y`` with ``G = [1; -K_d^-1 K_i]`` (rows reordered), and (paper 001 eq. (17))

    Mbar = G^T M G,   Cbar = G^T C* G + G^T M Gdot,   gbar = G^T g,   taubar = G^T tau,

which is the Christoffel-consistent factorization of the constrained mechanism (Prop. V.3).

Gdot is exact: ``K G = 0`` gives ``Gdot_d = -K_d^-1 Kdot G`` (``Gdot_i = 0``), and ``Kdot`` is the
time derivative of ``K(q(t))`` along ``qd``:

    d/dt {J}_A = X_{A<-succ} Jdot_succ - X_{A<-pred} Jdot_pred - (v_A x) {J_succ - J_pred}_A,

with ``Jdot_k`` the coordinate-free derivatives of the body Jacobians (blocks ``X_{k<-j} Phidot_j``,
see :mod:`.maximal`) and ``v_A`` the velocity of frame A in A coordinates: the derivative of
coordinates in the moving frame A of a coordinate-free quantity. No finite differences.

Closure kinds (``axis`` names the joint axis, shared by frames A and B; residual in A coordinates,
``R`` = orientation of B in A, ``p`` = origin of B in A):

==========  ==================================  ==================================================
kind        constrained twist components        position residual (zero when the loop closes)
==========  ==================================  ==================================================
revolute    angular u1, u2 (normal to axis);    ``u . (n x R n)`` for u = u1, u2; ``p``
            linear x, y, z
spherical   linear x, y, z                      ``p``
planar      linear u1, u2                       ``(p . u1, p . u2)`` (pin of a planar mechanism
                                                moving normal to ``axis``)
fixed       all six                             ``vee((R - R^T)/2)``; ``p``
==========  ==================================  ==================================================

Frames A and B must coincide in position at closure (put any offset along the axis into
``X_pred``/``X_succ``); the residuals' derivatives are then exactly ``K qd`` on the constraint
manifold, so Newton on them (:mod:`.numeric`) converges quadratically.

Generic over the backends (no NumPy/SymPy/CasADi imports); NumPy inputs are additionally
checked: a configuration that does not close raises :class:`ClosureError`, a singular dependent
Jacobian ``K_d`` raises :class:`SingularConfigurationError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from ..algorithms.common import entry, joint_kinematics
from ..algorithms.coriolis import coriolis_matrix
from ..algorithms.rnea import gravity_vector
from ..spatial import Transform, compose, cross_motion, inverse, xform_motion
from .errors import ClosureError, SingularConfigurationError
from .maximal import jacobian_blocks

_AXIS = {"x": 0, "y": 1, "z": 2}
KINDS = ("revolute", "spherical", "planar", "fixed")


@dataclass(frozen=True)
class LoopClosure:
    """A loop-closure joint between body ``pred`` (None/-1/'world': the world) and body ``succ``.

    ``X_pred`` maps predecessor body coordinates to closure frame A (``E`` rotates body
    coordinates into A's, ``r`` is A's origin in body coordinates, as for ``Model`` tree
    transforms); ``X_succ`` likewise maps successor body coordinates to frame B. ``kind`` is
    'revolute', 'spherical', 'planar' or 'fixed' (module docstring); ``axis`` is 'x', 'y' or 'z'.
    """

    pred: object
    succ: object
    X_pred: Transform | None = None
    X_succ: Transform | None = None
    kind: str = "revolute"
    axis: str = "z"
    name: str | None = None

    def components(self) -> tuple[list[int], list[int]]:
        """(angular, linear) constrained components of the relative twist (indices 0..2 each)."""
        a = _AXIS[self.axis]
        u1, u2 = (a + 1) % 3, (a + 2) % 3
        return {"revolute": ([u1, u2], [0, 1, 2]), "spherical": ([], [0, 1, 2]),
                "planar": ([], [u1, u2]), "fixed": ([0, 1, 2], [0, 1, 2])}[self.kind]


class LoopDynamics(NamedTuple):
    """Induced dynamics in the minimal speeds y (paper 001 eq. (17)); ``qd = G y``."""

    M: Any
    Mdot: Any
    C: Any
    g: Any
    G: Any
    Gdot: Any
    qd: Any


class LoopModel:
    """A spanning tree with loop-closure constraints and a choice of independent speeds.

    ``independent`` lists tree speed indices (0..nv-1) or body names (all speeds of that body's
    joint); their number must be ``nv - m`` with m the number of constrained components. The
    minimal speeds are ``y = qd[independent]`` (in the given order). ``q_ref`` is an optional closed
    reference configuration (the default initial guess of :func:`.numeric.solve_configuration`).
    ``closure_tol`` bounds the closure residual accepted with NumPy inputs, ``singular_tol`` the
    reciprocal condition number of ``K_d``.
    """

    def __init__(self, tree, closures: Sequence[LoopClosure], independent: Sequence, *,
                 name: str | None = None, q_ref=None, closure_tol: float = 1e-8,
                 singular_tol: float = 1e-10):
        from ..model import Model

        if not isinstance(tree, Model):
            raise TypeError(f"tree must be a symdyn Model, got {type(tree).__name__}")
        self.tree = tree
        self.name = name or f"{tree.name}+loops"
        closures = list(closures)
        if not closures:
            raise ClosureError("a LoopModel needs at least one LoopClosure (otherwise use the tree)")
        self.closures: list[LoopClosure] = []
        self._frames: list[tuple[Any, ...]] = []   # (pred, succ, X_pred, X_succ) per closure
        self._rows: list[list[int]] = []
        self._cache: dict[str, Any] = {}
        m = 0
        for c, cl in enumerate(closures):
            self._add_closure(c, cl)
            ang, lin = cl.components()
            self._rows.append([t for t in ang] + [3 + t for t in lin])
            m += len(ang) + len(lin)
        self.m = m
        self.independent = self._speed_indices(independent)
        nv = tree.nv
        if len(self.independent) != nv - m:
            raise ClosureError(
                f"{nv} tree speeds - {m} closure constraints = {nv - m} minimal speeds, but "
                f"{len(self.independent)} independent speeds were given; if some constraint "
                "components are redundant (e.g. a planar mechanism closed by 'revolute'), use a "
                "closure kind that constrains only the independent ones ('planar')")
        self.dependent = [t for t in range(nv) if t not in self.independent]
        self.ny = len(self.independent)
        self.closure_tol, self.singular_tol = float(closure_tol), float(singular_tol)
        self.q_ref = None
        if q_ref is not None:
            from .numeric import check_closed

            B, (qs,) = entry(tree, ("q_ref", q_ref, "q"), backend="numpy")
            check_closed(self, self.constraint_residual(B.vcat(qs)), "q_ref")
            self.q_ref = B.vcat(qs)

    # -- validation --------------------------------------------------------------------------
    def _body(self, b, what):
        tree = self.tree
        if b is None or (isinstance(b, str) and b == "world"):
            return -1
        if isinstance(b, str):
            if b not in tree.names:
                raise ClosureError(f"{what}: unknown body {b!r}; bodies: {', '.join(tree.names)}")
            return tree.names.index(b)
        if isinstance(b, bool) or not isinstance(b, int) and not hasattr(b, "__index__"):
            raise ClosureError(f"{what}: body must be a name, an index or None (world), got {b!r}")
        b = int(b)
        if not -1 <= b < tree.N:
            raise ClosureError(f"{what}: body index {b} out of range [-1, {tree.N - 1}]")
        return b

    def _add_closure(self, c, cl):
        if not isinstance(cl, LoopClosure):
            raise TypeError(f"closures[{c}] must be a LoopClosure, got {type(cl).__name__}")
        what = f"closure {cl.name or c!r}"
        if cl.kind not in KINDS:
            raise ClosureError(f"{what}: unknown kind {cl.kind!r}; choose one of {', '.join(KINDS)}")
        if cl.axis not in _AXIS:
            raise ClosureError(f"{what}: axis must be 'x', 'y' or 'z', got {cl.axis!r}")
        pred, succ = self._body(cl.pred, f"{what} pred"), self._body(cl.succ, f"{what} succ")
        if succ < 0:
            raise ClosureError(f"{what}: succ must be a body of the tree (put the world as pred)")
        if pred == succ:
            raise ClosureError(f"{what}: pred and succ are the same body {self.tree.names[succ]!r}")
        self.closures.append(cl)
        self._frames.append((pred, succ, self._transform(cl.X_pred, f"{what} X_pred"),
                             self._transform(cl.X_succ, f"{what} X_succ")))

    def _transform(self, X, what):
        from ..model import checked_constant  # numbers or SymPy constants, shape-checked

        sym = self.tree.is_symbolic
        if X is None:
            return Transform(checked_constant([[1, 0, 0], [0, 1, 0], [0, 0, 1]], (3, 3), what, sym),
                             checked_constant([0, 0, 0], (3,), what, sym))
        if not isinstance(X, Transform):
            raise ClosureError(f"{what} must be a symdyn Transform(E, r), got {type(X).__name__}")
        try:
            return Transform(checked_constant(X.E, (3, 3), f"{what} rotation", sym),
                             checked_constant(X.r, (3,), f"{what} translation", sym))
        except ValueError as exc:
            raise ClosureError(str(exc)) from None

    def _speed_indices(self, independent):
        tree = self.tree
        out: list[int] = []
        if isinstance(independent, (str, int)):
            independent = [independent]
        for s in independent:
            if isinstance(s, str):
                if s not in tree.names:
                    raise ClosureError(f"independent: unknown body {s!r}")
                a, b = tree.v_idx[tree.names.index(s)]
                out.extend(range(a, b))
            elif isinstance(s, bool) or not hasattr(s, "__index__"):
                raise ClosureError(f"independent entries must be speed indices or body names, got {s!r}")
            else:
                s = int(s)
                if not 0 <= s < tree.nv:
                    raise ClosureError(f"independent speed index {s} out of range [0, {tree.nv - 1}]")
                out.append(s)
        if len(set(out)) != len(out):
            raise ClosureError(f"independent speeds {out} contain duplicates")
        return out

    def __repr__(self) -> str:
        return (f"<LoopModel {self.name!r}: tree nv={self.tree.nv}, {len(self.closures)} closures, "
                f"m={self.m} constraints, {self.ny} minimal speeds {self.independent}>")

    # -- kinematics ---------------------------------------------------------------------------
    def _entry(self, q, qd=None, backend=None, extra=()):
        args = [("q", q, "q")] + ([("qd", qd, "v")] if qd is not None else [])
        B, segs = entry(self.tree, *args, backend=backend, extra=extra)
        return B, segs

    def _closure_terms(self, B, qs, qds=None, jacobian: bool = True):
        """Per closure: (residual entries, K rows block or None, Kdot rows block or None);
        K needs ``jacobian``, Kdot needs the tree speeds ``qds``."""
        tree = self.tree
        Xup, S = joint_kinematics(B, tree, qs)
        X0: list[Any] = [None] * tree.N
        for k, p in enumerate(tree.parents):
            X0[k] = Xup[k] if p < 0 else compose(B, Xup[k], X0[p])
        d = jacobian_blocks(B, tree, qs, qds, Xup, S) if (jacobian or qds is not None) else None
        out = []
        for c, (pred, succ, _, _) in enumerate(self._frames):
            if d is None:
                out.append(self.closure_term(B, c, X0[pred] if pred >= 0 else None, X0[succ]))
                continue
            rates = qds is not None
            out.append(self.closure_term(
                B, c, X0[pred] if pred >= 0 else None, X0[succ], d.J[succ],
                d.J[pred] if pred >= 0 else None, d.Jdot[succ] if rates else None,
                d.Jdot[pred] if rates and pred >= 0 else None,
                d.v[pred] if rates and pred >= 0 else None))
        return out

    def closure_term(self, B, c, X_pred, X_succ, J_succ=None, J_pred=None, Jdot_succ=None,
                     Jdot_pred=None, v_pred=None):
        """Closure c's (residual entries, K rows, Kdot rows) from its bodies' poses and Jacobians.

        ``X_pred``/``X_succ`` map a reference frame to the pred/succ body coordinates (``X_pred``
        None: pred IS the reference frame, e.g. the world). Any frame rigidly attached to the
        world or to a common ancestor serves, since only the pose of B relative to A enters.
        ``J_*``/``Jdot_*`` are the bodies' Jacobians and coordinate-free Jacobian derivatives over
        any set of speed columns (None: zero in these columns), ``v_pred`` the pred body's absolute
        velocity (None: at rest). K needs ``J_succ``, Kdot also ``Jdot_succ``.
        """
        Xp, Xs = self._constants(B)[c]
        XA = Xp if X_pred is None else compose(B, Xp, X_pred)                 # ref -> A
        XB = compose(B, Xs, X_succ)                                            # ref -> B
        XAB = compose(B, XA, inverse(B, XB))                                   # B -> A
        R, p = XAB.E, -(XAB.E @ XAB.r)                                         # B in A
        cl = self.closures[c]
        _, lin = cl.components()
        res = []
        if cl.kind == "revolute":
            a = _AXIS[cl.axis]
            u1, u2 = (a + 1) % 3, (a + 2) % 3
            res += [-R[u2, a], R[u1, a]]                                       # u . (n x R n)
        elif cl.kind == "fixed":
            res += [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
        res += [p[t] for t in lin]
        if J_succ is None:
            return res, None, None
        rows = self._rows[c]
        XAs = compose(B, XA, inverse(B, X_succ))                               # succ body -> A
        Y = xform_motion(B, XAs, J_succ)
        if J_pred is not None:
            Y = Y - xform_motion(B, Xp, J_pred)
        K = B.vcat([B.rows(Y, r, r + 1) for r in rows])
        if Jdot_succ is None:
            return res, K, None
        Yd = xform_motion(B, XAs, Jdot_succ)
        if Jdot_pred is not None:
            Yd = Yd - xform_motion(B, Xp, Jdot_pred)
        if v_pred is not None:
            Yd = Yd - cross_motion(B, xform_motion(B, Xp, v_pred), Y)           # - v_A x {J}_A
        return res, K, B.vcat([B.rows(Yd, r, r + 1) for r in rows])

    def _constants(self, B):
        key, cache = B.name, self._cache  # per LoopModel: several may share one tree
        if key not in cache:
            vals = []
            for _, _, Xp, Xs in self._frames:
                vals.append(tuple(Transform(B.const(X.E), B.const(X.r)) for X in (Xp, Xs)))
            cache[key] = vals
        return cache[key]

    def constraint_residual(self, q, *, backend: str | None = None):
        """Position-level closure residual (length m, zero iff every loop closes)."""
        B, (qs,) = self._entry(q, backend=backend)
        terms = self._closure_terms(B, qs, jacobian=False)
        return B.vector([e for res, _, _ in terms for e in res])

    def constraint_jacobian(self, q, *, backend: str | None = None):
        """``K(q)`` (m x nv) with ``K qd = 0`` the velocity-level closure constraints."""
        return self.residual_and_jacobian(q, backend=backend)[1]

    def residual_and_jacobian(self, q, *, backend: str | None = None):
        """``(r(q), K(q))`` from one kinematics pass (Newton's step)."""
        B, (qs,) = self._entry(q, backend=backend)
        terms = self._closure_terms(B, qs)
        return B.vector([e for t in terms for e in t[0]]), B.vcat([t[1] for t in terms])

    def constraint_jacobian_derivative(self, q, qd, *, backend: str | None = None):
        """``Kdot = d/dt K(q(t))`` along the tree speeds ``qd`` (m x nv), exact (module docstring)."""
        B, (qs, qds) = self._entry(q, qd, backend=backend)
        return B.vcat([Kd for _, _, Kd in self._closure_terms(B, qs, qds)])

    # -- the map qd = G y ---------------------------------------------------------------------
    def _split(self, B, K):
        Ki = B.hcat([B.cols(K, t, t + 1) for t in self.independent])
        Kd = B.hcat([B.cols(K, t, t + 1) for t in self.dependent])
        return Ki, Kd

    def _G(self, B, qs, qds=None):
        rates = qds is not None
        terms = self._closure_terms(B, qs, qds)
        K = B.vcat([t[1] for t in terms])
        Ki, Kd = self._split(B, K)
        if B.numeric:
            from .numeric import check_closed, check_regular

            check_closed(self, B.vector([e for t in terms for e in t[0]]), "q")
            check_regular(self, Kd)
        G = speed_rows(B, range(self.tree.nv), self.independent, self.dependent,
                       -B.solve(Kd, Ki), unit=True)
        if not rates:
            return G, None, None
        Kdot = B.vcat([t[2] for t in terms])
        return G, Kdot, Kd

    def G(self, q, *, backend: str | None = None):
        """``G(q)`` (nv x ny): tree speeds from minimal speeds, ``qd = G y``."""
        B, (qs,) = self._entry(q, backend=backend)
        return self._G(B, qs)[0]

    def Gdot(self, q, qd, *, backend: str | None = None):
        """``d/dt G(q(t))`` along the tree speeds ``qd`` (exact): ``Gdot_d = -K_d^-1 Kdot G``."""
        B, (qs, qds) = self._entry(q, qd, backend=backend)
        G, Kdot, Kd = self._G(B, qs, qds)
        return self._Gdot(B, G, Kdot, Kd)

    def _Gdot(self, B, G, Kdot, Kd):
        return speed_rows(B, range(self.tree.nv), self.independent, self.dependent,
                          -B.solve(Kd, Kdot @ G), unit=False)

    def speeds(self, q, y, *, backend: str | None = None):
        """Tree speeds ``qd = G(q) y``."""
        B, (qs,) = self._entry(q, backend=backend, extra=(y,))
        return self._G(B, qs)[0] @ B.to_vector(y, self.ny, "y")

    # -- dynamics -----------------------------------------------------------------------------
    def dynamics(self, q, y, factorization: str = "christoffel", *,
                 backend: str | None = None) -> LoopDynamics:
        """Induced ``Mbar, Mbar_dot, Cbar, gbar`` at a closed configuration q and minimal speeds y
        (paper 001 eq. (17) / paper 000 eqs. (23)-(25)), with ``G`` and the exact ``Gdot``."""
        B, (qs,) = self._entry(q, backend=backend, extra=(y,))
        qv = B.vcat(qs)
        yv = B.to_vector(y, self.ny, "y")
        G, _, _ = self._G(B, qs)
        qd = G @ yv
        qds = [B.rows(qd, a, b) for a, b in self.tree.v_idx]
        terms = self._closure_terms(B, qs, qds)
        _, Kd = self._split(B, B.vcat([t[1] for t in terms]))
        Gd = self._Gdot(B, G, B.vcat([t[2] for t in terms]), Kd)
        M, Mdot, C = coriolis_matrix(self.tree, qv, qd, factorization, backend=B.name)
        g = gravity_vector(self.tree, qv, backend=B.name)
        Gt, MG = G.T, M @ G
        Mbar = Gt @ MG                                                       # (23)
        Cbar = Gt @ (C @ G) + Gt @ (M @ Gd)                                  # (17) / (24)
        Mbar_dot = Gd.T @ MG + Gt @ (Mdot @ G) + Gt @ (M @ Gd)
        return LoopDynamics(Mbar, Mbar_dot, Cbar, Gt @ g, G, Gd, qd)        # (25)

    def coriolis_matrix(self, q, y, factorization: str = "christoffel", *,
                        backend: str | None = None):
        """``(Mbar, Mbar_dot, Cbar)`` in the minimal speeds (same layout as the tree's
        :func:`~symdyn.algorithms.coriolis.coriolis_matrix`)."""
        d = self.dynamics(q, y, factorization, backend=backend)
        return d.M, d.Mdot, d.C

    def christoffel(self, q, *, backend: str | None = None):
        """Generalized Christoffel symbols of the constrained mechanism in the minimal speeds,
        ``Gamma[:, :, k] = Cbar(q, e_k)`` (Cbar is linear in y; ny calls of :meth:`dynamics`).
        Storage as :func:`symdyn.algorithms.christoffel.christoffel`: NumPy (ny, ny, ny);
        SymPy, SymEngine, CasADi a :class:`~symdyn.backends.Tensor3`."""
        B, _ = self._entry(q, backend=backend)
        n = self.ny
        Gam = B.tensor3(n, n, n)
        for k in range(n):
            C = self.dynamics(q, [1 if t == k else 0 for t in range(n)], backend=B.name).C
            for i in range(n):
                for j in range(n):
                    Gam = B.set3(Gam, i, j, k, C[i, j])
        return Gam

    def forward_dynamics(self, q, y, tau=None, *, backend: str | None = None):
        """``ydot`` from ``Mbar ydot + Cbar y + gbar = G^T tau`` (``tau``: tree joint forces, nv)."""
        d = self.dynamics(q, y, backend=backend)
        B = _backend_of(d.M, backend)
        rhs = -(d.C @ B.to_vector(y, self.ny, "y")) - d.g
        if tau is not None:
            rhs = rhs + d.G.T @ B.to_vector(tau, self.tree.nv, "tau")
        return B.solve(d.M, rhs)

    def inverse_dynamics(self, q, y, ydot, *, backend: str | None = None):
        """Minimal generalized forces ``taubar = Mbar ydot + Cbar y + gbar`` (= G^T tau)."""
        d = self.dynamics(q, y, backend=backend)
        B = _backend_of(d.M, backend)
        return d.M @ B.to_vector(ydot, self.ny, "ydot") + d.C @ B.to_vector(y, self.ny, "y") + d.g


def speed_rows(B, speeds, independent, dependent, D, unit: bool):
    """One row per tree speed t of ``speeds``: for a dependent t its row of ``D`` (rows in
    ``dependent`` order), for an independent t the unit row of its position in ``independent``
    (``unit``: ``G = [I; D]``) or a zero row (``Gdot = [0; D]``)."""
    pos_i = {t: n for n, t in enumerate(independent)}
    pos_d = {t: n for n, t in enumerate(dependent)}
    ni = len(independent)
    return B.vcat([B.rows(D, pos_d[t], pos_d[t] + 1) if t in pos_d
                   else B.matrix([[1 if s == pos_i[t] else 0 for s in range(ni)]]) if unit
                   else B.zeros(1, ni) for t in speeds])


def _backend_of(x, backend):
    from ..backends import resolve_backend

    return resolve_backend(x, backend=backend)
