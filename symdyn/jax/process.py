"""Opt-in, process-wide settings for a process that evaluates :func:`symdyn.jax.compile`'s
functions in a loop on a CPU. symdyn never calls them itself; each changes the whole process
(its JAX client, its C library's allocator), so call them once, at start-up, from the program
that owns the process.

* :func:`synchronous_dispatch`: JAX's CPU client runs each call on the calling thread (JAX's
  public option ``jax_cpu_enable_async_dispatch``). Small batches gain; pin the process to one
  core as well (``taskset -c 0 python ...``) for the least per-call overhead.
* :func:`retain_freed_memory`: glibc keeps the memory XLA frees and serves the next call's
  buffers from it instead of mapping (and page-faulting) them afresh. Large results gain; small
  batches measured after large ones ran slower, and the process keeps its peak memory.
  ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` in the environment at start-up is the gentler
  alternative (glibc >= 2.35).

Large results can also be written into earlier ones without any process-wide setting: pass them
as ``out=`` to the compiled function (:class:`symdyn.jax.Compiled`).
"""
from __future__ import annotations

import jax

__all__ = ["retain_freed_memory", "synchronous_dispatch"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8   # glibc's mallopt parameters
_GLIBC_DEFAULT_THRESHOLD = 128 * 1024


def retain_freed_memory(retain: bool = True, threshold: int = 1 << 30) -> bool:
    """Let glibc's ``malloc`` serve blocks below ``threshold`` bytes from its heap and keep what
    is freed (``mallopt`` of ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``), for every thread
    from the main heap (``M_ARENA_MAX`` = 1: a thread's own arena maps blocks above 64 MiB
    whatever the threshold, and XLA allocates on its worker threads), so that the buffers XLA
    allocates for every call are reused instead of mapped afresh (measured by
    ``experiments/bench_jax.py --retain-memory``). Process-wide: the process keeps its peak
    memory, and threads allocating at once share one arena. ``retain=False`` sets both
    thresholds back to glibc's initial 128 KiB (its dynamic threshold stays off) and the
    arena limit to its default.
    Returns ``False``, changing nothing, where the C library is not glibc. Where the process can
    be started with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, that is the better remedy (it does
    not slow small batches: ``experiments/bench_jax.py --huge-pages``)."""
    import ctypes
    import ctypes.util
    if threshold < 1 or threshold > 2 ** 31 - 1:
        raise ValueError(f"threshold must be in [1, 2**31 - 1] bytes, got {threshold}")
    if not ctypes.util.find_library("c"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
        libc.gnu_get_libc_version                       # glibc only
    except (OSError, AttributeError):
        return False
    value = int(threshold) if retain else _GLIBC_DEFAULT_THRESHOLD
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all([bool(mallopt(_M_MMAP_THRESHOLD, value)), bool(mallopt(_M_TRIM_THRESHOLD, value)),
                bool(mallopt(_M_ARENA_MAX, 1 if retain else 0))])


def synchronous_dispatch(sync: bool = True) -> None:
    """Make JAX's CPU client run each compiled call on the calling thread (JAX's option
    ``jax_cpu_enable_async_dispatch=False``) instead of handing it to a worker thread and
    waiting for it: the hand-off costs a small batch more than its arithmetic (measured by
    ``experiments/bench_jax.py --dispatch sync|async``). Calls return when their results are
    computed. Process-wide, and read only when JAX creates its CPU client: call it before the
    first JAX array or computation of the process (JAX's public API cannot tell whether that
    has happened; later, the call changes nothing). ``sync=False`` asks for JAX's default
    again."""
    if "jax_cpu_enable_async_dispatch" not in jax.config.values:
        raise RuntimeError(f"JAX {jax.__version__} has no option jax_cpu_enable_async_dispatch; "
                           "its CPU client dispatches as it does by default")
    jax.config.update("jax_cpu_enable_async_dispatch", not sync)
