"""Base (identifiable) inertial parameters by a rank-revealing QR of stacked regressors.

Not an algorithm module (it uses NumPy/SciPy on numbers): :func:`base_parameters` evaluates
:func:`symdyn.algorithms.regressors.joint_torque_regressor` at random states, stacks the results
``W`` (n_samples nv x 10N) and factors ``W P = Q R`` with column pivoting. The first ``rank``
pivoted columns are independent (``pi_1 = pi[independent]``), the others (``pi_2``) are linear
combinations of them on every trajectory: ``W_2 = W_1 K_d`` with ``K_d = R_11^{-1} R_12``, so
``W pi = W_1 (pi_1 + K_d pi_2) = W_1 beta``. The result gives the selection and the combination
matrix ``K`` (rank x 10N) with ``beta = K @ pi``: ``Y @ pi == Y[:, independent] @ (K @ pi)`` for
the joint torque regressor at any state.

The rank is a property of the model's kinematics (and of gravity): for a planar 2R arm moving in a
vertical plane it is 6 (``ZZ_1 + m_2 l_1^2``, ``MX_1 + m_2 l_1``, ``MY_1``, ``ZZ_2``, ``MX_2``,
``MY_2``), and 4 when gravity is zero or normal to the plane (the first moments of link 1 drop out).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from .algorithms.regressors import joint_torque_regressor
from .inertial import parameter_names

if TYPE_CHECKING:
    from .model import Model

__all__ = ["BaseParameters", "base_parameters"]


class BaseParameters(NamedTuple):
    """Result of :func:`base_parameters`.

    ``rank``: number of base parameters; ``independent`` (rank,) and ``dependent`` (10N - rank,)
    indices into ``pi`` (ascending); ``K`` (rank x 10N): ``beta = K @ pi`` with
    ``K[:, independent] = 1`` (identity) and ``K[:, dependent] = K_d``; ``K_d``
    (rank x (10N - rank)): ``beta = pi[independent] + K_d @ pi[dependent]``; ``names``: the
    ``"<body>.<parameter>"`` label of each base parameter's leading (independent) entry;
    ``singular_values``: ``|diag R|`` of the pivoted QR of the column-scaled stack (decreasing), to
    judge the tolerance; ``parameter_names``: the labels of all 10N entries of ``pi``."""

    rank: int
    independent: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    K_d: np.ndarray
    names: list
    singular_values: np.ndarray
    parameter_names: list

    def values(self, pi: Any) -> np.ndarray:
        """The base parameters ``beta = K @ pi`` of full parameters ``pi`` (10N)."""
        return self.K @ np.asarray(pi, dtype=float).reshape(-1)

    def regressor(self, Y: Any) -> Any:
        """``Y_base = Y[:, independent]`` of a regressor ``Y`` with 10N columns, so that
        ``Y @ pi == Y_base @ values(pi)``."""
        return Y[:, self.independent]

    def expressions(self, digits: int = 6) -> list[str]:
        """Readable combinations, e.g. ``'link1.I_zz +1*link2.m'``."""
        out = []
        for r, k in enumerate(self.independent):
            terms = [self.parameter_names[k]]
            for c, d in enumerate(self.dependent):
                if self.K_d[r, c] != 0:
                    terms.append(f"{self.K_d[r, c]:+.{digits}g}*{self.parameter_names[d]}")
            out.append(" ".join(terms))
        return out


def base_parameters(model: Model, n_samples: int | None = None, seed: Any = 0, tol: float = 1e-8,
                    regressor: Callable[..., Any] = joint_torque_regressor) -> BaseParameters:
    """The identifiable combinations of the inertial parameters of a numeric ``model``.

    ``n_samples`` random states (default: enough for three times as many rows as parameters,
    at least 20) with ``q = model.random_q``, ``qd`` and ``qdd`` standard normal, from
    ``numpy.random.default_rng(seed)``; ``regressor(model, q, qd, qdd)`` is stacked (default the
    joint torque regressor, gravity from ``model.gravity``). Columns whose pivoted ``|R_kk|`` is below
    ``tol * |R_00|`` count as dependent; entries of ``K_d`` below ``1e-10 max(1, max |K_d|)`` are
    set to zero (round-off). Columns are scaled to unit norm before the factorization, so the
    pivoting does not favour parameters with large units. See :class:`BaseParameters`.
    """
    from scipy.linalg import qr, solve_triangular

    if model.is_symbolic:
        raise ValueError("base_parameters needs a numeric model (use model.subs(...) first)")
    n = 10 * model.N
    if n_samples is None:
        n_samples = max(20, int(np.ceil(3 * n / model.nv)))
    rng = np.random.default_rng(seed)
    W = np.vstack([regressor(model, model.random_q(rng), rng.standard_normal(model.nv),
                             rng.standard_normal(model.nv)) for _ in range(n_samples)])
    norms = np.linalg.norm(W, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    _, R, P = qr(W / scale, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > tol * d[0])) if d.size and d[0] > 0 else 0
    ind, dep = P[:r], P[r:]
    # (W/scale)[:, dep] = (W/scale)[:, ind] R11^-1 R12  ->  unscale both sides
    Kd = solve_triangular(R[:r, :r], R[:r, r:]) if r else np.zeros((0, n - r))
    Kd = Kd * scale[dep][None, :] / scale[ind][:, None]
    Kd[np.abs(Kd) < 1e-10 * max(1.0, float(np.abs(Kd).max()) if Kd.size else 1.0)] = 0.0
    order = np.argsort(ind)
    ind, Kd = ind[order], Kd[order]
    dorder = np.argsort(dep)
    dep, Kd = dep[dorder], Kd[:, dorder]
    K = np.zeros((r, n))
    K[np.arange(r), ind] = 1.0
    K[:, dep] = Kd
    labels = parameter_names(model)
    return BaseParameters(r, ind, dep, K, Kd, [labels[k] for k in ind], d, labels)
