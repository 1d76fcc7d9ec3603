"""The compiled algorithm: :func:`compile`, :func:`compile_many` and :class:`Compiled`."""
from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from symdyn.backends import BackendError, get_backend

from .arguments import (QUATERNION_TOL, STATE, batch_sizes, batched_arguments, check_values,
                        resolve)
from .jitted import Jitted
from .routes import choose_route

__all__ = ["Compiled", "Single", "allow_float32", "compile", "compile_many"]


class Single:
    """``Compiled.single``: the jitted algorithm on one state (arguments of shapes ``(n,)``).
    Called with concrete values (NumPy or JAX arrays, lists) it checks them on the host as the
    batched call does (shapes; with ``check``, NaN / inf and unit quaternions, named); called
    with tracers (inside your ``jit``, ``grad``, ``jacfwd``, ``vmap``) it is the jitted function
    itself. ``lower(...)`` lowers it."""

    def __init__(self, jitted: Jitted, compiled: Compiled):
        self.jitted, self._compiled = jitted, compiled

    def __call__(self, *xs):
        if any(isinstance(x, jax.core.Tracer) for x in xs):
            return self.jitted(*xs)
        c = self._compiled
        if len(xs) != len(c.args):
            raise TypeError(f"{c.name}.single takes {len(c.args)} arguments "
                            f"({', '.join(c.args)}), got {len(xs)}")
        return self.jitted(*(self._checked(x, a, n) for x, a, n in zip(xs, c.args, c.sizes)))

    def _checked(self, x, arg: str, n: int):
        c = self._compiled
        if not isinstance(x, jax.Array):
            x = np.asarray(x)
            if x.dtype.kind not in "fiu":
                raise TypeError(f"{arg} must be an array of {n} real numbers, got dtype {x.dtype}")
            if x.dtype.kind != "f":
                x = x.astype(float)
        if tuple(x.shape) != (n,):
            raise ValueError(f"{arg} must have shape ({n},), got {tuple(x.shape)}")
        if c.check:
            check_values(np.asarray(x)[None], arg, c._quaternions, one=True)
        return x

    def lower(self, *args, **kwargs):
        return self.jitted.lower(*args, **kwargs)


def allow_float32(allow: bool = True) -> None:
    """Opt in to single precision (JAX without ``jax_enable_x64``, or float32 inputs)."""
    get_backend("jax").allow_float32(allow)


class Compiled:
    """A jitted, vmapped algorithm of one model: ``f(*batched_states)``, or ``f(*batched_states,
    out=results)`` to write into the arrays of earlier results (donated: they are invalid after
    the call; use the returned ones); ``f.single(*state)`` for one state. ``f.args`` names the
    batched arguments, ``f.sizes`` their lengths; ``f.route`` and ``f.route_reason`` say which
    route runs and why."""

    def __init__(self, model, algorithm, check: bool = True, route: str = "auto",
                 **options: Any):
        from symdyn.model import Model
        if not isinstance(model, Model):
            raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
        if model.is_symbolic:
            raise BackendError(f"model {model.name!r} has SymPy parameters; substitute numbers "
                               "with model.subs(...) before compiling it with JAX")
        get_backend("jax")._float()           # float32 mode without opt-in: refuse now
        self.name, self.fn = resolve(algorithm)
        self.model, self.options, self._check = model, dict(options), bool(check)
        self.args, self.sizes, self._quaternions = batched_arguments(model, self.name, self.fn,
                                                                     self.options)
        fn, opts = self.fn, self.options

        def single(*xs):
            return fn(model, *xs, backend="jax", **opts)
        self._single = single
        self.route, self.route_reason, lowered = choose_route(self, route)
        if lowered is None:
            one, self.batch = Jitted(single), Jitted(jax.vmap(single))
        else:
            one, self.batch = lowered
        self.single = Single(one, self)
        self._fresh: Callable | None = None
        self._into: Callable | None = None
        self._state_results: list | None = None     # (shape, dtype or None: the inputs') a state
        # NumPy arrays and concrete JAX arrays (not tracers): __call__'s fast path
        self._plain = (np.ndarray, type(jnp.zeros(0)))

    def __repr__(self) -> str:
        return (f"<symdyn.jax.Compiled {self.name}({', '.join(self.args)}) of model "
                f"{self.model.name!r}, nq={self.model.nq}, nv={self.model.nv}, "
                f"route={self.route!r}>")

    @property
    def check(self) -> bool:
        """Whether concrete batches are checked (NaN, inf, unit quaternions); fixed at compile
        time."""
        return self._check

    def __call__(self, *xs, out=None):
        if len(xs) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} batched arguments "
                            f"({', '.join(self.args)}), got {len(xs)}")
        if all(type(x) in self._plain for x in xs):
            # the common calls (NumPy arrays, as the C batch takes them, or concrete JAX
            # arrays): shapes and dtypes are checked when the call is traced (once per shape,
            # _validated), values in the call (_flagged)
            try:
                return self._call(xs, out)
            except TypeError:        # e.g. a NumPy array of objects, which jit refuses: name it
                for x, a, n in zip(xs, self.args, self.sizes):
                    self._batch_input(x, a, n)
                raise
        xs = tuple(self._batch_input(x, a, n) for x, a, n in zip(xs, self.args, self.sizes))
        self._validated(xs)
        if any(isinstance(x, jax.core.Tracer) for x in xs):
            if out is not None:
                raise TypeError("out= is for calls from Python; inside a trace XLA manages the "
                                "results' memory itself")
            return self.batch(*xs)
        return self._call(xs, out)

    def _call(self, xs, out):
        """The batch of concrete inputs ``xs``: into new results, or into ``out`` (donated)."""
        if out is None:
            return self._verified(self._fresh_fn()(*xs), xs)
        arrays = self._out_arrays(xs, out)
        return self._verified(self._into_fn(len(arrays))(*xs, *arrays), xs)

    def _out_arrays(self, xs, out) -> list:
        """The arrays of ``out``, checked against the results of the batch ``xs``: JAX arrays of
        their shapes and dtypes (``TypeError`` / ``ValueError`` naming the difference)."""
        arrays = jax.tree_util.tree_leaves(out)
        want = self._result_shapes(xs, xs[0].shape[0])
        if len(arrays) != len(want):
            raise ValueError(f"out: expected {len(want)} arrays (the results of {self.name}), "
                             f"got {len(arrays)}")
        for a, w in zip(arrays, want):
            if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer):
                raise TypeError(f"out: expected JAX arrays (earlier results), got "
                                f"{type(a).__name__}")
            if a.shape != w.shape or a.dtype != w.dtype:
                raise ValueError(f"out: expected arrays of shapes and dtypes "
                                 f"{[(o.shape, str(o.dtype)) for o in want]}, got "
                                 f"{[(o.shape, str(o.dtype)) for o in arrays]}")
            if a.is_deleted():
                raise ValueError("out: an array was donated to an earlier call already; pass "
                                 "the results that call returned")
        return arrays

    def _fresh_fn(self) -> Any:    # a jax.jit function (it has .lower)
        """The jitted batch of :meth:`_call` into new results."""
        if self._fresh is None:
            fn, flagged = self.batch.fn, self._flagged
            self._fresh = jax.jit(lambda *a: flagged(a, lambda xs: fn(*xs)), **self.batch.options)
        return self._fresh

    def _into_fn(self, n_out: int) -> Callable:
        """The jitted batch of :meth:`_call` that writes into ``n_out`` donated arrays (JAX's
        ``donate_argnums``: XLA writes the results into their memory)."""
        if self._into is None:
            fn, n, flagged = self.batch.fn, len(self.args), self._flagged
            if getattr(fn, "writes_into", False):       # graph and program: chunks written
                def into(*a):                           # into the set, no zero fill
                    return flagged(a[:n], lambda xs: fn(*xs, out=a[n:]))
            else:
                def into(*a):
                    return flagged(a[:n], lambda xs: fn(*xs))
            self._into = jax.jit(into, keep_unused=True,
                                 donate_argnums=tuple(range(n, n + n_out)), **self.batch.options)
        return self._into

    def _validated(self, xs) -> tuple:
        """``xs`` as float arrays of the backend's dtype (float32 refused unless opted in), of
        shapes ``(batch, n)`` and of one batch length; run where they are traced (shapes and
        dtypes are known then), so that a call pays for it once per shape."""
        backend = get_backend("jax")
        out = []
        for x, a, n in zip(xs, self.args, self.sizes):
            x = backend._check_float(x, a)
            if x.ndim != 2 or x.shape[1] != n:
                raise ValueError(f"{a} must have shape (batch, {n}), got {tuple(x.shape)}")
            out.append(x)
        if len({x.shape[0] for x in out}) > 1:
            raise ValueError(f"{self.name}: batched arguments of different lengths "
                             f"{[x.shape[0] for x in out]}")
        return tuple(out)

    def _flagged(self, xs, fn: Callable):
        """Traced: ``fn`` of the :meth:`_validated` ``xs``, with ``check`` also the flag of
        whether their values pass :func:`~symdyn.jax.arguments.check_values` (no NaN or inf,
        unit quaternions), computed in the same XLA call instead of on the host before it."""
        xs = self._validated(xs)
        if not self.check:
            return fn(xs)
        ok = jnp.isfinite(sum(jnp.sum(x) for x in xs))   # NaN and inf propagate (or overflow)
        lo, hi = (1.0 - QUATERNION_TOL) ** 2, (1.0 + QUATERNION_TOL) ** 2
        for x, arg in zip(xs, self.args):
            if arg in STATE:
                for a, _ in self._quaternions:
                    norm2 = jnp.sum(x[:, a:a + 4] ** 2, axis=1)
                    ok = ok & jnp.all((norm2 >= lo) & (norm2 <= hi))
        return fn(xs), ok

    def _verified(self, out, xs):
        """The results of a call of :meth:`_flagged`; where its flag says that a value failed,
        :func:`~symdyn.jax.arguments.check_values`'s error, which names the argument and the
        state (a sum that overflowed passes)."""
        if not self.check:
            return out
        out, ok = out
        if not np.asarray(ok):
            for x, a in zip(xs, self.args):
                check_values(np.asarray(x), a, self._quaternions)
        return out

    def warm_up(self, *sizes: int) -> Compiled:
        """Compile now, without running anything, what calls with NumPy batches of these
        sizes run (their trace, lowering and XLA's compile; JAX keeps the executables, and the
        first such call runs at once). Returns ``self``. :func:`compile_many` does this for
        several algorithms at once."""
        dtype = jax.dtypes.canonicalize_dtype(np.float64)
        for B in batch_sizes(sizes):
            xs = tuple(jax.ShapeDtypeStruct((B, n), dtype) for n in self.sizes)
            self._fresh_fn().lower(*xs).compile()
        return self

    def _result_shapes(self, xs, B: int) -> list:
        """The results' shapes and dtypes of a batch of ``B`` states shaped like ``xs``: the
        shapes of one state (known to the graph and program routes; the traced route's from one
        trace of a batch of one, kept) behind the batch axis."""
        if self._state_results is None:
            shapes = getattr(self.batch.fn, "state_shapes", None)
            if shapes is not None:
                self._state_results = [(tuple(s), None) for s in shapes]
            else:
                one = [jax.ShapeDtypeStruct((1, n), x.dtype) for x, n in zip(xs, self.sizes)]
                out = jax.eval_shape(self.batch.fn, *one)
                self._state_results = [(o.shape[1:], o.dtype)
                                       for o in jax.tree_util.tree_leaves(out)]
        return [jax.ShapeDtypeStruct((B,) + s, xs[0].dtype if d is None else d)
                for s, d in self._state_results]

    def _batch_input(self, x, arg: str, n: int):
        if not isinstance(x, (jax.Array, jax.core.Tracer)):
            # NumPy (or lists): checked here and handed to jit as they are
            arr = np.asarray(x)
            if arr.dtype.kind not in "fiu":
                raise TypeError(f"{arg} must be a (batch, {n}) array of real numbers, "
                                f"got dtype {arr.dtype}")
            dtype = np.dtype(get_backend("jax")._float())
            if arr.dtype != dtype:
                if arr.dtype.kind == "f" and arr.dtype.itemsize < dtype.itemsize:
                    get_backend("jax")._check_float(jnp.zeros(0, arr.dtype), arg)  # refuses
                arr = arr.astype(dtype)
            x = arr
        else:
            x = get_backend("jax")._check_float(x, arg)     # float32 only when opted in
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{arg} must have shape (batch, {n}), got {tuple(x.shape)}")
        return x


def compile(model, algorithm, *, check: bool = True, route: str = "auto",  # noqa: A001
            **options: Any) -> Compiled:
    """A jitted, batched ``algorithm`` of ``model`` over batches of states (leading batch axis);
    ``.single`` evaluates one state. ``route``: ``"auto"``, ``"trace"``, ``"graph"`` or
    ``"program"`` (see :mod:`symdyn.jax`; ``.route`` and ``.route_reason`` say which ran and
    why). ``check``: concrete batches are checked for NaN, inf and unit quaternions."""
    return Compiled(model, algorithm, check=check, route=route, **options)


def compile_many(model, algorithms, *, batch_sizes: int | Sequence[int] = (),
                 workers: int | None = None, check: bool = True,
                 route: str = "auto") -> dict[str, Compiled]:
    """Several algorithms of ``model`` compiled at once: ``{name: compile(model, algorithm,
    ...)}`` in the order given, each warmed up for ``batch_sizes`` (:meth:`Compiled.warm_up`;
    one integer ``B`` means ``(B,)``).
    ``algorithms``: names or functions as :func:`compile` takes them, or ``(algorithm,
    {keyword: value})`` pairs (the algorithm's options, and :func:`compile`'s keywords for this
    one); a name may appear once. The compiles run on ``workers`` threads (default: one per
    algorithm, at most one per core this process may use): while one algorithm is recorded and
    traced in Python, XLA compiles another. The other keywords are :func:`compile`'s, for all;
    the first error of a compile is raised once those running have ended (those not started
    are cancelled)."""
    from . import arguments
    items = []
    for a in algorithms:
        alg, opts = a if isinstance(a, tuple) else (a, {})
        if not isinstance(opts, dict):
            raise TypeError(f"expected an algorithm or an (algorithm, options dict) pair, got {a!r}")
        items.append((resolve(alg)[0], alg, opts))
    names = [name for name, _, _ in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{twice[0]!r} appears more than once; compile the variants with "
                         "symdyn.jax.compile, one call each")
    sizes = arguments.batch_sizes(batch_sizes)
    if workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        workers = max(1, min(len(items), cores or 1))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")

    def one(alg, opts) -> Compiled:
        return compile(model, alg, **{"check": check, "route": route, **opts}).warm_up(*sizes)
    if workers == 1 or len(items) <= 1:
        return {name: one(alg, opts) for name, alg, opts in items}
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="symdyn-compile") as ex:
        futures = [ex.submit(one, alg, opts) for _, alg, opts in items]
        try:
            return {name: f.result() for (name, _, _), f in zip(items, futures)}
        except BaseException:
            for f in futures:
                f.cancel()
            raise
