"""Base (identifiable) inertial parameters from stacked regressors, on NumPy alone.

Not an algorithm module (it works on numbers with NumPy): :func:`base_parameters` evaluates
:func:`symdyn.algorithms.regressors.joint_torque_regressor` at random states and stacks the
results ``W`` (n_samples nv x n, ``n = 10 N``, or ``10 N + nv`` with ``armature=True``).

Rank. The singular values ``s`` of ``W`` decide it: ``rank = #{s_k > tol * s_0}``, the same count
as ``numpy.linalg.matrix_rank(W, tol=tol * s_0)``. The tolerance is relative to the largest singular
value of the whole stack, never to single columns, so a column that is zero up to round-off (a
massless frame, a parameter no joint can excite) is never counted.

Selection. With ``W ~ U_r S_r V_r^T`` (the ``rank`` leading singular triplets), ``A = S_r V_r^T``
(rank x n) has the column norms and the linear relations of ``W`` up to the discarded singular
values. A pivoted Gram-Schmidt on ``A`` (re-orthogonalized) picks ``rank`` independent columns: at
each step the candidate with the largest residual relative to its own norm (so that the choice does
not favour parameters in large units), among the candidates whose residual is at least
``1e-3`` of the largest one and above ``tol * s_0`` (so that no column that is round-off, or
nearly in the span of those already picked, is taken). Then ``pi_1 = pi[independent]``,
``pi_2 = pi[dependent]`` and ``W_2 = W_1 K_d`` with ``K_d`` the least-squares solution
(``numpy.linalg.lstsq`` on the column-scaled ``W_1``), so
``W pi = W_1 (pi_1 + K_d pi_2) = W_1 beta``.
The result gives the selection and ``K`` (rank x n) with ``beta = K @ pi``:
``Y @ pi == Y[:, independent] @ (K @ pi)`` for the regressor at any state.

The rank is a property of the model's kinematics (and of gravity): for a planar 2R arm moving in a
vertical plane it is 6 (``ZZ_1 + m_2 l_1^2``, ``MX_1 + m_2 l_1``, ``MY_1``, ``ZZ_2``, ``MX_2``,
``MY_2``), and 4 when gravity is zero or normal to the plane (the first moments of link 1 drop out).
With ``armature=True`` the nv armature entries join the parameters (``Y = [Y_rb, diag(qdd)]``,
:func:`~symdyn.algorithms.regressors.joint_torque_regressor`); an armature on the joint of the
first body of a fixed base about a fixed axis is then not separable from that body's ``I_zz``.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from ..algorithms.regressors import joint_torque_regressor
from .parameters import parameter_names

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["BaseParameters", "base_parameters"]

#: A candidate column's residual must be at least this fraction of the largest residual of the
#: step to be picked (bounds how much the scale-invariant choice may worsen the conditioning).
_PIVOT_FRACTION = 1e-3
#: Entries of ``K_d`` whose contribution ``|K_d[a, b]| * |W[:, independent[a]]|`` is below this
#: fraction of the dependent column's norm (or of ``s_0`` times ``_ROUND_OFF``) are set to zero.
_CLEAN = 1e-10
_ROUND_OFF = 1e-13


class BaseParameters(NamedTuple):
    """Result of :func:`base_parameters`.

    ``rank``: number of base parameters; ``independent`` (rank,) and ``dependent`` (n - rank,)
    indices into ``pi`` (ascending; n = 10N, or 10N + nv with the armature); ``K`` (rank x n):
    ``beta = K @ pi`` with ``K[:, independent] = 1`` (identity) and ``K[:, dependent] = K_d``;
    ``K_d`` (rank x (n - rank)): ``beta = pi[independent] + K_d @ pi[dependent]``; ``names``: the
    label of each base parameter's leading (independent) entry; ``singular_values``: the singular
    values of the stacked regressor ``W`` (decreasing; ``rank`` of them exceed ``tol`` times the
    first), to judge the tolerance; ``parameter_names``: the labels of all n entries of ``pi``
    (``"<body>.<parameter>"``, then ``"<joint>.armature"`` / ``"<joint>.armature[k]"``)."""

    rank: int
    independent: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    K_d: np.ndarray
    names: list
    singular_values: np.ndarray
    parameter_names: list

    def values(self, pi: Any) -> np.ndarray:
        """The base parameters ``beta = K @ pi`` of full parameters ``pi`` (n entries)."""
        p = np.asarray(pi, dtype=float).reshape(-1)
        if p.size != self.K.shape[1]:
            raise ValueError(f"pi must have {self.K.shape[1]} entries (the columns of the "
                             f"regressor), got {p.size}")
        return self.K @ p

    def regressor(self, Y: Any) -> Any:
        """``Y_base = Y[:, independent]`` of a regressor ``Y`` with n columns, so that
        ``Y @ pi == Y_base @ values(pi)``."""
        if getattr(Y, "ndim", 2) != 2 or Y.shape[1] != self.K.shape[1]:
            raise ValueError(f"Y must be a matrix with {self.K.shape[1]} columns (the regressor "
                             f"the base parameters were computed from), got shape "
                             f"{getattr(Y, 'shape', None)}")
        return Y[:, self.independent]

    def expressions(self, digits: int = 6) -> list[str]:
        """Readable combinations, e.g. ``'link1.I_zz +0.49*link2.m'``."""
        out = []
        for r, k in enumerate(self.independent):
            terms = [self.parameter_names[k]]
            for c, d in enumerate(self.dependent):
                if self.K_d[r, c] != 0:
                    terms.append(f"{self.K_d[r, c]:+.{digits}g}*{self.parameter_names[d]}")
            out.append(" ".join(terms))
        return out


def _check_options(n_samples: Any, tol: Any) -> None:
    if n_samples is not None:
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
            raise TypeError(f"n_samples must be None or an integer >= 1, got {n_samples!r}")
        if n_samples < 1:
            raise ValueError(f"n_samples must be None or an integer >= 1, got {n_samples!r}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number in (0, 1), got {type(tol).__name__}")
    if not (math.isfinite(float(tol)) and 0.0 < float(tol) < 1.0):
        raise ValueError(f"tol must be finite with 0 < tol < 1 (relative to the largest singular "
                         f"value), got {tol!r}")


def _select(A: np.ndarray, norms: np.ndarray, floor: float, r: int) -> np.ndarray:
    """``r`` pivot columns of ``A`` (see the module docstring): scale-invariant pivoting among the
    columns whose residual is at least ``_PIVOT_FRACTION`` of the step's largest and above
    ``floor``."""
    R = A.copy()
    Q = np.zeros((A.shape[0], r))
    chosen = np.zeros(A.shape[1], dtype=bool)
    picks = []
    for k in range(r):
        res = np.linalg.norm(R, axis=0)
        res[chosen] = 0.0
        big = float(res.max())
        ok = (res >= _PIVOT_FRACTION * big) & (res > floor)
        if not ok.any():                        # only reached if the rank were overestimated
            ok = res == big
        score = np.where(ok, res / np.where(norms > 0, norms, 1.0), -1.0)
        j = int(np.argmax(score))
        qv = R[:, j] / res[j]
        for _ in range(2):                      # re-orthogonalize against the columns picked
            qv = qv - Q[:, :k] @ (Q[:, :k].T @ qv)
            qv = qv / np.linalg.norm(qv)
        Q[:, k] = qv
        R -= np.outer(qv, qv @ R)
        chosen[j] = True
        picks.append(j)
    return np.array(picks, dtype=int)


def base_parameters(model: Model, n_samples: int | None = None, seed: Any = 0, tol: float = 1e-8,
                    regressor: Callable[..., Any] = joint_torque_regressor, *,
                    armature: bool = False) -> BaseParameters:
    """The identifiable combinations of the inertial parameters of a numeric ``model``.

    ``n_samples`` random states (an integer >= 1; default: enough for three times as many rows as
    parameters, at least 20) with ``q = model.random_q``, ``qd`` and ``qdd`` standard normal, from
    ``numpy.random.default_rng(seed)``; ``regressor(model, q, qd, qdd)`` is stacked (default the
    joint torque regressor, gravity from ``model.gravity``; it must return n_v x 10N, or
    nv x (10N + nv) with ``armature=True``, when it is called with ``armature=True``).

    ``tol`` (0 < tol < 1): singular values of the stack at most ``tol`` times the largest count as
    zero, so ``rank == numpy.linalg.matrix_rank(W, tol=tol * s_0)``. ``armature=True`` adds the
    model's nv armature entries as parameters (``pi = [inertial_parameters(model);
    model.armature]``, :func:`symdyn.inertial_parameters` with ``armature=True``);
    by default only the rigid-body part is identified (the regressor of
    ``rnea(model.replace(armature=0), ...)``). Entries of ``K_d`` that contribute less than
    ``1e-10`` of a dependent column (round-off) are set to zero. See :class:`BaseParameters` and
    the module docstring for the method.
    """
    from ..model import Model

    if not isinstance(model, Model):
        raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
    if model.is_symbolic:
        raise ValueError("base_parameters needs a numeric model (use model.subs(...) first)")
    if model.nv == 0:
        raise ValueError(f"base_parameters: model {model.name!r} has no moving joint (nv = 0), so "
                         "no regressor rows to identify parameters from")
    _check_options(n_samples, tol)
    if not isinstance(armature, (bool, np.bool_)):
        raise TypeError(f"armature must be True or False, got {armature!r}")
    if not callable(regressor):
        raise TypeError(f"regressor must be a function (model, q, qd, qdd), got "
                        f"{type(regressor).__name__}")
    armature = bool(armature)
    n = 10 * model.N + (model.nv if armature else 0)
    if n_samples is None:
        n_samples = max(20, int(np.ceil(3 * n / model.nv)))
    rng = np.random.default_rng(seed)
    kw = {"armature": True} if armature else {}
    blocks = []
    for _ in range(int(n_samples)):
        Y = np.asarray(regressor(model, model.random_q(rng), rng.standard_normal(model.nv),
                                 rng.standard_normal(model.nv), **kw), dtype=float)
        if Y.shape != (model.nv, n):
            raise ValueError(f"regressor returned shape {Y.shape}; expected ({model.nv}, {n}) "
                             f"(nv x {'10N + nv' if armature else '10N'})")
        blocks.append(Y)
    W = np.vstack(blocks)
    if not np.all(np.isfinite(W)):
        raise ValueError("the stacked regressor has non-finite entries (check the model and the "
                         "regressor)")
    # W = Q R (tall stack: the SVD of the n x n factor R is W's, at a fraction of the work)
    Rw = np.asarray(np.linalg.qr(W, mode="r")) if W.shape[0] > W.shape[1] else W
    _, s, Vt = np.linalg.svd(Rw, full_matrices=False)
    s0 = float(s[0]) if s.size else 0.0
    r = int(np.sum(s > tol * s0)) if s0 > 0 else 0
    norms = np.linalg.norm(W, axis=0)
    if r:
        ind = _select(s[:r, None] * Vt[:r], norms, tol * s0, r)
    else:
        ind = np.zeros(0, dtype=int)
    dep = np.setdiff1d(np.arange(n), ind)
    ind = np.sort(ind)
    if r and dep.size:
        c = norms[ind]
        sol = np.linalg.lstsq(Rw[:, ind] / c, Rw[:, dep], rcond=None)[0]   # W = Q Rw
        Kd = sol / c[:, None]
        contrib = np.abs(Kd) * c[:, None]
        Kd[contrib <= np.maximum(_CLEAN * norms[dep][None, :], _ROUND_OFF * s0)] = 0.0
    else:
        Kd = np.zeros((r, dep.size))
    K = np.zeros((r, n))
    K[np.arange(r), ind] = 1.0
    K[:, dep] = Kd
    labels = parameter_names(model, armature=armature)
    return BaseParameters(r, ind, dep, K, Kd, [labels[k] for k in ind], s, labels)
