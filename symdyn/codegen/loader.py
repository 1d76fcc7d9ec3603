"""Load a compiled build and call its C entry points with little overhead.

Single calls whose inputs are C-contiguous float64 arrays of the right shapes, without keywords,
go through a small CPython extension (:mod:`.fastcall`, compiled once per Python and NumPy into
the build cache): it points the C context at the arrays' data and returns fresh result arrays
the C code wrote (rnea of a 10-body chain: 0.56 us a call against 1.07 us through ctypes;
results over 64 KiB keep the pooled path below). Every other call, and every call whose C
status is not 0 (NaN/inf, a bad quaternion, another thread's context), goes through the Python
path, which gives the messages, conversions and thread handling described here.

The Python path calls through ``ctypes`` (measured against cffi in ``reports/fastpath.md``). A
single call passes each input as ``x.tobytes()`` (a C-order float64 copy made in C, ~0.07 us;
non-contiguous arrays included) to ``F_call_inputs``, which also gets a context array holding
preallocated output and work buffers. Results are new arrays that belong to the caller: the C
code writes into one of two result buffer sets that no Python object references any more
(checked with CPython reference counts) and returns those arrays themselves, or, when both sets
are still held by the caller, into internal buffers that are then copied (``out=`` copies into
given float64 arrays instead). Inputs may be any real arrays or sequences of the right shape
(converted to float64).

NaN/inf in the inputs is detected in C before evaluation: the call raises ``ValueError`` naming
the input (``nan="raise"``, default) or returns NaN outputs (``nan="propagate"``). The unit
quaternions of floating and spherical joints are checked in C as well (``|norm - 1| > 1e-6``,
like :func:`symdyn.rnea`): ``ValueError`` naming the input slice and the body (``.batch``: the
state too), whatever ``nan`` says. ``build(..., quaternions="normalize")`` (or ``load``)
normalizes them first instead, explicitly (zero or non-finite ones are still refused).

Threads: a :class:`CompiledFunction` may be called from many Python threads at once. The thread
that created it uses its buffers directly; its call context records that thread, and the C
wrapper refuses (status -3, nothing read or written) a call through it from any other thread,
which then runs on its own copy with its own context, work and result buffers, created on its
first call and kept in a ``threading.local``. The owner's calls pay only a ``pthread_self()``
comparison in C; the Python code before the C call only reads shared state. A call from another
thread pays for the refused attempt (robot:panda crba: 1.3 us instead of 0.56); a worker thread
with a hot loop should call ``f.copy()`` once and use that copy (it owns it: 0.56 us again).

Batches: ``.batch(..., threads=n)`` splits one batch over C threads (the GIL is released there;
threads take chunks of states as they go); ``threads=None``, the default, picks the number by
the batch's estimated work (one thread per ~1 ms, at most the CPUs available, capped by
``$SYMDYN_NUM_THREADS`` or ``$OMP_NUM_THREADS``; :func:`auto_threads`). ``stream=`` chooses how
outputs are written (whole cache lines with non-temporal stores, or in place; by default by
their size); see :meth:`CompiledFunction.batch` and :mod:`symdyn.codegen.csource`.

Result reuse (``load(..., reuse_results=True)``, the default, or ``build(...)`` with the same
option): single calls return the output buffers themselves when no reference to them is left
(see :func:`_specialize`), and ``.batch`` without ``out=`` reuses the arrays of an earlier batch
of the same size that the caller has dropped (a fresh multi-MB array costs page faults
comparable to the computation). ``reuse_results=False`` copies every result into a new array
(the plain path; both give equal results and neither ever overwrites a result still referenced).
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from . import cache as _cache
from .csource import API_VERSION

_ndarray = np.ndarray
_perf_counter = time.perf_counter
_copyto = np.copyto
_F64 = np.dtype(np.float64)
_NAN_MODES = ("raise", "propagate")
QUATERNION_MODES = ("check", "normalize")
_BAD_QUAT = -100          # C status of quaternion j: _BAD_QUAT - j (see csource)
_OTHER_THREAD = -3        # C status: the context belongs to another thread (nothing done)
_BATCH_POOL = 2           # dropped batch result sets kept per function for reuse


class CompiledFunction:
    """One compiled algorithm: ``f(*inputs, out=None, nan="raise")`` and ``f.batch(...)``.

    ``f.input_names``/``f.input_shapes``, ``f.output_names``/``f.output_shapes`` describe the
    signature (e.g. rnea: q (nq,), qd (nv,), qdd (nv,) -> tau (nv,)); ``f.stats`` holds SX sizes and
    build timings. Results are new arrays owned by the caller (never overwritten by later calls
    while referenced; see the module docstring) unless ``out=`` is given.
    """

    def __init__(self, meta: dict, single_lib, batch_lib, *, reuse_results: bool = True,
                 quaternions=(), thread_id=None, quaternion_mode: str = "check"):
        self.meta = meta
        self.algorithm = meta["algorithm"]
        self.key = meta.get("key", self.algorithm)      # "alg" or "alg:label" (module lookup)
        self.parameters = meta.get("parameters")        # None or "inertial" (input pi last)
        self.name = meta.get("name", meta["fname"])     # public name (may exceed 48 characters)
        self.symbol = meta["fname"]                     # C symbol (at most 48 characters)
        self.reuse_results = bool(reuse_results)
        self.quaternions = tuple((int(d["offset"]), str(d["body"])) for d in quaternions)
        if quaternion_mode not in QUATERNION_MODES:
            raise ValueError(f"quaternions must be one of {QUATERNION_MODES}, got "
                             f"{quaternion_mode!r}")
        self.quaternion_mode = quaternion_mode
        self._qin = list(meta["input_names"]).index("q") if "q" in meta["input_names"] else -1
        self._tls = threading.local()       # per-thread copies (shared with copies of self)
        self._thread_id = thread_id           # C: the owner value of the calling thread
        self._bpool: list = []              # batch result sets: (arrays, baseline refcounts)
        self._block = threading.Lock()
        self.input_names = tuple(meta["input_names"])
        self.output_names = tuple(meta["output_names"])
        # the sizes the C code reads and writes come from the library; the manifest only names
        # them and gives the outputs' shapes, which must hold exactly that many entries
        sizes_in, sizes_out = library_sizes(single_lib, self.symbol)
        self._check_sizes(meta, sizes_in, sizes_out)
        self.input_shapes = tuple((n,) for n in sizes_in)
        self.output_shapes = tuple(tuple(int(d) for d in s) for s in meta["output_shapes"])
        self.stats = {k: meta[k] for k in ("n_nodes", "n_instructions", "n_fast_trig", "t_trace", "t_function",
                                           "t_generate", "t_compile", "cpu_compile", "cflags",
                                           "source_bytes")
                      if k in meta}
        self._single_lib, self._batch_lib = single_lib, batch_lib
        work = getattr(single_lib, f"{self.symbol}_work")
        ll = ctypes.c_longlong
        work.argtypes = [ctypes.POINTER(ll)] * 4
        work.restype = ctypes.c_int
        sizes = [ll() for _ in range(4)]
        work(*[ctypes.byref(s) for s in sizes])
        self._sz_arg, self._sz_res, self._sz_iw, self._sz_w = (int(s.value) for s in sizes)
        if self._sz_arg < len(self.input_names) or self._sz_res < len(self.output_names):
            raise _cache.InvalidBuild(f"{self.name}: the library's work sizes are smaller than "
                                      "its number of inputs and outputs")
        self._call = getattr(single_lib, f"{self.symbol}_call_inputs")
        # no argtypes: every argument is a bytes object (char*) or the c_void_p context, which
        # ctypes passes as is; skipping the per-argument from_param conversion saves ~70 ns a call
        self._call.argtypes = None
        self._call.restype = ctypes.c_int
        self._batch = getattr(batch_lib, f"{self.symbol}_batch_write")
        self._batch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                                ctypes.c_int, ctypes.POINTER(ctypes.c_longlong)]
        self._batch.restype = ctypes.c_int
        # estimated ns a state (chooses threads=None): ~0.15 ns an SX instruction measured on
        # the generated functions (g1 coriolis_matrix: 25k instructions, 3.0-3.6 us), plus the
        # outputs' bytes at ~10 GB/s; output entries alone where the size is not recorded.
        # One-thread batches of 32 states or more then average in their measured time
        n_out = sum(int(np.prod(s)) for s in self.output_shapes)
        n_instr = meta.get("n_instructions")
        self._state_ns = (0.15 * float(n_instr) if n_instr else 1.0 * n_out) + 0.8 * n_out
        self._tune: dict[int, float] = {}   # threads=None: wall ns a state per thread count
        self._tune_calls = 0
        self._allocate()

    def _check_sizes(self, meta: dict, sizes_in: list[int], sizes_out: list[int]) -> None:
        """:class:`~symdyn.codegen.cache.InvalidBuild` unless the manifest's signature matches
        the compiled function's (counts, input sizes, entries of each output shape)."""
        def bad(what: str) -> _cache.InvalidBuild:
            return _cache.InvalidBuild(f"{self.name}: {what}; the build is corrupted or was "
                                       "modified after it was built")
        if (len(sizes_in), len(sizes_out)) != (len(self.input_names), len(self.output_names)):
            raise bad(f"the library has {len(sizes_in)} inputs and {len(sizes_out)} outputs, "
                      f"the manifest {len(self.input_names)} and {len(self.output_names)}")
        for k, (name, n) in enumerate(zip(self.input_names, sizes_in)):
            if int(meta["input_sizes"][k]) != n:
                raise bad(f"input {name} has {n} entries in the library, "
                          f"{meta['input_sizes'][k]} in the manifest")
        for k, (name, n) in enumerate(zip(self.output_names, sizes_out)):
            shape = tuple(int(d) for d in meta["output_shapes"][k])
            if int(np.prod(shape)) != n:
                raise bad(f"output {name} has {n} entries in the library, the manifest's shape "
                          f"{shape} {int(np.prod(shape))}")

    def _context(self, outs):
        """(ctypes context array, its address) with the output buffers ``outs``."""
        ctx = (ctypes.c_void_p * (self._sz_arg + self._sz_res + 3))()  # inputs set per call
        for k, b in enumerate(outs):
            ctx[self._sz_arg + k] = b.ctypes.data
        ctx[self._sz_arg + self._sz_res] = self._iw.ctypes.data
        ctx[self._sz_arg + self._sz_res + 1] = self._w.ctypes.data
        ctx[self._sz_arg + self._sz_res + 2] = self._owner   # only this thread may use ctx
        return ctx, ctypes.c_void_p(ctypes.addressof(ctx))

    def _allocate(self) -> None:
        self._owner = self._thread_id() if self._thread_id is not None else None
        self._iw = np.zeros(max(1, self._sz_iw), dtype=np.int64)
        self._w = np.zeros(max(1, self._sz_w))
        self._out = [np.zeros(s) for s in self.output_shapes]
        self._ctx, self._pctx = self._context(self._out)
        # result pool: output buffers handed to the caller as the results themselves, reused
        # once nothing references them any more (see _specialize)
        self._pool = []
        if _POOL and self.reuse_results and hasattr(sys, "getrefcount"):
            for _ in range(_POOL):
                outs = tuple(np.zeros(s) for s in self.output_shapes)
                self._pool.append((outs, *self._context(outs)))
        self._n_in = len(self.input_names)
        self._single = len(self._out) == 1
        self.__class__ = _specialize(self)

    def copy(self) -> "CompiledFunction":
        """The same function with its own buffers, owned by the calling thread (calls from other
        threads make per-thread copies by themselves; see the module docstring)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._bpool, new._block = [], threading.Lock()
        new._allocate()
        return new

    def _threaded(self, args, out, nan):
        """A call from a thread other than the owner: run it on that thread's own copy."""
        fn = getattr(self._tls, "fn", None)
        if fn is None:
            fn = self._tls.fn = self.copy()
        return fn(*args, out=out, nan=nan)

    @staticmethod
    def _check_nan(nan) -> None:
        if nan not in _NAN_MODES:
            raise ValueError(f"nan must be one of {_NAN_MODES}, got {nan!r}")

    def _quaternion_error(self, j: int, q, where: str = "") -> ValueError:
        off, body = self.quaternions[j]
        try:
            e = np.asarray(q, dtype=float).reshape(-1)[off:off + 4]
            norm = f"{float(np.sqrt(e @ e)):.6g}"
        except (TypeError, ValueError):  # pragma: no cover - q was validated already
            norm = "not 1"
        return ValueError(f"{self.name}{where}: input q[{off}:{off + 4}] (joint of body "
                          f"{body!r}) must be a unit quaternion (x, y, z, w); its norm is {norm}")

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}{list(s)}" for n, s in zip(self.input_names, self.input_shapes))
        outs = ", ".join(f"{n}{list(s)}" for n, s in zip(self.output_names, self.output_shapes))
        return f"<compiled {self.name}({ins}) -> ({outs})>"

    # -- single call -------------------------------------------------------------------------------
    def __call__(self, *args, out=None, nan: str = "raise"):
        """Evaluate at one state; returns an array (one output) or a tuple of arrays.

        (Each instance gets a specialized equivalent of this method, see :func:`_specialize`.)
        """
        if len(args) != self._n_in:
            raise TypeError(f"{self.name}() takes {self._n_in} inputs "
                            f"({', '.join(self.input_names)}), got {len(args)}")
        self._check_nan(nan)
        if self.quaternion_mode == "normalize" and self.quaternions:
            normalized = list(args)
            normalized[self._qin] = self._normalize_q(args[self._qin])
            args = tuple(normalized)
        status = self._call(*self._input_bytes(args), self._pctx)
        if status == _OTHER_THREAD:
            return self._threaded(args, out, nan)
        if status:
            self._status(status, nan, self._out, args)
        if out is None:
            if self._single:
                return self._out[0].copy()
            return tuple(b.copy() for b in self._out)
        return self._write_out(out)

    def _normalize_q(self, q) -> np.ndarray:
        """A float64 copy of q whose quaternions have unit norm (``quaternions="normalize"``);
        a zero or non-finite quaternion is left as it is, for the C checks to report."""
        q = self._convert(self._qin, q).copy()
        for off, _ in self.quaternions:
            e = q[off:off + 4]
            n = float(np.sqrt(e @ e))
            if n > 0.0 and np.isfinite(n):
                e /= n
        return q

    def _input_bytes(self, args) -> list:
        """Validated C-order float64 bytes of each input (clear errors otherwise)."""
        out = []
        for k, x in enumerate(args):
            if isinstance(x, _ndarray) and x.dtype is _F64 and x.shape == self.input_shapes[k]:
                out.append(x.tobytes())
            else:
                out.append(self._convert(k, x).tobytes())
        return out

    def _convert(self, k: int, x) -> np.ndarray:
        name, shape = self.input_names[k], self.input_shapes[k]
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{self.name}: input {name} must be an array of shape {shape}: "
                            f"{exc}") from None
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{self.name}: input {name} must hold real numbers (float64); got "
                            f"dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"{self.name}: input {name} must have shape {shape}, got {a.shape}")
        return a.astype(np.float64)

    def _status(self, status: int, nan: str, bufs, args=()) -> None:
        if status <= _BAD_QUAT:
            raise self._quaternion_error(_BAD_QUAT - status, args[self._qin])
        if status > 0:
            if nan == "propagate":
                for b in bufs:
                    b.fill(np.nan)
                return
            if nan not in _NAN_MODES:
                raise ValueError(f"nan must be one of {_NAN_MODES}, got {nan!r}")
            raise ValueError(f"{self.name}: input {self.input_names[status - 1]} contains NaN "
                             f"or inf (pass nan='propagate' to get NaN outputs instead)")
        raise RuntimeError(f"{self.name}: the compiled function failed (status {status})")

    def _write_out(self, out):
        outs = (out,) if self._single else out
        if not isinstance(outs, (tuple, list)) or len(outs) != len(self._out):
            raise TypeError(f"{self.name}: out must be "
                            + ("an array" if self._single else
                               f"a tuple of {len(self._out)} arrays ({', '.join(self.output_names)})"))
        for k, o in enumerate(outs):
            self._check_out(k, o, self.output_shapes[k], contiguous=False)
            _copyto(o, self._out[k])
        return out

    def _check_out(self, k, o, shape, contiguous: bool) -> None:
        name = self.output_names[k]
        if not isinstance(o, np.ndarray):
            raise TypeError(f"{self.name}: out for {name} must be a NumPy array, got "
                            f"{type(o).__name__}")
        if o.dtype != np.float64:
            raise TypeError(f"{self.name}: out for {name} must have dtype float64, got {o.dtype}")
        if o.shape != shape:
            raise ValueError(f"{self.name}: out for {name} must have shape {shape}, got {o.shape}")
        if not o.flags.writeable:
            raise ValueError(f"{self.name}: out for {name} is read-only")
        if contiguous and not o.flags.c_contiguous:
            raise ValueError(f"{self.name}: out for {name} must be C-contiguous (batch results are "
                             "written in place by C)")

    # -- batch -------------------------------------------------------------------------------------
    def batch(self, *arrays, out=None, threads: int | None = None, nan: str = "raise",
              stream: bool | None = None):
        """Evaluate ``B`` states in one C loop: input k has shape ``(B, n_k)``; outputs have
        shape ``(B, *output_shape)``. Inputs are converted to C-contiguous float64 if needed;
        ``out`` arrays must already be C-contiguous float64 of the right shape. With
        ``nan="propagate"`` states with NaN/inf inputs get NaN outputs; by default a ValueError
        names the first one. A state whose quaternions are not of unit norm raises ValueError
        naming the state, the slice of q and the body (whatever ``nan`` says).

        ``threads``: POSIX threads sharing the states (the GIL is released; threads take chunks
        of states as they go, so a thread slowed by other jobs does less). ``None`` (default)
        picks by the batch's estimated work (:func:`auto_threads`): one thread per ~1 ms of
        it, at most the CPUs this process may use, capped by ``$SYMDYN_NUM_THREADS`` or else
        ``$OMP_NUM_THREADS`` when set; where that gives several, this function's earlier
        automatic batches decide between them and one thread by their measured time (a busy
        machine can make threads slower). Results do not depend on it.

        ``stream``: how outputs are written. ``True``: each state is evaluated into a scratch
        block and written out in whole cache lines with non-temporal stores (they bypass the
        caches: best for outputs larger than the caches, or not read soon); ``False``: written
        in place in the order the generated code computes them (best when ``out`` is reused
        and fits in cache, or is read right after); ``None`` (default): streamed when the
        outputs exceed 1 MiB per thread. Results do not depend on it (see
        :mod:`symdyn.codegen.csource` for the measurements).

        Without ``out`` (and with result reuse, the default) the arrays of an earlier batch of
        the same size are reused once the caller holds none of them (fresh multi-MB results
        cost page faults comparable to the computation: serial:20 coriolis_matrix, 20k states,
        5.9 -> 4.3 us/state, as fast as ``out=``); up to two such sets stay allocated per
        function until :meth:`release`.
        """
        if nan not in _NAN_MODES:
            raise ValueError(f"nan must be one of {_NAN_MODES}, got {nan!r}")
        if len(arrays) != self._n_in:
            raise TypeError(f"{self.name}.batch() takes {self._n_in} arrays "
                            f"({', '.join(self.input_names)}), got {len(arrays)}")
        if threads is not None and (not isinstance(threads, (int, np.integer))
                                    or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
        if not (stream is None or isinstance(stream, (bool, np.bool_))):
            raise ValueError(f"stream must be True, False or None, got {stream!r}")
        ins, nstates = [], None
        for k, x in enumerate(arrays):
            name, (n,) = self.input_names[k], self.input_shapes[k]
            a = np.asarray(x)
            if a.dtype.kind not in "biuf":
                raise TypeError(f"{self.name}.batch: {name} must hold real numbers; got dtype "
                                f"{a.dtype}")
            if a.ndim != 2 or a.shape[1] != n:
                raise ValueError(f"{self.name}.batch: {name} must have shape (B, {n}), got "
                                 f"{a.shape}")
            if nstates is None:
                nstates = a.shape[0]
            elif a.shape[0] != nstates:
                raise ValueError(f"{self.name}.batch: {name} has {a.shape[0]} states but "
                                 f"{self.input_names[0]} has {nstates}")
            ins.append(np.ascontiguousarray(a, dtype=np.float64))
        if self.quaternion_mode == "normalize" and self.quaternions and nstates:
            Q = ins[self._qin] = ins[self._qin].copy()
            for off, _ in self.quaternions:
                e = Q[:, off:off + 4]
                n = np.sqrt(np.einsum("ij,ij->i", e, e))
                ok = (n > 0.0) & np.isfinite(n)
                e[ok] /= n[ok, None]
        entry = None
        outs: list[Any] | None
        if out is None:
            entry = self._batch_outputs(cast(int, nstates))  # set from the first input above
            outs = list(entry[0]) if entry is not None else [np.empty((nstates, *s))
                                                            for s in self.output_shapes]
        else:
            outs = [out] if self._single else list(out) if isinstance(out, (tuple, list)) else None
            if outs is None or len(outs) != len(self._out):
                raise TypeError(f"{self.name}.batch: out must be "
                                + ("an array" if self._single else
                                   f"a tuple of {len(self._out)} arrays"))
            for k, o in enumerate(outs):
                self._check_out(k, o, (nstates, *self.output_shapes[k]), contiguous=True)
        pin = (ctypes.c_void_p * self._n_in)(*[a.ctypes.data for a in ins])
        pout = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
        bad = (ctypes.c_longlong * 2)(-1, -1)
        auto = threads is None
        if auto:
            threads = auto_threads(cast(int, nstates) * self._state_ns)
            if threads > 1:
                threads = self._tuned(threads)
        assert threads is not None and nstates is not None   # set above (mypy)
        try:
            t0 = _perf_counter()
            status = self._batch(pin, pout, nstates, int(threads),
                                 -1 if stream is None else int(bool(stream)), bad)
            if nstates >= 32 and status == 0:
                # measured wall ns a state: one thread's refine the work estimate; automatic
                # choices record theirs per thread count (benign races between Python threads)
                ns = (_perf_counter() - t0) * 1e9 / nstates
                if threads == 1:
                    self._state_ns = 0.5 * (self._state_ns + ns)
                if auto:
                    old = self._tune.get(int(threads))
                    self._tune[int(threads)] = ns if old is None else 0.5 * (old + ns)
        finally:
            if entry is not None:
                with self._block:
                    self._bpool.append(entry)
        if status == 2:
            q = ins[self._qin][bad[1]]
            # the quaternion C rejected: the first one off by more than the tolerance (the one
            # furthest off should rounding differ from C's)
            devs = [abs(float(np.sqrt(q[o:o + 4] @ q[o:o + 4])) - 1.0) for o, _ in self.quaternions]
            j = next((j for j, d in enumerate(devs) if d > 1e-6), int(np.argmax(devs)))
            raise self._quaternion_error(j, q, where=f".batch: state {bad[1]}")
        if status == 1 and nan == "raise":
            raise ValueError(f"{self.name}.batch: state {bad[0]} has NaN or inf inputs "
                             "(pass nan='propagate' to get NaN outputs for such states)")
        if status < 0:
            what = "out of memory" if status == -2 else f"status {status}"
            raise RuntimeError(f"{self.name}.batch: the compiled function failed ({what})")
        if out is not None:
            return out
        return outs[0] if self._single else tuple(outs)

    def _tuned(self, threads: int) -> int:
        """``threads`` (> 1, from the work estimate) or 1, whichever ran faster per state in
        this function's earlier automatic batches: on a machine whose other cores are busy, a
        helper thread that the scheduler preempts holds up the batch (g1 coriolis_matrix, 1000
        states, load 5.6 on 2 cores: 9.5 us a state on 2 threads, 3.5 on one). Each is tried
        once, then the slower one again every 16th call, in case the load changed."""
        seen = self._tune
        self._tune_calls += 1
        if threads not in seen:
            return threads
        if 1 not in seen:
            return 1
        best = 1 if seen[1] <= seen[threads] else threads
        if self._tune_calls % 16 == 0:
            return threads if best == 1 else 1
        return best

    def _batch_outputs(self, nstates: int):
        """A set of batch output arrays (arrays, baseline refcounts) taken out of the pool: one the
        caller has dropped (CPython reference counts back at the pool's own), else a new one;
        ``None`` without result reuse. The caller puts it back after the C call."""
        if not self.reuse_results or not hasattr(sys, "getrefcount") or nstates == 0:
            return None
        with self._block:
            for k, entry in enumerate(self._bpool):
                if entry[0][0].shape[0] == nstates and _refcounts(entry[0]) == entry[1]:
                    return self._bpool.pop(k)
            # no free set of this size: drop a free set of another size, keep at most _BATCH_POOL
            for k, entry in enumerate(self._bpool):
                if _refcounts(entry[0]) == entry[1]:
                    del self._bpool[k]
                    break
            if len(self._bpool) >= _BATCH_POOL:
                return None
        arrays = tuple(np.empty((nstates, *s)) for s in self.output_shapes)
        return arrays, _refcounts(arrays)

    def release(self) -> None:
        """Drop the batch result sets kept for reuse (their memory is freed once the caller holds
        none of their arrays)."""
        with self._block:
            self._bpool.clear()


def _casadi_nnz(sparsity) -> int:
    """Entries of a CasADi compressed sparsity pattern (``nrow, ncol, 1`` when dense, else
    ``nrow, ncol, colind[0..ncol], row[...]``)."""
    nrow, ncol = int(sparsity[0]), int(sparsity[1])
    if nrow < 0 or ncol < 0:
        return -1
    if ncol == 0 or int(sparsity[2]) == 1:       # dense (colind[0] of a sparse one is 0)
        return nrow * ncol
    return int(sparsity[2 + ncol])


def library_sizes(lib, symbol: str) -> tuple[list[int], list[int]]:
    """``(input sizes, output sizes)`` in doubles of the compiled function ``symbol``, as the
    library itself says: ``F_n_in``/``F_n_out`` and the wrapper's ``F_symdyn_size_in/out``,
    checked against CasADi's ``F_sparsity_in/out`` where the function exports them (the
    unrolled form). :class:`~symdyn.codegen.cache.InvalidBuild` when they disagree."""
    ll = ctypes.c_longlong
    counts = []
    for which in ("in", "out"):
        fn = getattr(lib, f"{symbol}_n_{which}")
        fn.restype, fn.argtypes = ll, []
        counts.append(int(fn()))
    sizes: list[list[int]] = []
    for which, count in zip(("in", "out"), counts):
        if not 0 <= count <= 1024:
            raise _cache.InvalidBuild(f"{symbol}: the library reports {count} {which}puts")
        mine = getattr(lib, f"{symbol}_symdyn_size_{which}")
        mine.restype, mine.argtypes = ll, [ctypes.c_int]
        got = [int(mine(k)) for k in range(count)]
        sparsity = getattr(lib, f"{symbol}_sparsity_{which}", None)
        if sparsity is not None:
            sparsity.restype, sparsity.argtypes = ctypes.POINTER(ll), [ll]
            for k in range(count):
                sp = sparsity(k)
                nnz = _casadi_nnz(sp) if sp else -1
                if nnz != got[k]:
                    raise _cache.InvalidBuild(
                        f"{symbol}: {which}put {k} has {nnz} entries in CasADi's function and "
                        f"{got[k]} in the wrapper; the library is corrupted")
        if any(n < 0 for n in got):
            raise _cache.InvalidBuild(f"{symbol}: the library reports {which}put sizes {got}")
        sizes.append(got)
    return sizes[0], sizes[1]


# results up to this size (bytes, all outputs) are fresh arrays from the fastcall extension;
# above it single calls keep the result pool (a fresh array of more than glibc's 128 KiB
# mmap threshold costs page faults on every call)
_FAST_MAX_BYTES = 64 * 1024
_POOL = 2   # result buffers per function that single calls return without copying

# threads=None: one thread per this much estimated work (ns). Starting and joining a POSIX thread
# costs ~20-60 us on an idle machine, but on a loaded one a thread can wait a scheduler time
# slice (ms) before it runs or while it holds a chunk, which made 2 threads slower than 1 for
# batches of ~1 ms (g1 crba, 1000 states, load 2.8 on 2 cores: 1.3 vs 0.84 us a state)
AUTO_THREAD_NS = 1e6


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def auto_threads(work_ns: float) -> int:
    """Threads for a batch of ``work_ns`` estimated nanoseconds (``threads=None``): one per
    :data:`AUTO_THREAD_NS` of work, at most the CPUs available to the process, capped by
    ``$SYMDYN_NUM_THREADS`` or else ``$OMP_NUM_THREADS`` when set (the experiment scripts pin
    the latter to 1 so that their timings stay single-threaded unless they ask for threads)."""
    cap = available_cpus()
    for var in ("SYMDYN_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(var, "").strip()
        if text:
            try:
                cap = min(cap, max(1, int(text)))
            except ValueError:
                continue
            break
    return int(max(1, min(cap, work_ns // AUTO_THREAD_NS)))

def _refcounts(arrays) -> tuple:
    return tuple(sys.getrefcount(a) for a in arrays)


_CALL_TEMPLATE = """
def {fname}(self, {params}, *, out=None, nan="raise"):
    if nan is not _RAISE and nan != "propagate":
        self._check_nan(nan)
{pre}    if out is not None:
        ctx, res = _ctx, None
{pool_select}    else:
        ctx, res = _ctx, None
    try:
        if {checks}:
            status = _call({fast_args}, ctx)
        else:
            raise AttributeError
    except AttributeError:
        status = _call(*self._input_bytes(({params},)), ctx)
    if status:
        if status == -3:   # another thread's context (nothing done): use this thread's own
            return self._threaded(({params},), out, nan)
        self._status(status, nan, _out if res is None else res, ({params},))
    if res is not None:
        return {pool_result}
    if out is None:
        return {copy_result}
    return self._write_out(out)

def _baseline():
    return ({baseline})
"""


def _specialize(fn: CompiledFunction) -> type:
    """A subclass of CompiledFunction whose ``__call__`` is unrolled for ``fn``'s inputs, with its
    output buffers and C entry point bound as constants (~0.5 us less per call than the generic
    method). Input names come from the algorithm registry (q, qd, qdd, tau), never from users.
    A call from a thread other than ``fn``'s owner is refused by C (status -3, nothing written)
    and goes to that thread's own copy (module docstring); ``nan`` is validated on every call
    (an identity test when it is the default).

    Results without ``out=``: copying the outputs cost 0.2-0.25 us per array (0.75 us for the
    three 20 x 20 matrices of coriolis_matrix), so the C code writes straight into one of
    ``_POOL`` result buffer sets that are then returned themselves; a set is used again only
    when no reference to any of its arrays is left (CPython reference counts, ``sys.getrefcount``
    equal to the pool's own), so a result the caller keeps is never overwritten. When every set
    is still referenced, the outputs are copied from the internal buffers as before."""
    names = fn.input_names
    n_out = len(fn._out)
    ns = {"_call": fn._call, "_ctx": fn._pctx, "_F64": _F64, "_out": fn._out,
          "_rc": sys.getrefcount, "_RAISE": "raise"}
    for k, s in enumerate(fn.input_shapes):
        ns[f"_s{k}"] = s
    ns.update({f"_o{k}": o for k, o in enumerate(fn._out)})
    select, base = [], []
    for p, entry in enumerate(fn._pool):
        ns[f"_c{p}"], ns[f"_r{p}"] = entry[2], entry[0]
        # no local name may stay bound to a pool array: it would count in the baselines below
        ns.update({f"_a{p}{k}": entry[0][k] for k in range(n_out)})
        base += [f"_rc(_a{p}{k})" for k in range(n_out)]
        free = " and ".join(f"_rc(_a{p}{k}) == _b{p}{k}" for k in range(n_out))
        select.append(f"    elif {free}:\n        ctx, res = _c{p}, _r{p}\n")
    checks = [f"{n}.dtype is _F64 and {n}.shape == _s{k}" for k, n in enumerate(names)]
    src = _CALL_TEMPLATE.format(
        fname=fn.algorithm, params=", ".join(names), checks=" and ".join(checks),
        fast_args=", ".join(f"{n}.tobytes()" for n in names), pool_select="".join(select),
        pool_result=("res[0]" if fn._single else
                     "(" + ", ".join(f"res[{k}]" for k in range(n_out)) + ",)"),
        copy_result=("_o0.copy()" if fn._single else
                     "(" + ", ".join(f"_o{k}.copy()" for k in range(n_out)) + ",)"),
        baseline=", ".join(base) + ("," if base else ""),
        pre=("    q = self._normalize_q(q)\n" if fn.quaternion_mode == "normalize"
             and fn.quaternions and "q" in names else ""))
    exec(compile(src, f"<symdyn compiled {fn.name}>", "exec"), ns)
    slots = [(p, k) for p in range(len(fn._pool)) for k in range(n_out)]
    ns.update({f"_b{p}{k}": rc for (p, k), rc in zip(slots, ns["_baseline"]())})
    call = ns[fn.algorithm]
    call.__doc__ = CompiledFunction.__call__.__doc__
    return type("CompiledFunction", (CompiledFunction,), {"__call__": _fast_caller(fn, call),
                                                          "__module__": __name__})


def _fast_caller(fn: CompiledFunction, call):
    """``call`` (the Python method), or a :mod:`.fastcall` ``Caller`` of ``fn``'s C entry point
    that falls back to it for every call it does not take itself. A class attribute that is not
    a descriptor is called without ``self``: the Caller is bound to ``fn`` itself."""
    if fn.quaternion_mode == "normalize" and fn.quaternions:
        return call                          # inputs are rewritten before the C call
    if 8 * sum(int(np.prod(s)) for s in fn.output_shapes) > _FAST_MAX_BYTES:
        return call                          # big results: the pool spares their page faults
    from . import fastcall

    mod = fastcall.module()
    if mod is None:
        return call
    entry = getattr(fn._single_lib, f"{fn.symbol}_call")
    address = ctypes.cast(entry, ctypes.c_void_p).value
    return mod.Caller(address, fn._sz_arg, fn._sz_res, fn._iw.ctypes.data, fn._w.ctypes.data,
                      fn._owner or 0, tuple(s[0] for s in fn.input_shapes),
                      tuple(fn.output_shapes), functools.partial(call, fn))


class FunctionGroup(Mapping):
    """The labelled functions of one algorithm in a build, by label:
    ``lib.frame_jacobian["panda_hand"]`` is ``lib["frame_jacobian:panda_hand"]``."""

    def __init__(self, algorithm: str, functions: dict):
        self.algorithm = algorithm
        self._functions = dict(functions)

    def __getitem__(self, label: str) -> "CompiledFunction":
        try:
            return self._functions[label]
        except KeyError:
            raise KeyError(f"{label!r}: this build has {self.algorithm} for "
                           f"{', '.join(map(repr, self._functions))}") from None

    def __iter__(self):
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def __call__(self, *args, **kwargs):
        if len(self._functions) == 1:
            return next(iter(self._functions.values()))(*args, **kwargs)
        raise TypeError(f"this build has {self.algorithm} for several labels "
                        f"({', '.join(map(repr, self._functions))}); pick one: "
                        f"lib.{self.algorithm}[label](...)")

    def __repr__(self) -> str:
        return f"<{self.algorithm} for {', '.join(map(repr, self._functions))}>"


class CompiledModule:
    """A loaded build: one :class:`CompiledFunction` per function key.

    ``lib[key]`` for every key (``"rnea"``, ``"frame_jacobian:panda_hand"``); ``lib.rnea`` for an
    unlabelled algorithm, and ``lib.frame_jacobian`` a :class:`FunctionGroup` by label for the
    labelled ones (``lib.frame_jacobian["panda_hand"]``; callable itself when it holds one).
    Attributes: ``path`` (build directory), ``library`` (shared library), ``header``
    (``<prefix>_api.h``), ``prefix``, ``algorithms`` (the keys), ``functions`` (key -> function),
    ``stats`` (SX sizes, trace/generate/compile times, flags, compiler), ``cache_hit``.
    """

    def __init__(self, directory: Path, manifest: dict, cache_hit: bool,
                 reuse_results: bool = True, quaternions: str = "check"):
        self.path = Path(directory)
        self.manifest = manifest
        self.prefix = manifest["prefix"]
        self.library = self.path / manifest["library"]
        self.header = self.path / f"{self.prefix}_api.h"
        self.cache_hit = cache_hit
        path = str(self.library)
        single, batch = ctypes.PyDLL(path), ctypes.CDLL(path)  # GIL held / released
        version = getattr(single, f"{self.prefix}_symdyn_api_version")
        version.restype = ctypes.c_int
        if version() != API_VERSION:
            raise RuntimeError(f"{path}: wrapper API version {version()} != {API_VERSION}")
        thread_id = getattr(single, f"{self.prefix}_symdyn_thread_id")
        thread_id.restype = ctypes.c_void_p
        thread_id.argtypes = []
        self.functions = {}
        groups: dict[str, dict] = {}
        for fd in manifest["functions"]:
            f = CompiledFunction(fd, single, batch, reuse_results=reuse_results,
                                 quaternions=manifest.get("quaternions", ()),
                                 thread_id=thread_id, quaternion_mode=quaternions)
            self.functions[f.key] = f
            if f.key == f.algorithm:
                setattr(self, f.algorithm, f)
            else:
                groups.setdefault(f.algorithm, {})[f.key.partition(":")[2]] = f
        for alg, members in groups.items():
            if alg not in self.functions:
                setattr(self, alg, FunctionGroup(alg, members))
        self.algorithms = tuple(self.functions)
        keys = ("t_total", "t_compile_wall", "t_compile_cpu", "cc", "cc_version", "opt", "cflags",
                "jobs", "versions", "cse")
        self.stats = {k: manifest[k] for k in keys if k in manifest}
        self.stats["functions"] = {a: f.stats for a, f in self.functions.items()}

    def __getitem__(self, key: str) -> CompiledFunction:
        try:
            return self.functions[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in this build (it has "
                           f"{', '.join(self.algorithms)})") from None

    def __repr__(self) -> str:
        hit = ", cache hit" if self.cache_hit else ""
        return (f"<CompiledModule {self.prefix!r} [{', '.join(self.algorithms)}] at "
                f"{self.path}{hit}>")


def load(directory, *, cache_hit: bool = False, verified: bool = False,
         reuse_results: bool = True, quaternions: str = "check",
         manifest: dict | None = None) -> CompiledModule:
    """Load a build directory written by :func:`symdyn.codegen.build` (or ``symdyn codegen
    --compile``), after checking its manifest checksums. ``reuse_results`` (default True) lets
    single calls and ``.batch`` return buffers that the caller has dropped instead of fresh
    copies (never one still referenced; see the module docstring); False copies every result.
    ``quaternions``: ``"check"`` (default) refuses a q whose unit quaternions (floating and
    spherical joints) are off by more than 1e-6, like :func:`symdyn.rnea`; ``"normalize"``
    divides each by its norm first (on a copy of q; costs a few microseconds a call), and still
    refuses zero or non-finite ones.

    The manifest's and every file's checksums are verified first (``verified=True`` with the
    verified ``manifest`` skips that); the sizes the C code reads and writes are then taken from
    the library itself, and a manifest that disagrees with it raises
    :class:`~symdyn.codegen.cache.InvalidBuild` (a ``ValueError``)."""
    if quaternions not in QUATERNION_MODES:
        raise ValueError(f"quaternions must be one of {QUATERNION_MODES}, got {quaternions!r}")
    directory = Path(directory)
    if verified and manifest is None:
        manifest = _cache.read_manifest(directory)
    elif not verified:
        manifest, reason = _cache.verify(directory)
        if manifest is None:
            raise ValueError(f"cannot load {directory}: {reason}")
    assert manifest is not None          # read or verified above
    if not manifest.get("library"):
        raise ValueError(f"{directory} holds sources only; compile them first (symdyn codegen "
                         "--compile, or symdyn.codegen.build)")
    return CompiledModule(directory, manifest, cache_hit, reuse_results=reuse_results,
                          quaternions=quaternions)
