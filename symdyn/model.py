"""Rigid-body tree model.

Bodies are numbered 0..N-1 with parents before children; ``parents[i] == -1`` means body i hangs
from the world (fixed base). Paper indices are 1-based with 0 the base: body i here is body i+1
there. Each body i carries

* ``joints[i]``: its joint to the parent (see :mod:`symdyn.joints`),
* ``Xtree[i]``: the constant transform from the parent body frame to joint i's predecessor frame,
  so that ``Xup[i] = XJ(q_i) Xtree[i]`` maps parent coordinates to body i coordinates,
* ``I[i]``: its 6x6 spatial inertia in body coordinates (from mass, CoM and inertia about the CoM).

Constants are floats (NumPy arrays) or, for models with symbolic parameters, SymPy expressions.
Derived once: ``nq``, ``nv``, ``q_idx``/``v_idx`` (index ranges), ``children``, ``ancestors``
(path from a body to the root), ``subtree``, ``depth`` and ``d`` (tree depth).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import spatial
from .backends import get_backend
from .joints import Fixed, Joint
from .spatial import Transform
from .types import Array, Backend, Seed


class ModelError(ValueError):
    """An invalid model: bad topology, non-physical inertia, non-finite constants."""


@dataclass
class Body:
    """One body of a model description, before fixed joints are merged.

    ``parent`` is the parent body's name (None: attached to the world). ``X_tree`` is
    ``(E, r)``: rotation from parent to joint frame coordinates and joint origin in parent
    coordinates (see :class:`~symdyn.spatial.Transform`). ``com`` is in body coordinates and
    ``inertia`` is the 3x3 rotational inertia about the CoM in body coordinates.
    """

    name: str
    parent: str | None
    joint: Joint
    mass: Any = 1.0
    com: Any = (0.0, 0.0, 0.0)
    inertia: Any = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    X_tree: Transform | None = None


def _is_sym(x) -> bool:
    return type(x).__module__.split(".")[0] == "sympy"


def _has_symbols(x) -> bool:
    if _is_sym(x):
        return bool(getattr(x, "free_symbols", False))
    if isinstance(x, (list, tuple)):
        return any(_has_symbols(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return any(_has_symbols(e) for e in x.ravel())
    return False


def _const(x, shape, what, symbolic):
    """Constant as a float array, or a sympy Matrix when the model is symbolic."""
    if symbolic:
        import sympy as sp

        m = sp.Matrix(x) if not isinstance(x, sp.MatrixBase) else x
        if len(shape) == 1:
            m = m.reshape(shape[0], 1) if m.shape != (shape[0], 1) else m
        if m.shape != (shape if len(shape) == 2 else (shape[0], 1)):
            raise ModelError(f"{what} must have shape {shape}, got {m.shape}")
        for e in m:
            if e.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
                raise ModelError(f"{what} contains NaN or inf")
        return get_backend("sympy").const(m)
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} must be numbers of shape {shape}") from exc
    if arr.shape != shape:
        raise ModelError(f"{what} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or inf")
    return arr


def check_inertia(mass, Ic, what: str) -> None:
    """Physical consistency of (mass, rotational inertia about the CoM): mass > 0, Ic symmetric
    positive definite and satisfying the triangle inequalities of its principal moments."""
    if not mass > 0:
        raise ModelError(f"{what}: mass must be positive, got {mass}")
    Ic = np.asarray(Ic, dtype=float)
    scale = max(1.0, float(np.abs(Ic).max()))
    if not np.allclose(Ic, Ic.T, atol=1e-9 * scale):
        raise ModelError(f"{what}: rotational inertia is not symmetric")
    ev = np.linalg.eigvalsh((Ic + Ic.T) / 2)
    if ev[0] <= 0:
        raise ModelError(f"{what}: rotational inertia is not positive definite "
                         f"(principal moments {ev.tolist()})")
    if ev[0] + ev[1] < ev[2] * (1 - 1e-9) - 1e-12:
        raise ModelError(f"{what}: principal moments {ev.tolist()} violate the triangle "
                         "inequality (no rigid body has this inertia)")


@dataclass
class Frame:
    """A named frame rigidly attached to body ``body`` (``X``: body coordinates -> frame)."""

    body: int
    X: Transform


class Model:
    """A rigid-body tree; see the module docstring for conventions."""

    def __init__(self, bodies: Sequence[Body], gravity: Array = (0.0, 0.0, -9.81), name: str = "model",
                 check_inertias: bool = True, allow_massless: bool = False) -> None:
        """``check_inertias=False`` skips the physical-consistency check of each body (needed for
        symbolic parameters). ``allow_massless=True`` accepts bodies of mass exactly 0 (massless
        frames and links, as URDF files contain; their inertia is taken as given) when
        ``check_inertias`` is False; the caller then answers for a regular mass matrix."""
        self.name = str(name)
        if len(bodies) == 0:
            raise ModelError("a model needs at least one body")
        self.is_symbolic = any(
            _has_symbols(b.mass) or _has_symbols(b.com) or _has_symbols(b.inertia)
            or (b.X_tree is not None and (_has_symbols(b.X_tree.E) or _has_symbols(b.X_tree.r)))
            for b in bodies) or _has_symbols(gravity)
        self.gravity = _const(gravity, (3,), "gravity", self.is_symbolic)
        ordered = _topological(bodies)
        self.frames: dict[str, Frame] = {}
        self._build(ordered, check_inertias, allow_massless)
        self._derive()
        self._cache: dict[str, Any] = {}

    # -- construction ---------------------------------------------------------------------------
    def _build(self, ordered: list[Body], check_inertias: bool, allow_massless: bool = False) -> None:
        sym = self.is_symbolic
        Bk = get_backend("sympy" if sym else "numpy")
        eye = Bk.eye(3)
        names: list[str] = []
        parents: list[int] = []
        joints: list[Joint] = []
        Xtree: list[Transform] = []
        I: list[Any] = []
        params: list[tuple[Any, Any, Any] | None] = []
        where: dict[str, tuple[int, Transform | None]] = {}  # body name -> (model body index, X body<-that)
        for b in ordered:
            what = f"body {b.name!r}"
            if not isinstance(b.joint, Joint):
                raise ModelError(f"{what}: joint must be a symdyn Joint, got {type(b.joint).__name__}")
            mass = b.mass if sym and _is_sym(b.mass) else _scalar(b.mass, f"{what} mass", sym)
            com = _const(b.com, (3,), f"{what} com", sym)
            Ic = _const(b.inertia, (3, 3), f"{what} inertia", sym)
            if check_inertias and not (_is_sym(mass) or _has_symbols(Ic)):
                check_inertia(float(mass), np.array(Ic, dtype=float), what)
            elif not _is_sym(mass) and not (float(mass) > 0 or (allow_massless and float(mass) == 0)):
                raise ModelError(f"{what}: mass must be positive, got {mass}")
            X = b.X_tree if b.X_tree is not None else Transform(eye, Bk.zeros(3))
            X = Transform(_const(X.E, (3, 3), f"{what} X_tree rotation", sym),
                          _const(X.r, (3,), f"{what} X_tree translation", sym))
            Ibody = spatial.mcI(Bk, mass, com, Ic)
            if b.parent is None:
                parent, Xp = -1, None
            else:
                parent, Xp = where[b.parent]
            if Xp is not None:  # parent was merged into body `parent`: Xtree composes
                X = spatial.compose(Bk, X, Xp)
            if isinstance(b.joint, Fixed):
                # merge into the parent (paper-style trees have no fixed joints)
                if parent >= 0:
                    I[parent] = I[parent] + spatial.congruence(Bk, X, Ibody)
                    params[parent] = None
                where[b.name] = (parent, X)
                self.frames[b.name] = Frame(parent, X)
                continue
            where[b.name] = (len(names), None)
            names.append(b.name)
            parents.append(parent)
            joints.append(b.joint)
            Xtree.append(X)
            I.append(Ibody)
            params.append((mass, com, Ic))
            self.frames[b.name] = Frame(len(names) - 1, Transform(eye, Bk.zeros(3)))
        if not names:
            raise ModelError("the model has no moving bodies (all joints are fixed)")
        self.names, self.parents, self.joints = names, parents, joints
        self.Xtree, self.I = Xtree, I
        self.body_params = params  # (mass, com, Ic) or None where fixed bodies were merged in

    def _derive(self) -> None:
        N = self.N = len(self.names)
        self.q_idx, self.v_idx = [], []
        nq = nv = 0
        for jt in self.joints:
            self.q_idx.append((nq, nq + jt.nq))
            self.v_idx.append((nv, nv + jt.nv))
            nq, nv = nq + jt.nq, nv + jt.nv
        self.nq, self.nv = nq, nv
        self.children: list[list[int]] = [[] for _ in range(N)]
        for i, p in enumerate(self.parents):
            if p >= 0:
                self.children[p].append(i)
        self.ancestors = []  # ancestors[i] = [i, p(i), p(p(i)), ...]
        for i in range(N):
            chain, j = [], i
            while j >= 0:
                chain.append(j)
                j = self.parents[j]
            self.ancestors.append(chain)
        self.depth = [len(a) for a in self.ancestors]
        self.d = max(self.depth)
        self.subtree: list[list[int]] = [[] for _ in range(N)]
        for i in range(N):
            for a in self.ancestors[i]:
                self.subtree[a].append(i)
        self.is_floating = self.joints[0].type == "floating" and self.parents[0] == -1

    # -- helpers ----------------------------------------------------------------------------------
    def constants(self, B: Backend) -> tuple[list[Transform], list[Array], Array]:
        """(Xtree, I, gravity) converted to backend ``B``'s native arrays (cached per backend)."""
        c = self._cache.get(B.name)
        if c is None:
            Xtree = [Transform(B.const(X.E), B.const(X.r)) for X in self.Xtree]
            if B.name == "numpy":
                Xtree = [Transform(X.E, X.r.reshape(3)) for X in Xtree]
            I = [B.const(Ii) for Ii in self.I]
            g = B.const(self.gravity)
            if B.name == "numpy":
                g = g.reshape(3)
            a_grav = B.vcat([B.zeros(3), -g])
            c = self._cache[B.name] = (Xtree, I, a_grav)
        return c

    def neutral(self) -> np.ndarray:
        return np.concatenate([np.asarray(j.neutral(), float) for j in self.joints])

    def random_q(self, rng: Seed = None) -> np.ndarray:
        """A random configuration: angles in [0, 2 pi) (paper 000 Sec. 5), unit quaternions."""
        rng = np.random.default_rng(rng)
        return np.concatenate([np.asarray(j.random_q(rng), float) for j in self.joints])

    def integrate(self, q: Array, v: Array, dt: Any = 1.0, backend: str | None = None) -> Array:
        """q (+) v dt joint by joint (quaternion joints on the sphere)."""
        from .algorithms.common import entry

        B, (qs, vs) = entry(self, ("q", q, "q"), ("v", v, "v"), backend=backend)
        return B.vcat([j.integrate(B, qs[i], vs[i], dt) for i, j in enumerate(self.joints)])

    def subs(self, values: dict[Any, Any]) -> "Model":
        """A numeric copy of a symbolic model with ``values`` (symbol -> number) substituted."""
        if not self.is_symbolic:
            return self
        import copy

        import sympy as sp

        def num(M):
            M = sp.Matrix(M).subs(values)
            if M.free_symbols:
                raise ModelError(f"model {self.name!r}: no value given for {sorted(map(str, M.free_symbols))}")
            return np.array(M.evalf(), dtype=float)

        m = copy.copy(self)
        m.is_symbolic = False
        m.gravity = num(self.gravity).reshape(3)
        m.Xtree = [Transform(num(X.E), num(X.r).reshape(3)) for X in self.Xtree]
        m.I = [num(Ii) for Ii in self.I]
        m.body_params = [None if p is None else (float(sp.sympify(p[0]).subs(values)), num(p[1]).reshape(3), num(p[2]))
                         for p in self.body_params]
        m._cache = {}
        return m

    def parameters(self) -> list:
        """The SymPy symbols the model's constants depend on (sorted by name)."""
        if not self.is_symbolic:
            return []
        import sympy as sp

        syms = set()
        for M in [self.gravity, *self.I, *(X.E for X in self.Xtree), *(X.r for X in self.Xtree)]:
            syms |= sp.Matrix(M).free_symbols
        return sorted(syms, key=lambda s: s.name)

    def __repr__(self) -> str:
        kind = ", symbolic" if self.is_symbolic else ""
        return f"<Model {self.name!r}: {self.N} bodies, nq={self.nq}, nv={self.nv}, depth={self.d}{kind}>"

    def summary(self) -> str:
        lines = [repr(self)]
        for i, (n, p, j) in enumerate(zip(self.names, self.parents, self.joints)):
            pn = "world" if p < 0 else self.names[p]
            lines.append(f"  {i:3d} {n:<24} <- {pn:<24} {j!r}")
        return "\n".join(lines)

    @classmethod
    def from_parent_array(cls, parents: Sequence[int], joints: Sequence[Joint],
                          Xtree: Sequence[Transform], inertias: Sequence[tuple],
                          gravity: Array = (0.0, 0.0, -9.81), name: str = "model",
                          names: Sequence[str] | None = None, check_inertias: bool = True) -> "Model":
        """Build from a parent array (-1 = world, parents before children), joints, tree
        transforms and (mass, com, Ic) triples."""
        N = len(parents)
        for what, seq in (("joints", joints), ("Xtree", Xtree), ("inertias", inertias)):
            if len(seq) != N:
                raise ModelError(f"{what} has {len(seq)} entries but parents has {N}")
        for i, p in enumerate(parents):
            if not isinstance(p, (int, np.integer)) or p < -1 or p >= N:
                raise ModelError(f"parent index {p!r} of body {i} is out of range [-1, {N - 1}]")
            if p >= i:
                raise ModelError(f"body {i} has parent {p}: parents must come before children "
                                 "(a parent index >= its child means a cycle or a wrong order)")
        names = list(names) if names is not None else [f"body{i + 1}" for i in range(N)]
        bodies = [Body(names[i], None if p < 0 else names[p], joints[i], inertias[i][0],
                       inertias[i][1], inertias[i][2], Xtree[i]) for i, p in enumerate(parents)]
        return cls(bodies, gravity=gravity, name=name, check_inertias=check_inertias)


def _scalar(x, what, sym):
    if sym and _is_sym(x):
        return x
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} must be a number") from exc
    if not math.isfinite(v):
        raise ModelError(f"{what} is NaN or inf")
    return v


def _topological(bodies: Sequence[Body]) -> list[Body]:
    """Order bodies parents-first (the given order if valid, else depth-first); reject duplicate names, unknown parents and cycles."""
    by_name: dict[str, Body] = {}
    for b in bodies:
        if not isinstance(b, Body):
            raise ModelError(f"expected Body entries, got {type(b).__name__}")
        if b.name in by_name:
            raise ModelError(f"duplicate body name {b.name!r}")
        by_name[b.name] = b
    for b in bodies:
        if b.parent is not None and b.parent not in by_name:
            raise ModelError(f"body {b.name!r} has parent {b.parent!r}, which is not a body of the "
                             "model (dangling parent)")
        if b.parent == b.name:
            raise ModelError(f"body {b.name!r} is its own parent")
    placed: set[str] = set()
    for b in bodies:  # already parents-first: keep the caller's numbering
        if b.parent is not None and b.parent not in placed:
            break
        placed.add(b.name)
    else:
        return list(bodies)
    children: dict[str | None, list[Body]] = {}
    for b in bodies:
        children.setdefault(b.parent, []).append(b)
    ordered, stack = [], list(reversed(children.get(None, [])))
    if not stack:
        raise ModelError("no body is attached to the world (parent None): the tree has no root "
                         "(cyclic or disconnected)")
    while stack:
        b = stack.pop()
        ordered.append(b)
        stack.extend(reversed(children.get(b.name, [])))
    if len(ordered) != len(bodies):
        seen = {b.name for b in ordered}
        lost = [b.name for b in bodies if b.name not in seen]
        raise ModelError(f"bodies {lost} are not connected to the world: their parents form a cycle")
    return ordered
