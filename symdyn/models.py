"""Model builders: random trees for tests, and the papers' benchmark topologies.

* :func:`serial_chain`, :func:`branched_tree` / :func:`binary_tree` (paper 000 Figs. 2-3, paper
  003 Figs. 4-7), :func:`biped`, :func:`quadruped` (paper 000 Fig. 4), :func:`planar_chain`
  (numbers or SymPy parameters), :func:`paper004_chain` (paper 004's benchmark),
  :func:`random_tree` (random topology, joints and inertias for tests);
* spec strings such as ``"binary:15"`` (the CLI's ``--model``) are parsed by
  :func:`symdyn.io.specs.from_spec`, which calls these builders.

Bodies are numbered parents first; ``seed`` makes random geometry reproducible.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .joints import Joint, make_joint
from .model import Body, Model, check_size
from .spatial import Transform


def random_inertia(rng) -> tuple[float, np.ndarray, np.ndarray]:
    """Random physically consistent (mass, com, Ic): principal moments satisfy the triangle
    inequality, orientation random."""
    mass = float(rng.uniform(0.5, 3.0))
    com = rng.uniform(-0.3, 0.3, 3)
    a, b = rng.uniform(0.05, 0.5, 2)
    c = rng.uniform(abs(a - b) + 0.01, a + b)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Ic = Q @ np.diag([a, b, c]) @ Q.T
    return mass, com, (Ic + Ic.T) / 2


def random_rotation(rng) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    if np.linalg.det(Q) < 0:
        Q[:, 0] *= -1
    return Q


def random_axis(rng):
    kind = rng.integers(0, 4)
    if kind < 3:
        return "xyz"[kind]
    a = rng.normal(size=3)
    return tuple(a / np.linalg.norm(a))


def random_joint(rng, kinds=("revolute",)) -> Joint:
    """A joint of a kind drawn from ``kinds`` (see ``_KINDS``) with a random axis (and, for helical
    joints, a pitch in [-0.2, 0.2]); built by :func:`symdyn.joints.make_joint`."""
    kind = kinds[rng.integers(0, len(kinds))]
    if kind not in _KINDS:
        raise ValueError(f"unknown joint kind {kind!r}; known: {', '.join(_KINDS)}")
    if kind in ("revolute", "prismatic"):
        return make_joint(kind, random_axis(rng))
    if kind == "helical":
        axis = random_axis(rng)
        return make_joint(kind, axis, pitch=float(rng.uniform(-0.2, 0.2)))
    return make_joint(kind)


def random_tree(n: int, seed=0, parents=None, joint_kinds=("revolute",), floating_base=False,
                name: str | None = None, max_bodies: int | None = None) -> Model:
    """A random tree of n bodies: random parents (or the given parent array), joints drawn from
    ``joint_kinds``, random tree transforms and physically consistent inertias. ``max_bodies``:
    see :func:`symdyn.model.check_size` (default :data:`symdyn.model.MAX_BODIES`)."""
    n = _positive_int(n)
    check_size(n if parents is None else max(n, len(parents)), f"random_tree({n})", max_bodies)
    rng = np.random.default_rng(seed)
    if parents is None:
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    bodies = []
    for i, p in enumerate(parents):
        joint = make_joint("floating") if (floating_base and i == 0) else random_joint(rng, joint_kinds)
        X = Transform(random_rotation(rng).T, rng.uniform(-1, 1, 3))
        m, c, Ic = random_inertia(rng)
        bodies.append(Body(f"b{i + 1}", None if p < 0 else f"b{p + 1}", joint, m, c, Ic, X))
    return Model(bodies, name=name or f"random{n}", max_bodies=max_bodies)


# --- the papers' benchmark topologies -------------------------------------------------------------

_AXIS_CYCLE = ("z", "y", "x")
_KINDS = ("revolute", "prismatic", "helical", "spherical", "planar", "floating")


def _positive_int(n, what: str = "n", minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {n!r}")
    if n < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {n}")
    return int(n)


def _box_inertia(mass: float, size) -> np.ndarray:
    """Rotational inertia about the CoM of a solid box of the given edge lengths."""
    a, b, c = (float(s) ** 2 for s in size)
    return mass / 12.0 * np.diag([b + c, a + c, a + b])


def _deterministic_joint(kind: str, k: int) -> Joint:
    """Joint of ``kind`` at depth k: axis cycling z, y, x; helical pitch 0.1 (via make_joint)."""
    if kind not in _KINDS:
        raise ValueError(f"unknown joint kind {kind!r}; known: {', '.join(_KINDS)}")
    if kind in ("revolute", "prismatic", "helical"):
        return make_joint(kind, _AXIS_CYCLE[k % 3], pitch=0.1 if kind == "helical" else None)
    return make_joint(kind)


def _joint_kinds(joint) -> tuple[str, ...]:
    kinds = (joint,) if isinstance(joint, str) else tuple(joint)
    if not kinds:
        raise ValueError("joint kinds must not be empty")
    for k in kinds:
        if k not in _KINDS:
            raise ValueError(f"unknown joint kind {k!r}; known: {', '.join(_KINDS)}")
    return kinds


def _tree(parents, kinds, seed, name, link=1.0, max_bodies=None) -> Model:
    """A tree over a parent array. ``seed=None``: deterministic geometry (see the builders);
    otherwise random axes, tree transforms and inertias (like :func:`random_tree`)."""
    if seed is not None:  # kinds in turn, random axes (and pitches), transforms and inertias
        rng = np.random.default_rng(seed)
        bodies = []
        for i, p in enumerate(parents):
            joint = random_joint(rng, (kinds[i % len(kinds)],))
            X = Transform(random_rotation(rng).T, rng.uniform(-1, 1, 3))
            m, c, Ic = random_inertia(rng)
            bodies.append(Body(f"link{i + 1}", None if p < 0 else f"link{p + 1}", joint, m, c, Ic, X))
        return Model(bodies, name=name, max_bodies=max_bodies)
    nchild = [0] * len(parents)
    placed: list[tuple[Body, int]] = []  # (body, depth)
    for i, p in enumerate(parents):
        k = 0 if p < 0 else nchild[p]
        if p >= 0:
            nchild[p] += 1
        depth = 0 if p < 0 else placed[p][1] + 1
        joint = _deterministic_joint(kinds[i % len(kinds)], depth)
        # child k of a parent sits at the parent's link tip, siblings fanned out along y
        r = np.zeros(3) if p < 0 else np.array([link, 0.3 * k, 0.0])
        mass = 1.0
        com = np.array([link / 2, 0.0, 0.0])
        Ic = _box_inertia(mass, (link, 0.1, 0.1))
        body = Body(f"link{i + 1}", None if p < 0 else f"link{p + 1}", joint, mass, com, Ic,
                    Transform(np.eye(3), r))
        placed.append((body, depth))
    return Model([b for b, _ in placed], name=name, max_bodies=max_bodies)


def serial_chain(n: int, joint="revolute", seed=None, name: str | None = None,
                 max_bodies: int | None = None) -> Model:
    """An n-body serial chain (depth d = n).

    ``joint`` is a joint kind ('revolute', 'prismatic', 'helical', 'spherical', 'planar',
    'floating') or a sequence of kinds used in turn. Without ``seed`` the chain is deterministic:
    links of length 1 m along their x axis (body i+1's joint at (1, 0, 0) in body i), axes of
    successive joints cycling z, y, x, mass 1 kg, CoM at mid-link, box inertia 1 x 0.1 x 0.1 m.
    With ``seed``: the same joint kinds with random axes, tree transforms (rotation and offset)
    and physically consistent inertias.

    ``max_bodies`` (every builder has it): refuse more bodies than this before allocating
    anything (default :data:`symdyn.model.MAX_BODIES` or the environment variable
    ``SYMDYN_MAX_BODIES``; see :func:`symdyn.model.check_size`).
    """
    n = _positive_int(n)
    check_size(n, f"serial_chain({n})", max_bodies)
    kinds = _joint_kinds(joint)
    return _tree([i - 1 for i in range(n)], kinds, seed, name or f"serial{n}", max_bodies=max_bodies)


def branched_parents(n: int, branching_factor: int = 2, max_bodies: int | None = None) -> list[int]:
    """Parent array of a complete tree: parent of body i (0-based) is (i - 1) // bf, root -1."""
    n = _positive_int(n)
    check_size(n, f"branched_parents({n})", max_bodies)
    bf = _positive_int(branching_factor, "branching_factor")
    return [-1] + [(i - 1) // bf for i in range(1, n)]


def branched_tree(n: int, branching_factor: int = 2, seed=None, joint="revolute",
                  name: str | None = None, max_bodies: int | None = None) -> Model:
    """An n-body tree in which body i's parent is (i - 1) // branching_factor (0-based).

    branching_factor 2 is paper 000's binary tree (Fig. 3, depth ~ log2 n); paper 003 uses 2
    and 5; 1 gives a serial chain. Geometry as :func:`serial_chain`, with the k-th child of a
    body attached at (1, 0.3 k, 0) in the parent frame. ``seed``: random geometry.
    """
    n = _positive_int(n)
    check_size(n, f"branched_tree({n})", max_bodies)
    parents = branched_parents(n, branching_factor, max_bodies=max_bodies)
    return _tree(parents, _joint_kinds(joint), seed,
                 name or f"branched{n}_bf{branching_factor}", max_bodies=max_bodies)


def binary_tree(n: int, seed=None, joint="revolute", name: str | None = None,
                max_bodies: int | None = None) -> Model:
    """:func:`branched_tree` with branching factor 2 (paper 000 Fig. 3)."""
    return branched_tree(n, 2, seed=seed, joint=joint, name=name or f"binary{n}",
                         max_bodies=max_bodies)


# legs: joint axes from the hip down (yaw, roll, pitch, pitch, pitch, roll, ...)
_LEG_AXES = ("z", "x", "y", "y", "y", "x")


def _legged(n: int, hips, floating: bool, seed, name: str, max_bodies=None) -> Model:
    nlegs = len(hips)
    n = _positive_int(n, "n (actuated DoF)", nlegs)
    check_size(n + 1, f"{name} (torso + {n} leg links)", max_bodies)
    rng = None if seed is None else np.random.default_rng(seed)
    torso_size = (0.6, 0.3, 0.15) if nlegs == 4 else (0.2, 0.3, 0.4)
    tm = 10.0 if rng is None else float(rng.uniform(5.0, 15.0))
    bodies = [Body("torso", None, make_joint("floating" if floating else "fixed"), tm, (0.0, 0.0, 0.0),
                   _box_inertia(tm, torso_size))]
    counts = [n // nlegs + (1 if k < n % nlegs else 0) for k in range(nlegs)]
    for leg, (hip, count) in enumerate(zip(hips, counts)):
        parent = "torso"
        for j in range(count):
            seg = 0.05 if j < 2 else 0.3  # hip yaw/roll are short; thigh, shank, feet longer
            c: Any
            if rng is None:
                m, c, Ic = 1.0, (0.0, 0.0, -seg / 2), _box_inertia(1.0, (0.05, 0.05, max(seg, 0.05)))
            else:
                m, c, Ic = random_inertia(rng)
            r = np.asarray(hip, float) if j == 0 else np.array([0.0, 0.0, -(0.05 if j <= 2 else 0.3)])
            body = f"leg{leg + 1}_link{j + 1}"
            bodies.append(Body(body, parent, make_joint("revolute", _LEG_AXES[j % 6]), m, c, Ic,
                               Transform(np.eye(3), r)))
            parent = body
    return Model(bodies, name=name, max_bodies=max_bodies)


def biped(n: int, floating: bool = False, seed=None, name: str | None = None,
          max_bodies: int | None = None) -> Model:
    """A torso with two serial legs sharing the n actuated DoF as evenly as possible (paper 000
    Fig. 4). Hips at (0, +-0.1, -0.2) in the torso frame; leg joint axes from the hip down cycle
    z, x, y, y, y, x (yaw, roll, pitch, knee, ankle pitch, ankle roll); links hang along -z.
    ``floating=False`` welds the torso to the world (nv = n), ``True`` attaches it with a
    Floating joint (nq = n + 7, nv = n + 6). ``seed``: random physically consistent inertias.
    """
    return _legged(n, [(0.0, 0.1, -0.2), (0.0, -0.1, -0.2)], floating, seed,
                   name or f"biped{n}{'_floating' if floating else ''}", max_bodies)


def quadruped(n: int, floating: bool = False, seed=None, name: str | None = None,
              max_bodies: int | None = None) -> Model:
    """A torso with four serial legs sharing the n actuated DoF as evenly as possible (paper 000
    Fig. 4). Hips at (+-0.3, +-0.15, 0) in the torso frame; legs as in :func:`biped`."""
    hips = [(0.3, 0.15, 0.0), (0.3, -0.15, 0.0), (-0.3, 0.15, 0.0), (-0.3, -0.15, 0.0)]
    return _legged(n, hips, floating, seed,
                   name or f"quadruped{n}{'_floating' if floating else ''}", max_bodies)


def planar_chain(n: int, symbolic_params: bool = False, mass: float = 1.0, length: float = 1.0,
                 com: float = 0.5, inertia: float = 1.0 / 12.0, g: float = 9.81,
                 name: str | None = None, max_bodies: int | None = None) -> Model:
    """An n-link planar chain moving in the x-y plane under gravity (0, -g, 0).

    Joint i is revolute about z; link i lies along its x axis with length l_i (joint i+1 at
    (l_i, 0, 0)), CoM at (lc_i, 0, 0), mass m_i and inertia I_i about the CoM's z axis; the
    rotational inertia is diag(I_i/2, I_i/2, I_i) (a thin plate in the plane of motion, which
    is physically consistent for every I_i > 0). Numbers from ``mass``, ``length``, ``com``,
    ``inertia``; with ``symbolic_params=True`` m_i, l_i, lc_i, I_i (i = 1..n) are positive SymPy
    symbols and the model is symbolic (sympy backend; ``model.subs`` gives numbers back). The
    last length l_n places no joint, so it does not appear in the dynamics.
    """
    n = _positive_int(n)
    check_size(n, f"planar_chain({n})", max_bodies)
    if symbolic_params:
        import sympy as sp

        ms = sp.symbols(f"m1:{n + 1}", positive=True)
        ls = sp.symbols(f"l1:{n + 1}", positive=True)
        lcs = sp.symbols(f"lc1:{n + 1}", positive=True)
        Is = sp.symbols(f"I1:{n + 1}", positive=True)
        zero, half = sp.Integer(0), sp.Rational(1, 2)
        gravity = [zero, -sp.Float(g) if not float(g).is_integer() else -sp.Integer(int(g)), zero]

        def Ic(I):
            return sp.diag(half * I, half * I, I)

        def vec(x):
            return sp.Matrix([x, zero, zero])

        E = sp.eye(3)
    else:
        ms, ls, lcs = [float(mass)] * n, [float(length)] * n, [float(com)] * n
        Is = [float(inertia)] * n
        gravity = [0.0, -float(g), 0.0]

        def Ic(I):
            return np.diag([I / 2, I / 2, I])

        def vec(x):
            return np.array([x, 0.0, 0.0])

        E = np.eye(3)
    bodies = []
    for i in range(n):
        X = Transform(E, vec(0.0 if i == 0 else ls[i - 1]))
        bodies.append(Body(f"link{i + 1}", None if i == 0 else f"link{i}", make_joint("revolute", "z"),
                           ms[i], vec(lcs[i]), Ic(Is[i]), X))
    return Model(bodies, gravity=gravity,
                 name=name or f"planar{n}{'_symbolic' if symbolic_params else ''}",
                 max_bodies=max_bodies)


def paper004_chain(n: int, name: str | None = None, max_bodies: int | None = None) -> Model:
    """Paper 004's benchmark: n links, revolute about local z, m = 1 kg, l = 1 m (along x), CoM at
    mid-link, Izz = 1 kg m^2 and all other inertia entries 0 (as in the paper; a planar body, so
    the inertia check is skipped). Gravity (0, -9.81, 0) lies in the plane of motion (the paper
    does not state it)."""
    n = _positive_int(n)
    check_size(n, f"paper004_chain({n})", max_bodies)
    bodies = [Body(f"link{i + 1}", None if i == 0 else f"link{i}", make_joint("revolute", "z"), 1.0,
                   (0.5, 0.0, 0.0), np.diag([0.0, 0.0, 1.0]),
                   Transform(np.eye(3), np.array([0.0 if i == 0 else 1.0, 0.0, 0.0])))
              for i in range(n)]
    return Model(bodies, gravity=(0.0, -9.81, 0.0), name=name or f"paper004_{n}",
                 check_inertias=False, max_bodies=max_bodies)


def random_state(model: Model, seed=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random state (q, qd, qdd) as in paper 000 Sec. 5: joint angles in [0, 2 pi) (unit
    quaternions for spherical/floating joints, see ``Model.random_q``), qd and qdd entries in
    [0, 10]."""
    rng = np.random.default_rng(seed)
    q = model.random_q(rng)
    return q, rng.uniform(0.0, 10.0, model.nv), rng.uniform(0.0, 10.0, model.nv)
