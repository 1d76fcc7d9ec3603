"""Evaluate an algorithm over a Dask array of states: the same call on a laptop or a cluster.

::

    import dask.array as da
    from dask.distributed import Client
    import symdyn.batch

    client = Client("scheduler:8786")                  # or LocalCluster(...); none: Dask's default
    Q = da.from_zarr("states.zarr/q")                  # (n_states, nq), chunked along the states
    QD, QDD = ...
    tau = symdyn.batch.evaluate(model, "rnea", Q, QD, QDD)               # lazy (n_states, nv)
    M, Mdot, C = symdyn.batch.evaluate(model, "coriolis_matrix", Q, QD, engine="jax")
    tau.to_zarr("tau.zarr")                             # or .compute(); dask.compute(M, C) together

Each block of states (a chunk along axis 0; the columns are one chunk) is evaluated by one call of
a batched kernel on a worker:

* ``engine="compiled"`` (default): the C library of :func:`symdyn.codegen.build` (its ``.batch``
  loop). The library is built once on the client (so build errors show there, e.g. a missing C
  compiler: :class:`~symdyn.codegen.BuildError`) and each worker process loads it from the build
  cache, built again only when its cache is not shared with the client (another machine) -
  workers then need a C compiler too. ``build_options`` go to ``build``.
* ``engine="jax"``: :func:`symdyn.jax.compile` (jitted, its ``route="auto"``), built once per worker
  process; the client's precision settings (``jax_enable_x64``, ``symdyn.jax.allow_float32``)
  are applied in the workers.

Inputs are Dask arrays (or NumPy arrays, chunked with ``chunk``) of shape ``(n_states, n)``, one
per state argument of the algorithm in its order (``rnea``: q, qd, qdd); they are rechunked to
the first one's row chunks. The result has the algorithm's structure (an array, or a tuple of
arrays for ``coriolis_matrix`` and the derivatives) of lazy Dask arrays with the states first.
The outputs of a tuple come from one kernel call per block: compute them together
(``dask.compute(M, Mdot, C)``) to run each block once. The engines check the states of each block
(NaN, inf, unit quaternions); a bad one fails the computation with the engine's error, which
counts states from the block's start, behind the block's range of states in the whole array.
"""
from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np

__all__ = ["ENGINES", "evaluate"]

ENGINES = ("compiled", "jax")
_KERNELS: dict[tuple, Any] = {}        # per process: (engine, key) -> kernel
_LOCK = threading.Lock()


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("symdyn.batch needs Dask: pip install 'symdyn[dask]'") from exc
    return dask, da


class _Kernel:
    """What a worker needs to evaluate blocks (picklable; the compiled object is made lazily, once
    per process)."""

    def __init__(self, engine: str, model, algorithm: str, options: dict, settings: dict):
        self.engine, self.model, self.algorithm = engine, model, algorithm
        self.options, self.settings = options, settings
        from symdyn.codegen import model_fingerprint    # the same model in every unpickled copy
        self.key = (engine, model_fingerprint(model), algorithm, repr(sorted(options.items())), repr(sorted(settings.items())))

    def __getstate__(self):
        # the model travels without its per-backend constants (CasADi SX does not pickle; JAX
        # arrays would come back in the worker's precision) as bytes, unpickled after the JAX
        # settings are applied
        state = dict(self.__dict__)
        state["model"] = pickle.dumps(self.model.replace())
        return state

    def __setstate__(self, state):
        if state["engine"] == "jax":
            _apply_jax_settings(state["settings"])
        state = dict(state)
        state["model"] = pickle.loads(state["model"])
        self.__dict__.update(state)

    def function(self):
        fn = _KERNELS.get(self.key)
        if fn is None:
            with _LOCK:
                fn = _KERNELS.get(self.key)
                if fn is None:
                    fn = _KERNELS[self.key] = self._make()
        return fn

    def _make(self):
        if self.engine == "jax":
            import symdyn.jax as sjax
            _apply_jax_settings(self.settings)
            f = sjax.compile(self.model, self.algorithm, **self.options)
            return lambda *xs: tuple(np.asarray(x) for x in _leaves(f(*xs)))
        from symdyn.codegen import build
        lib = build(self.model, [self.algorithm], **self.options)
        f = _compiled_function(lib, self.algorithm)
        # one thread per block: Dask already runs blocks in parallel (workers, threads)
        return lambda *xs: _as_tuple(f.batch(*xs, threads=1))

    def __call__(self, *blocks, start: int = 0):
        """The results of one block of states, the first of which is state ``start`` of the
        whole array (named in the errors of bad states, whose kernels count from the block)."""
        try:
            return self.function()(*(np.asarray(b) for b in blocks))
        except ValueError as e:
            n = len(blocks[0]) if blocks else 0
            raise ValueError(f"block of states {start}..{start + n - 1} (indices below count "
                             f"from {start}): {e}") from None


def _compiled_function(lib, algorithm: str):
    """The one function of ``algorithm`` in a build: ``lib[algorithm]``, or the build's only
    labelled one (a frame function built for ``frame=NAME`` is keyed ``"algorithm:NAME"``).
    Several (``frame=[A, B]``): ValueError, since one evaluate gives one algorithm's results."""
    if algorithm in lib.functions:
        return lib.functions[algorithm]
    found = [f for f in lib.functions.values() if f.algorithm == algorithm]
    if len(found) == 1:
        return found[0]
    raise ValueError(f"symdyn.batch.evaluate evaluates one function, but these options build "
                     f"{algorithm} {len(found)} times ({', '.join(f.key for f in found)}): "
                     "give one frame (frame='NAME') and call evaluate once per frame")


def _apply_jax_settings(settings: dict) -> None:
    """The client's precision in this (worker) process: jax_enable_x64 when the client has it,
    symdyn's float32 opt-in as the client's."""
    import jax

    from symdyn.backends import get_backend
    if settings.get("x64") and not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)
    get_backend("jax").allow_float32(settings.get("float32", False))


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _leaves(x) -> tuple:
    import jax
    return tuple(jax.tree_util.tree_leaves(x))


def _state_sizes(engine: str, model, algorithm: str, options: dict):
    from symdyn.backends import get_backend

    """(argument names, their lengths, output shapes per state, whether the result is a tuple),
    from the engine's own compiled object on the client (which also surfaces build errors)."""
    kernel = _Kernel(engine, model, algorithm, options, _settings(engine))
    if engine == "jax":
        import symdyn.jax as sjax
        import jax

        f = sjax.compile(model, algorithm, **options)
        names, sizes = f.args, f.sizes
        dtype = get_backend("jax")._float()
        out = jax.eval_shape(f.single, *(jax.ShapeDtypeStruct((n,), dtype) for n in sizes))
        shapes = [tuple(x.shape) for x in _leaves(out)]      # traced, not compiled, here
        return kernel, names, sizes, shapes, isinstance(out, (tuple, list))
    from symdyn.codegen import build
    lib = build(model, [algorithm], **options)
    f = _compiled_function(lib, algorithm)
    names, sizes = f.input_names, tuple(s[0] for s in f.input_shapes)
    return kernel, names, sizes, list(f.output_shapes), len(f.output_shapes) > 1


def _settings(engine: str) -> dict:
    if engine != "jax":
        return {}
    import jax

    from symdyn.backends import get_backend
    return {"x64": bool(jax.config.read("jax_enable_x64")),
            "float32": get_backend("jax").float32_allowed()}


def evaluate(model, algorithm: str, *arrays, engine: str = "compiled", chunk: int = 10_000,
             **options):
    """``algorithm`` of ``model`` over states given as Dask arrays ``(n_states, n)`` (one per state
    argument, in order), evaluated block by block with the ``"compiled"`` C library or the
    ``"jax"`` kernel; lazy Dask arrays with the states first (a tuple for several outputs).
    ``options`` go to :func:`symdyn.codegen.build` (compiled) or :func:`symdyn.jax.compile`
    (algorithm options such as ``factorization=``, ``method=``, ``frame=``, ``reference=``);
    ``frame`` names one frame (a link or joint name, or a body index): the frame functions give
    one result per call. See the module docstring."""
    dask, da = _dask()
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a name (e.g. 'rnea'), got {type(algorithm).__name__}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive number of states, got {chunk!r}")
    frame = options.get("frame")
    if isinstance(frame, (list, tuple)) and len(frame) != 1:
        raise ValueError(f"symdyn.batch.evaluate evaluates one function: give one frame "
                         f"(frame='NAME'), not {frame!r}, and call evaluate once per frame")
    kernel, names, sizes, shapes, several = _state_sizes(engine, model, algorithm, options)
    if len(arrays) != len(names):
        raise TypeError(f"{algorithm} takes {len(names)} arrays of states ({', '.join(names)}), "
                        f"got {len(arrays)}")
    ins = []
    for x, name, n in zip(arrays, names, sizes):
        a = x if isinstance(x, da.Array) else np.asarray(x)
        if a.ndim != 2 or a.shape[1] != n:
            raise ValueError(f"{name} must have shape (n_states, {n}), got {a.shape}")
        ins.append(a if isinstance(a, da.Array) else da.from_array(a, chunks=(chunk, -1)))
    n_states = ins[0].shape[0]
    for a, name in zip(ins, names):
        if a.shape[0] != n_states:
            raise ValueError(f"{name} has {a.shape[0]} states but {names[0]} has {n_states}")
    rows = ins[0].chunks[0]
    ins = [a.rechunk((rows, -1)) for a in ins]
    parts: list[list[Any]] = [[] for _ in shapes]
    blocks = [a.to_delayed().ravel() for a in ins]
    call = dask.delayed(kernel, pure=True)
    starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(int)
    for b, nb in enumerate(rows):
        res = call(*(blk[b] for blk in blocks), start=int(starts[b]))
        for k, shape in enumerate(shapes):
            parts[k].append(da.from_delayed(res[k], shape=(nb, *shape), dtype=np.float64))
    outs = tuple(da.concatenate(p, axis=0) if len(p) > 1 else p[0] for p in parts)
    return outs if several else outs[0]
