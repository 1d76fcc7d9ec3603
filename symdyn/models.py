"""Model builders: random trees for tests, and the papers' benchmark topologies."""
from __future__ import annotations

import numpy as np

from .joints import Floating, Helical, Planar, Prismatic, Revolute, Spherical
from .model import Body, Model
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


def random_joint(rng, kinds=("revolute",)):
    kind = kinds[rng.integers(0, len(kinds))]
    if kind == "revolute":
        return Revolute(random_axis(rng))
    if kind == "prismatic":
        return Prismatic(random_axis(rng))
    if kind == "helical":
        return Helical(random_axis(rng), pitch=float(rng.uniform(-0.2, 0.2)))
    if kind == "spherical":
        return Spherical()
    if kind == "planar":
        return Planar()
    if kind == "floating":
        return Floating()
    raise ValueError(f"unknown joint kind {kind!r}")


def random_tree(n: int, seed=0, parents=None, joint_kinds=("revolute",), floating_base=False,
                name: str | None = None) -> Model:
    """A random tree of n bodies: random parents (or the given parent array), joints drawn from
    ``joint_kinds``, random tree transforms and physically consistent inertias."""
    rng = np.random.default_rng(seed)
    if parents is None:
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    bodies = []
    for i, p in enumerate(parents):
        joint = Floating() if (floating_base and i == 0) else random_joint(rng, joint_kinds)
        X = Transform(random_rotation(rng).T, rng.uniform(-1, 1, 3))
        m, c, Ic = random_inertia(rng)
        bodies.append(Body(f"b{i + 1}", None if p < 0 else f"b{p + 1}", joint, m, c, Ic, X))
    return Model(bodies, name=name or f"random{n}")
