"""NumPy helpers for closed-loop models: closure checks, Newton on the loop constraints,
configuration from independent coordinates, energies and an RK4 simulator.

Numeric only (imports NumPy); the symbolic-capable kinematics and dynamics live in :mod:`.loops`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

import numpy as np

from ..algorithms.configuration import integrate
from ..algorithms.kinematics import forward_kinematics
from .errors import ClosureError, SingularConfigurationError

if TYPE_CHECKING:
    from .loops import LoopModel


def check_closed(loop: LoopModel, residual, what: str = "q") -> None:
    """Raise :class:`ClosureError` if the closure ``residual`` (at the configuration called
    ``what`` in the message) exceeds ``loop.closure_tol``."""
    r = np.asarray(residual, float).reshape(-1)
    if not np.all(np.isfinite(r)):
        raise ClosureError(f"{what}: the closure residual is not finite")
    if np.abs(r).max(initial=0.0) <= loop.closure_tol:
        return
    start, worst = 0, []
    for c, rows in enumerate(loop._rows):
        seg = np.abs(r[start:start + len(rows)])
        worst.append((float(seg.max()), c))
        start += len(rows)
    err, c = max(worst)
    name = loop.closures[c].name or f"#{c}"
    raise ClosureError(f"{what} does not close the loops of {loop.name!r}: closure {name} has "
                       f"residual {err:.3e} > closure_tol = {loop.closure_tol:g}; complete the "
                       "configuration with symdyn.constrained.numeric.solve_configuration(loop, q)")


def check_regular(loop: LoopModel, Kd, dependent=None, independent=None) -> None:
    """Raise :class:`SingularConfigurationError` if ``K_d`` is (numerically) singular; the message
    names ``dependent``/``independent`` (default: the loop's, e.g. one cluster's for ClusterTree)."""
    Kd = np.asarray(Kd, float)
    s = np.linalg.svd(Kd, compute_uv=False)
    if s.size == 0:
        return
    if s[-1] <= loop.singular_tol * max(s[0], 1e-300):
        dependent = loop.dependent if dependent is None else dependent
        independent = loop.independent if independent is None else independent
        names = [_speed_name(loop, t) for t in dependent]
        raise SingularConfigurationError(
            f"{loop.name!r}: the dependent-speed Jacobian K_d is singular at this configuration "
            f"(singular values {s[0]:.3e} .. {s[-1]:.3e}); the dependent speeds {names} are not "
            f"determined by the independent ones {[_speed_name(loop, t) for t in independent]} "
            "(a singular/dead-center pose: choose other independent speeds or another pose)")


def _speed_name(loop: LoopModel, t: int) -> str:
    tree = loop.tree
    for i, (a, b) in enumerate(tree.v_idx):
        if a <= t < b:
            return tree.names[i] if b - a == 1 else f"{tree.names[i]}[{t - a}]"
    return str(t)


def solve_configuration(loop: LoopModel, q0=None, *, tol: float = 1e-12,
                        max_iter: int = 50) -> np.ndarray:
    """Close the loops by Newton's method on the dependent speeds' directions, starting at ``q0``
    (default ``loop.q_ref``): ``q <- q (+) P_d dq_d`` with ``K_d dq_d = -r(q)`` and a halving line
    search. The independent directions are not moved (independent 1-DoF joint coordinates keep
    their values). Raises :class:`ClosureError` when it does not converge (loop cannot close
    near q0) and :class:`SingularConfigurationError` at a singular K_d."""
    if q0 is None:
        if loop.q_ref is None:
            raise ValueError(f"{loop.name!r} has no q_ref: pass an initial guess q0")
        q0 = loop.q_ref
    tree = loop.tree
    q = np.array(integrate(tree, np.asarray(q0, float), np.zeros(tree.nv)), float)
    for _ in range(max_iter):
        r, K = loop.residual_and_jacobian(q)
        r = np.asarray(r, float)
        err = np.abs(r).max(initial=0.0)
        if err <= tol:
            return q
        Kd = np.asarray(K, float)[:, loop.dependent]
        check_regular(loop, Kd)
        step = np.zeros(tree.nv)
        step[loop.dependent] = -np.linalg.solve(Kd, r)
        for _ in range(30):  # halving line search on max |r|
            qn = np.asarray(integrate(tree, q, step), float)
            rn = np.asarray(loop.constraint_residual(qn), float)
            if np.abs(rn).max() < err:
                break
            step /= 2
        else:
            break
        q = qn
    r = np.asarray(loop.constraint_residual(q), float)
    if np.abs(r).max(initial=0.0) <= tol:
        return q
    raise ClosureError(f"{loop.name!r}: the loop constraints cannot be satisfied near the given "
                       f"configuration (Newton stalled at residual {np.abs(r).max():.3e}); the "
                       "links may not reach, or the independent coordinates are out of range")


def _coordinate_slots(loop: LoopModel) -> list[int]:
    """q indices of the independent speeds; each must be a 1-DoF joint with qd = dq/dt."""
    tree, slots = loop.tree, []
    for t in loop.independent:
        for i, (a, b) in enumerate(tree.v_idx):
            if a <= t < b:
                j = tree.joints[i]
                if j.nq != 1 or j.nv != 1:
                    raise ValueError(f"independent speed {t} belongs to the {j.type} joint of "
                                     f"{tree.names[i]!r}: independent coordinates need 1-DoF joints "
                                     "(revolute, prismatic, helical)")
                slots.append(tree.q_idx[i][0])
    return slots


def independent_coordinates(loop: LoopModel, q) -> np.ndarray:
    """The independent 1-DoF joint coordinates of q (minimal coordinates theta, theta_dot = y)."""
    return np.asarray(q, float).reshape(-1)[_coordinate_slots(loop)]


def complete_configuration(loop: LoopModel, theta, guess=None, **kw) -> np.ndarray:
    """The closed configuration with independent coordinates ``theta`` (Newton from ``guess``,
    default ``loop.q_ref``; the assembly branch is the one nearest the guess)."""
    slots = _coordinate_slots(loop)
    theta = np.asarray(theta, float).reshape(-1)
    if theta.shape != (len(slots),) or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be {len(slots)} finite numbers, got {theta!r}")
    if guess is None:
        if loop.q_ref is None:
            raise ValueError(f"{loop.name!r} has no q_ref: pass a guess")
        guess = loop.q_ref
    q = np.array(guess, float).reshape(-1)
    q[slots] = theta
    return solve_configuration(loop, q, **kw)


def potential_energy(model, q) -> float:
    """Gravitational potential ``-sum_k m_k g . p_com,k`` (world frame) of a tree model."""
    R, p, _ = forward_kinematics(model, q, backend="numpy")
    g = np.asarray(model.gravity, float).reshape(3)
    U = 0.0
    for k, Ik in enumerate(model.I):
        Ik = np.asarray(Ik, float)
        m = Ik[3, 3]
        c = np.array([Ik[2, 4], Ik[0, 5], Ik[1, 3]]) / m                    # m S(c) block
        U -= m * g @ (p[k] + R[k] @ c)
    return float(U)


def energy(loop: LoopModel, q, y) -> float:
    """Total energy ``1/2 y^T Mbar y + U(q)`` of a closed-loop model."""
    y = np.asarray(y, float)
    M = np.asarray(loop.dynamics(q, y).M, float)
    return float(0.5 * y @ M @ y + potential_energy(loop.tree, q))


class Trajectory(NamedTuple):
    t: np.ndarray
    q: np.ndarray      # (steps+1, nq) closed configurations
    y: np.ndarray      # (steps+1, ny) minimal speeds


def simulate(loop: LoopModel, q0, y0, t_final: float, dt: float,
             tau: Callable | None = None) -> Trajectory:
    """RK4 in the minimal coordinates ``(theta, y)`` with ``theta_dot = y`` (independent speeds
    must be 1-DoF joint rates) and ``ydot`` from :meth:`LoopModel.forward_dynamics`; the dependent
    coordinates are re-solved by Newton at every stage. ``tau(t, q, y)`` returns tree joint
    forces (nv) or None."""
    if not (dt > 0 and t_final >= 0):
        raise ValueError(f"need dt > 0 and t_final >= 0, got dt={dt}, t_final={t_final}")
    steps = int(round(t_final / dt))
    q = complete_configuration(loop, independent_coordinates(loop, q0), guess=q0)
    th, y = independent_coordinates(loop, q), np.asarray(y0, float).reshape(-1).copy()

    def f(t, th, y, guess):
        qq = complete_configuration(loop, th, guess=guess)
        u = None if tau is None else tau(t, qq, y)
        return y, np.asarray(loop.forward_dynamics(qq, y, u), float).reshape(-1), qq

    T, Q, Y = [0.0], [q], [y.copy()]
    for n in range(steps):
        t = n * dt
        k1, l1, _ = f(t, th, y, q)
        k2, l2, qa = f(t + dt / 2, th + dt / 2 * k1, y + dt / 2 * l1, q)
        k3, l3, _ = f(t + dt / 2, th + dt / 2 * k2, y + dt / 2 * l2, qa)
        k4, l4, _ = f(t + dt, th + dt * k3, y + dt * l3, qa)
        th = th + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        y = y + dt / 6 * (l1 + 2 * l2 + 2 * l3 + l4)
        q = complete_configuration(loop, th, guess=qa)
        T.append(t + dt)
        Q.append(q)
        Y.append(y.copy())
    return Trajectory(np.array(T), np.array(Q), np.array(Y))
