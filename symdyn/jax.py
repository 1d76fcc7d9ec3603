"""JAX convenience: jitted and vmapped symdyn algorithms over batches of states.

::

    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)        # symdyn computes in float64 (see below)
    import symdyn.jax
    from symdyn.models import serial_chain

    model = serial_chain(7)
    rnea = symdyn.jax.compile(model, "rnea")          # (Q, QD, QDD) -> TAU, leading batch axis
    tau = rnea(Q, QD, QDD)                            # Q: (batch, nq), QD, QDD: (batch, nv)
    tau0 = rnea.single(Q[0], QD[0], QDD[0])           # one state (jitted, not vmapped)
    M, Mdot, C = symdyn.jax.compile(model, "coriolis_matrix", frame="root")(Q, QD)
    dtau_dq = jax.jacfwd(rnea.single)(q, qd, qdd)     # differentiable (q in coordinates)

``algorithm`` is the name of a symdyn function (``"rnea"``, ``"crba"``, ``"aba"``,
``"coriolis_matrix"``, ``"christoffel"``, ``"rnea_derivatives"``, ``"aba_derivatives"``,
``"nonlinear_effects"``, ``"gravity_vector"``, the frame / centre-of-mass / energy functions and
the regressors) or such a function itself. Its required positional arguments after ``model`` that
are not given in ``options`` are the batched state arguments, in their order; ``options`` (e.g.
``factorization=``, ``frame=``, ``method=``, ``f_ext=``) are fixed at compile time. Results have
the function's structure (an array, a tuple of arrays) with the batch axis first.

Any JAX array works as input to symdyn's functions directly (``sd.rnea(model, jnp_q, ...)``,
inside your own ``jax.jit``/``vmap``/``grad``): the backend follows the inputs. This module only
packages the common case.

Checks. Under ``jit`` the values are tracers and cannot be checked; ``compile`` therefore checks
concrete batches before the call (``check=True``: shapes, NaN/inf, unit quaternions, in NumPy on
the host; pass ``check=False`` to skip them, e.g. for inputs already on a GPU).

Precision. JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)`` was called
before creating arrays. symdyn does not change that global setting on import; it refuses float32
with a :class:`~symdyn.backends.BackendError` unless you opt in with :func:`allow_float32`.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from symdyn.backends import BackendError, get_backend

__all__ = ["Compiled", "allow_float32", "compile"]

_QUATERNION_TOL = 1e-6
_STATE = {"q": "q"}       # argument name -> 'q' (length nq, quaternions); others: length nv


def allow_float32(allow: bool = True) -> None:
    """Opt in to single precision (JAX without ``jax_enable_x64``, or float32 inputs)."""
    get_backend("jax").allow_float32(allow)


def _resolve(algorithm) -> tuple[str, Callable]:
    if callable(algorithm):
        return getattr(algorithm, "__name__", "algorithm"), algorithm
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a symdyn function or its name, got "
                        f"{type(algorithm).__name__}")
    import symdyn
    import symdyn.algorithms
    from symdyn.algorithms import regressors
    for ns in (symdyn, symdyn.algorithms, regressors):
        fn = getattr(ns, algorithm, None)
        if callable(fn) and not algorithm.startswith("_"):
            return algorithm, fn
    raise ValueError(f"unknown algorithm {algorithm!r}: pass the name of a symdyn function "
                     "(rnea, crba, aba, coriolis_matrix, christoffel, rnea_derivatives, ...) "
                     "or the function")


class Compiled:
    """A jitted, vmapped algorithm of one model: ``f(*batched_states)``; ``f.single(*state)`` for
    one state; ``f.args`` names the batched arguments, ``f.sizes`` their lengths."""

    def __init__(self, model, algorithm, check: bool = True, **options: Any):
        from symdyn.model import Model
        if not isinstance(model, Model):
            raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
        if model.is_symbolic:
            raise BackendError(f"model {model.name!r} has SymPy parameters; substitute numbers "
                               "with model.subs(...) before compiling it with JAX")
        get_backend("jax")._float()           # float32 mode without opt-in: refuse now
        self.name, self.fn = _resolve(algorithm)
        self.model, self.options, self.check = model, dict(options), bool(check)
        params = list(inspect.signature(self.fn).parameters.values())[1:]
        self.args = tuple(p.name for p in params
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          and p.default is p.empty and p.name not in options)
        known = {p.name for p in params}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"{self.name}() takes no option {unknown[0]!r}")
        self.sizes = tuple(model.nq if a in _STATE else model.nv for a in self.args)
        fn, opts = self.fn, self.options

        def single(*xs):
            return fn(model, *xs, backend="jax", **opts)
        self._single = single
        self.single = jax.jit(single)
        self.batch = jax.jit(jax.vmap(single))

    def __repr__(self) -> str:
        return (f"<symdyn.jax.Compiled {self.name}({', '.join(self.args)}) of model "
                f"{self.model.name!r}, nq={self.model.nq}, nv={self.model.nv}>")

    def __call__(self, *xs):
        if len(xs) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} batched arguments "
                            f"({', '.join(self.args)}), got {len(xs)}")
        xs = tuple(self._batch_input(x, a, n) for x, a, n in zip(xs, self.args, self.sizes))
        sizes = {x.shape[0] for x in xs}
        if len(sizes) > 1:
            raise ValueError(f"{self.name}: batched arguments of different lengths "
                             f"{[x.shape[0] for x in xs]}")
        return self.batch(*xs)

    def _batch_input(self, x, arg: str, n: int):
        if not isinstance(x, (jax.Array, jax.core.Tracer)):
            arr = np.asarray(x)
            if arr.dtype.kind not in "fiu":
                raise TypeError(f"{arg} must be a (batch, {n}) array of real numbers, "
                                f"got dtype {arr.dtype}")
            x = jnp.asarray(arr, dtype=get_backend("jax")._float())
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{arg} must have shape (batch, {n}), got {tuple(x.shape)}")
        if self.check and not isinstance(x, jax.core.Tracer):
            self._check_values(np.asarray(x), arg)
        return x

    def _check_values(self, arr: np.ndarray, arg: str) -> None:
        finite = np.isfinite(arr)
        if not finite.all():
            s, i = np.argwhere(~finite)[0]
            raise ValueError(f"{arg}[{s}] contains NaN or inf at index {i}")
        if arg not in _STATE:
            return
        m = self.model
        for b, j in enumerate(m.joints):
            if j.type in ("spherical", "floating"):
                a = m.q_idx[b][1] - 4
                norm = np.sqrt(np.sum(arr[:, a:a + 4] ** 2, axis=1))
                bad = np.flatnonzero(np.abs(norm - 1.0) > _QUATERNION_TOL)
                if bad.size:
                    s = int(bad[0])
                    raise ValueError(f"{arg}[{s}, {a}:{a + 4}] (joint of body {m.names[b]!r}) must "
                                     f"be a unit quaternion (x, y, z, w); its norm is "
                                     f"{norm[s]:.6g}")


def compile(model, algorithm, *, check: bool = True, **options: Any) -> Compiled:  # noqa: A001
    """A jitted, vmapped ``algorithm`` of ``model`` over batches of states (leading batch axis);
    ``.single`` evaluates one state. See the module docstring."""
    return Compiled(model, algorithm, check=check, **options)
