"""Large batches as a loop over chunks of states (:func:`in_chunks`), on a CPU.

A batch of several chunks runs as a ``fori_loop`` over slices of a few hundred (graph) or 128 to
1024 (program, :func:`program_chunk`) states, each written in place into the results, so that
the rows XLA keeps between its fusions, or a program's workspace, stay in the caches and are
allocated once per chunk rather than for the whole batch. Measured by
``experiments/bench_jax.py`` (1e4 and 1e5 states).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["CHUNK_GRAPH", "CHUNK_PROGRAM", "CHUNKS_MIN", "CHUNKS_MIN_GRAPH", "in_chunks",
           "on_cpu", "program_chunk"]

# graphs: 256 states a chunk keep a chunk's rows and results in the L2 cache (panda christoffel's
# 729 results a state); from 8 chunks (2048 states) on. Measured by experiments/bench_jax.py.
CHUNK_GRAPH = 256
CHUNKS_MIN_GRAPH = 8
# programs: at most 1024 states a chunk (fewer per program_chunk), from 4 chunks on; below, a
# chunk's fixed cost outweighs the cache's gain. Measured by experiments/bench_jax.py.
CHUNK_PROGRAM = 1024
CHUNKS_MIN = 4
# program_chunk: a chunk's result rows within one core's L2 cache (2 MiB on the benchmark
# machine), at least 128 states a chunk. Measured by experiments/bench_jax.py (g1 rows).
PROGRAM_CHUNK_BYTES = 2 << 20
CHUNK_PROGRAM_MIN = 128


def program_chunk(result_rows: int) -> int:
    """States per chunk of a program whose results are gathered from ``result_rows`` rows of its
    workspace: :data:`CHUNK_PROGRAM`, or the largest power of two (at least
    :data:`CHUNK_PROGRAM_MIN`) whose rows take at most :data:`PROGRAM_CHUNK_BYTES`.

    Writing the results transposes those rows into the ``(batch, ...)`` layout, an entry from
    another row at each step: where a chunk's rows outgrow the L2 cache, each entry is a read
    from further out (g1 coriolis_matrix and christoffel: 128 states a chunk)."""
    if result_rows * 8 * CHUNK_PROGRAM <= PROGRAM_CHUNK_BYTES:
        return CHUNK_PROGRAM
    fits = PROGRAM_CHUNK_BYTES // (8 * max(result_rows, 1))
    return min(CHUNK_PROGRAM, max(CHUNK_PROGRAM_MIN, 1 << max(fits.bit_length() - 1, 0)))


def on_cpu() -> bool:
    """Whether code traced now runs on a CPU: JAX's default device (``jax.default_device``) or,
    unset, its default backend."""
    device = getattr(jax.config, "jax_default_device", None)
    if device is None:
        return jax.default_backend() == "cpu"
    return (device if isinstance(device, str) else device.platform) == "cpu"


def in_chunks(fn: Callable, shapes: Sequence[tuple[int, ...]], chunk: int,
              min_chunks: int = CHUNKS_MIN) -> Callable:
    """``fn`` (inputs ``(batch, n_i)``, results ``(batch,) + shapes[o]``, states independent)
    evaluated over a batch of at least ``min_chunks * chunk`` states in a ``fori_loop`` over
    ``ceil(batch / chunk)`` slices of equal size, each result slice written in place into the
    results (the last slice ends at the batch's end and may overlap the one before it: the states
    in both are computed twice, with the same values). Smaller batches, and any batch traced for
    a GPU (which wants all its states at once), run in one pass.

    ``out``: arrays of the results' shapes that the loop starts from instead of zeros: a result
    set donated by the caller, so that the batch is written into it without first filling it
    with zeros (one pass over the results less). Every entry is overwritten, unless ``fn``
    writes into a given set itself (``fn.writes_into``, a program: then ``out`` is passed to
    it, in one pass too, and must hold zeros or earlier results of ``fn`` where its results are
    always zero)."""
    shapes = [tuple(s) for s in shapes]

    def chunked(*xs, out: Sequence[Any] | None = None):
        B = xs[0].shape[0]
        if out is not None and [tuple(o.shape) for o in out] != [(B,) + s for s in shapes]:
            raise ValueError(f"out: expected arrays of shapes {[(B,) + s for s in shapes]}, "
                             f"got {[tuple(o.shape) for o in out]}")
        into = getattr(fn, "writes_into", False)
        if B < min_chunks * chunk or not on_cpu():
            return fn(*xs, out=out) if into else fn(*xs)
        n = -(-B // chunk)
        size = -(-B // n)
        dtype = jnp.result_type(*xs)

        def body(i, outs):
            start = jnp.minimum(i * size, B - size)
            if into:
                return fn(*(lax.dynamic_slice_in_dim(x, start, size) for x in xs),
                          out=outs, at=start)
            part = fn(*(lax.dynamic_slice_in_dim(x, start, size) for x in xs))
            return tuple(lax.dynamic_update_slice_in_dim(o, p, start, 0)
                         for o, p in zip(outs, part))
        if out is None:
            out = tuple(jnp.zeros((B,) + s, dtype) for s in shapes)
        return lax.fori_loop(0, n, body, tuple(out))
    chunked.one_pass_below = min_chunks * chunk     # type: ignore[attr-defined]
    return chunked
