"""Worked closed-loop mechanisms (spanning tree + loop closures), with documented geometry.

:func:`four_bar` and :func:`five_bar_leg` are planar mechanisms moving in the world x-y plane (revolute axes along z, gravity along -y
by default), modelled as spatial trees closed by a 'planar' pin closure (the two in-plane
components of the relative velocity of the pin; the out-of-plane ones vanish identically).
Links are slender bars (length l along their body x axis, width w = l/20 in y and z) whose CoM
may be offset from the bar axis. Each builder returns a :class:`~.loops.LoopModel` whose
``q_ref`` is a closed configuration (from the closed-form position analysis below), the default
Newton guess of :func:`.numeric.complete_configuration`. :func:`parallel_ankle` is a spatial
2-DoF ankle driven by two crank-rod actuators (spherical closures). :func:`branched_loops` is a
random floating-base mechanism with several local loops (clusters hanging from clusters), the
test case of the cluster-tree method; :func:`loop_chain` and :func:`sized_loop_chain` are chains
of random loop units for scaling studies (in the number of loops, and in the size of each loop).
"""
from __future__ import annotations

import math

import numpy as np

from ..joints import Floating, Helical, Planar, Prismatic, Revolute, Spherical
from ..model import Body, Model
from ..spatial import Transform, compose, inverse
from .loops import LoopClosure, LoopModel


def bar_inertia(mass: float, length: float) -> np.ndarray:
    """Rotational inertia about the CoM of a bar along x of square section (length/20)."""
    w2 = (length / 20.0) ** 2
    return mass / 12.0 * np.diag([2 * w2, length ** 2 + w2, length ** 2 + w2])


def _at(x: float, y: float = 0.0) -> Transform:
    return Transform(np.eye(3), np.array([x, y, 0.0]))


def _circle_intersection(c1, r1, c2, r2, branch: int):
    """Intersection of circles (c1, r1), (c2, r2) in the plane; branch +1: left of c1->c2."""
    c1, c2 = np.asarray(c1, float), np.asarray(c2, float)
    d = np.linalg.norm(c2 - c1)
    if d < 1e-12 or d > r1 + r2 or d < abs(r1 - r2):
        raise ValueError(f"the links cannot close: distance {d:.4g} between circle centres with "
                         f"radii {r1:.4g}, {r2:.4g}")
    a = (r1 ** 2 - r2 ** 2 + d ** 2) / (2 * d)
    h = math.sqrt(max(r1 ** 2 - a ** 2, 0.0))
    u = (c2 - c1) / d
    return c1 + a * u + branch * h * np.array([-u[1], u[0]])


def four_bar(ground: float = 0.55, crank: float = 0.2, coupler: float = 0.6, rocker: float = 0.5,
             masses=(1.0, 2.0, 1.5), com_offsets=((0.0, 0.0), (0.0, 0.05), (0.0, -0.03)),
             gravity=(0.0, -9.81, 0.0), theta_ref: float = 0.3, independent: str = "crank",
             branch: int = 1) -> LoopModel:
    """Planar four-bar linkage (default: Grashof crank-rocker, the crank turns fully).

    Geometry (world x-y plane): ground pivots O = (0, 0) and D = (``ground``, 0). Spanning tree:
    ``crank`` (revolute z at O, angle theta = q0 from world x), ``coupler`` (revolute z at the
    crank tip (crank, 0) in crank coordinates, relative angle q1), ``rocker`` (revolute z at D,
    angle q2 from world x). Loop closure: 'planar' pin between the coupler tip (coupler, 0) and
    the rocker tip (rocker, 0). Body k has mass ``masses[k]`` and its CoM at
    ``(l_k/2 + dx, dy)`` in its own frame with ``(dx, dy) = com_offsets[k]``. Independent speed:
    the ``independent`` body's joint rate ('crank', 'coupler' or 'rocker'); ``branch`` picks the
    assembly (+1: coupler tip on the left of crank tip -> D). ``q_ref``: the pose at crank angle
    ``theta_ref``.
    """
    lengths = {"crank": crank, "coupler": coupler, "rocker": rocker}
    for key, v in list(lengths.items()) + [("ground", ground)]:
        if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
            raise ValueError(f"{key} length must be a positive number, got {v!r}")
    names = ("crank", "coupler", "rocker")
    bodies = []
    for k, name in enumerate(names):
        l, (dx, dy) = lengths[name], com_offsets[k]
        parent = {"crank": None, "coupler": "crank", "rocker": None}[name]
        X = {"crank": _at(0.0), "coupler": _at(crank), "rocker": _at(ground)}[name]
        bodies.append(Body(name, parent, Revolute("z"), masses[k], (l / 2 + dx, dy, 0.0),
                           bar_inertia(masses[k], l), X))
    tree = Model(bodies, gravity=gravity, name="four_bar")
    closure = LoopClosure("coupler", "rocker", _at(coupler), _at(rocker), kind="planar",
                          name="coupler-rocker pin")
    A = crank * np.array([math.cos(theta_ref), math.sin(theta_ref)])
    Bp = _circle_intersection(A, coupler, (ground, 0.0), rocker, branch)
    alpha = math.atan2(Bp[1] - A[1], Bp[0] - A[0])
    beta = math.atan2(Bp[1], Bp[0] - ground)
    q_ref = np.array([theta_ref, alpha - theta_ref, beta])
    if independent not in names:
        raise ValueError(f"independent must be one of {names}, got {independent!r}")
    return LoopModel(tree, [closure], [independent], name="four_bar", q_ref=q_ref)


def five_bar_leg(thigh: float = 0.1, shin: float = 0.2, hip_spacing: float = 0.0,
                 masses=(0.3, 0.15, 0.3, 0.15), gravity=(0.0, -9.81, 0.0),
                 motors_ref=(-1.2, -1.9), branch: int = 1) -> LoopModel:
    """Parallel-actuated planar leg (symmetric five-bar, Minitaur-style when ``hip_spacing=0``).

    Geometry (world x-y plane, y up): two motors at the hip, H1 = (+hip_spacing/2, 0) and
    H2 = (-hip_spacing/2, 0), drive thighs of length ``thigh`` (revolute z, absolute angles
    q0 = theta1, q2 = theta2 from world x). Each shin (length ``shin``) hangs from its thigh tip
    (revolute z, relative angles q1, q3). The two shin tips meet at the foot: a 'planar' pin
    closure. Independent speeds: the two motor rates (q0, q2) -- the leg is 2-DoF and parallel
    actuated. Singular when the two shins are collinear (foot at its reach limits). ``q_ref`` is
    the pose with motor angles ``motors_ref`` (default: thigh 1 down-right, thigh 2 down-left);
    ``branch=+1`` puts the foot on the left of the knee1 -> knee2 direction (below the knees
    for the default), -1 the mirror assembly.
    """
    for k, v in (("thigh", thigh), ("shin", shin)):
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{k} length must be positive, got {v!r}")
    h = hip_spacing / 2
    spec = [("thigh1", None, _at(h), thigh), ("shin1", "thigh1", _at(thigh), shin),
            ("thigh2", None, _at(-h), thigh), ("shin2", "thigh2", _at(thigh), shin)]
    bodies = [Body(n, p, Revolute("z"), masses[k], (l / 2, 0.0, 0.0), bar_inertia(masses[k], l), X)
              for k, (n, p, X, l) in enumerate(spec)]
    tree = Model(bodies, gravity=gravity, name="five_bar_leg")
    closure = LoopClosure("shin1", "shin2", _at(shin), _at(shin), kind="planar", name="foot")
    t1, t2 = motors_ref
    K1 = np.array([h, 0.0]) + thigh * np.array([math.cos(t1), math.sin(t1)])
    K2 = np.array([-h, 0.0]) + thigh * np.array([math.cos(t2), math.sin(t2)])
    F = _circle_intersection(K1, shin, K2, shin, branch)
    a1 = math.atan2(F[1] - K1[1], F[0] - K1[0])
    a2 = math.atan2(F[1] - K2[1], F[0] - K2[0])
    q_ref = np.array([t1, a1 - t1, t2, a2 - t2])
    return LoopModel(tree, [closure], ["thigh1", "thigh2"], name="five_bar_leg", q_ref=q_ref)


def rod_inertia(mass: float, length: float, axis: int = 2) -> np.ndarray:
    """Rotational inertia about the CoM of a thin rod (radius length/40) along body ``axis``."""
    r2 = (length / 40.0) ** 2
    d = np.full(3, mass * (length ** 2 / 12 + r2 / 4))
    d[axis] = mass * r2 / 2
    return np.diag(d)


def _box(m: float, a: float, b: float, c: float) -> np.ndarray:
    return m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def _at3(x: float, y: float, z: float) -> Transform:
    return Transform(np.eye(3), np.array([x, y, z], dtype=float))


def parallel_ankle(height: float = 0.25, crank: float = 0.04, half_width: float = 0.04,
                   heel: float = 0.05, foot_mass: float = 1.0, foot_com=(0.03, 0.0, -0.05),
                   independent: str = "motors", gravity=(0.0, 0.0, -9.81)) -> LoopModel:
    """A 2-DoF parallel ankle (pitch/roll) driven by two crank-rod (RUS) actuators on the shin.

    Frames: the shin is the world; z up, x forward, y left, origin at the ankle centre.
    Foot: universal joint at the ankle, ``ankle_cross`` (revolute about y, pitch; 20 g cross) then
    ``foot`` (revolute about x, roll; mass ``foot_mass``, CoM ``foot_com``, box inertia).
    Actuator s = L (y = +half_width) or R (y = -half_width): motor ``crank_s`` (revolute about y)
    at (-heel - crank, +-half_width, height), crank of length ``crank`` along its x axis (50 g);
    universal joint at the crank tip: ``rodcross_s`` (revolute about x, 5 g) then ``rod_s``
    (revolute about y, 30 g, length ``height`` along -z). Loop closures: 'spherical' between each
    rod's lower end (0, 0, -height) and the foot point (-heel, +-half_width, 0) (foot coordinates).
    At q = 0 (``q_ref``) the cranks point forward, the rods hang vertically and the foot is level.

    Tree speeds (8): ankle pitch, roll, crank_L, rodcross_L, rod_L, crank_R, rodcross_R, rod_R;
    6 closure constraints leave 2 DoF. ``independent``: 'motors' (crank_L, crank_R: the
    actuated coordinates) or 'foot' (pitch, roll). Pitch moves both rod ends alike, roll in
    opposite directions, so both choices are regular around q = 0.
    """
    for k, v in (("height", height), ("crank", crank), ("half_width", half_width), ("heel", heel)):
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{k} must be positive, got {v!r}")
    bodies = [Body("ankle_cross", None, Revolute("y"), 0.02, (0, 0, 0), _box(0.02, 0.02, 0.02, 0.02)),
              Body("foot", "ankle_cross", Revolute("x"), foot_mass, foot_com,
                   _box(foot_mass, 0.2, 0.08, 0.04))]
    closures = []
    for side, y in (("L", half_width), ("R", -half_width)):
        bodies += [
            Body(f"crank_{side}", None, Revolute("y"), 0.05, (crank / 2, 0, 0),
                 rod_inertia(0.05, crank, 0), _at3(-heel - crank, y, height)),
            Body(f"rodcross_{side}", f"crank_{side}", Revolute("x"), 0.005, (0, 0, 0),
                 _box(0.005, 0.01, 0.01, 0.01), _at3(crank, 0, 0)),
            Body(f"rod_{side}", f"rodcross_{side}", Revolute("y"), 0.03, (0, 0, -height / 2),
                 rod_inertia(0.03, height, 2)),
        ]
        closures.append(LoopClosure(f"rod_{side}", "foot", _at3(0, 0, -height), _at3(-heel, y, 0),
                                    kind="spherical", name=f"rod_{side} ball"))
    tree = Model(bodies, gravity=gravity, name="parallel_ankle")
    choice = {"motors": ["crank_L", "crank_R"], "foot": ["ankle_cross", "foot"]}
    if independent not in choice:
        raise ValueError(f"independent must be 'motors' or 'foot', got {independent!r}")
    return LoopModel(tree, closures, choice[independent], name=f"parallel_ankle({independent})",
                     q_ref=np.zeros(tree.nq))


def _world_poses(tree: Model, q) -> list:
    """World -> body transforms at q (NumPy)."""
    from ..algorithms.common import entry, joint_kinematics

    B, (qs,) = entry(tree, ("q", q, "q"), backend="numpy")
    Xup, _ = joint_kinematics(B, tree, qs)
    X0: list = []
    for k, p in enumerate(tree.parents):
        X0.append(Xup[k] if p < 0 else compose(B, Xup[k], X0[p]))
    return X0


def _dependent_columns(K: np.ndarray) -> list:
    """The m columns of K (m x n, full row rank) picked by greedy column pivoting (largest
    residual norm first): a well-conditioned K_d."""
    R = np.array(K, float)
    dep: list[int] = []
    for _ in range(R.shape[0]):
        norms = np.linalg.norm(R, axis=0)
        norms[dep] = -1.0
        j = int(np.argmax(norms))
        dep.append(j)
        u = R[:, j] / np.linalg.norm(R[:, j])
        R = R - np.outer(u, u @ R)
    return sorted(dep)


def _random_loop_model(spec, pairs, seed_rng, name: str, shuffle: bool) -> LoopModel:
    """Random tree from ``spec`` [(name, parent, joint)], spherical closures between ``pairs``
    placed where the bodies are at a random q_ref, independent speeds by column pivoting."""
    from ..backends import get_backend
    from ..models import random_inertia, random_rotation

    NP, rng = get_backend("numpy"), seed_rng
    bodies = []
    for body, parent, joint in spec:
        m, c, Ic = random_inertia(rng)
        X = Transform(random_rotation(rng).T, rng.uniform(-1, 1, 3))
        bodies.append(Body(body, parent, joint, m, c, Ic, X))
    tree = Model(bodies, name=name)
    q = tree.random_q(rng)
    X0, idx = _world_poses(tree, q), tree.names.index
    closures = []
    for pred, succ in pairs:
        XW = Transform(random_rotation(rng).T, X0[idx(succ)].r + rng.uniform(-0.3, 0.3, 3))
        closures.append(LoopClosure(pred, succ, compose(NP, XW, inverse(NP, X0[idx(pred)])),
                                    compose(NP, XW, inverse(NP, X0[idx(succ)])),
                                    kind="spherical", name=f"{pred}-{succ}"))
    m = 3 * len(closures)
    K = LoopModel(tree, closures, list(range(tree.nv - m))).constraint_jacobian(q)
    dep = _dependent_columns(K)
    indep = [t for t in range(tree.nv) if t not in dep]
    if shuffle:
        rng.shuffle(indep)
    return LoopModel(tree, closures, indep, name=name, q_ref=q)


def branched_loops(seed: int = 0) -> LoopModel:
    """A random floating-base mechanism with three local loops, closed at ``q_ref``.

    Tree (parent in brackets): base (floating) - hip [base] (spherical) - a1 [hip] (revolute z),
    a2 [hip] (spherical), a3 [a2] (revolute, random axis) - knee [a1] (planar) - b1 [knee]
    (revolute x), b2 [knee] (helical y), b3 [b2] (spherical) - c1 [a3] (spherical), c2 [c1]
    (prismatic, random axis) - tip [c2] (revolute y). Spherical closures a3-a1 (loop through the
    hip), b1-b3 (through the knee) and a3-c2 (closing to the ancestor a3). Cluster tree:
    {base} {hip} {a1, a2, a3} {knee} {b1, b2, b3} {c1, c2} {tip}; 27 tree speeds, 18 minimal
    ones. Random tree transforms and inertias; ``q_ref`` is a random configuration, and the closure
    frames are placed where the bodies are at ``q_ref`` (so it closes). Independent speeds: all
    but the best-conditioned dependent ones of each loop (greedy column pivoting on K(q_ref)),
    in a shuffled order (exercises the speed bookkeeping).
    """
    rng = np.random.default_rng(seed)
    spec = [("base", None, Floating()), ("hip", "base", Spherical()),
            ("a1", "hip", Revolute("z")), ("a2", "hip", Spherical()),
            ("a3", "a2", Revolute(rng.normal(size=3))), ("knee", "a1", Planar()),
            ("b1", "knee", Revolute("x")), ("b2", "knee", Helical("y", 0.1)),
            ("b3", "b2", Spherical()), ("c1", "a3", Spherical()),
            ("c2", "c1", Prismatic(rng.normal(size=3))), ("tip", "c2", Revolute("y"))]
    return _random_loop_model(spec, (("a3", "a1"), ("b1", "b3"), ("a3", "c2")), rng,
                              f"branched_loops{seed}", shuffle=True)


def loop_chain(n: int, seed: int = 0) -> LoopModel:
    """A serial chain of ``n`` two-DoF loop units (scaling studies of the cluster-tree method).

    Unit k hangs from the previous unit's output body ``o{k-1}`` (the world for k = 0):
    ``s{k}`` (spherical) - ``o{k}`` [s{k}] (revolute, random axis) and ``r{k}`` (revolute, random
    axis) from the same parent, closed by a spherical joint between ``r{k}`` and ``o{k}``
    (5 speeds - 3 constraints = 2 DoF). Random geometry and inertias, closed at ``q_ref``;
    nv = 5n tree speeds, 2n minimal ones, n clusters in a chain.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    spec, pairs = [], []
    for k in range(n):
        parent = None if k == 0 else f"o{k - 1}"
        spec += [(f"s{k}", parent, Spherical()), (f"o{k}", f"s{k}", Revolute(rng.normal(size=3))),
                 (f"r{k}", parent, Revolute(rng.normal(size=3)))]
        pairs.append((f"r{k}", f"o{k}"))
    return _random_loop_model(spec, pairs, rng, f"loop_chain{n}", shuffle=False)


def sized_loop_chain(n: int, loop_size: int, seed: int = 0) -> LoopModel:
    """A serial chain of ``n`` loop units of ``loop_size`` bodies each (scaling studies of the
    cluster-tree method in the size of the local loops; ``loop_size=3`` has the topology of
    :func:`loop_chain`).

    Unit k hangs from the previous unit's output body ``o{k}`` (the world for k = 0) with two
    branches from that parent: branch A, ``s{k}`` (spherical) then ``a{k}_1`` ... (revolutes,
    random axes) ending in the output body ``o{k}``, ceil(loop_size / 2) bodies in all; branch B,
    ``r{k}_0`` ... (revolutes, random axes), the other floor(loop_size / 2) bodies. A spherical
    closure joins the tip of branch B to ``o{k}``: one loop through the parent of
    ``loop_size + 1`` links, ``loop_size + 2`` speeds - 3 constraints = ``loop_size - 1`` DoF per
    unit, one cluster of ``loop_size`` bodies. Random geometry and inertias, closed at ``q_ref``
    (a random configuration); independent speeds by column pivoting on the closure Jacobian.
    """
    for name, v, low in (("n", n, 1), ("loop_size", loop_size, 3)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    rng = np.random.default_rng(seed)
    spec, pairs = [], []
    n_a = (loop_size + 1) // 2
    for k in range(n):
        parent = None if k == 0 else f"o{k - 1}"
        branch_a = [f"s{k}"] + [f"a{k}_{j}" for j in range(1, n_a - 1)] + [f"o{k}"]
        prev = parent
        for j, body in enumerate(branch_a):
            spec.append((body, prev, Spherical() if j == 0 else Revolute(rng.normal(size=3))))
            prev = body
        prev = parent
        for j in range(loop_size - n_a):
            spec.append((f"r{k}_{j}", prev, Revolute(rng.normal(size=3))))
            prev = f"r{k}_{j}"
        pairs.append((prev, f"o{k}"))
    return _random_loop_model(spec, pairs, rng, f"sized_loop_chain{n}x{loop_size}",
                              shuffle=False)
