"""Load a compiled build and call its C entry points with little overhead.

A :class:`CompiledFunction` has one call path, :meth:`CompiledFunction.__call__`: it takes the
inputs (positionally or by input name), converts them to C-contiguous float64 arrays of the
right shapes (clear errors otherwise), lets C write into fresh result arrays and returns them,
or copies them into the caller's ``out=`` arrays. C is reached through the fastcall extension
(:mod:`.fastcall`, compiled once per Python and NumPy into the build cache) or, where it cannot
be built (no compiler or headers, ``$SYMDYN_FASTCALL=0``), through ``ctypes``: the inputs'
bytes go to ``F_call_inputs`` and the outputs, written into the function's own buffers, are
copied into the fresh arrays. With the extension, compiled functions derive from its
``Function`` type, whose C call takes the common case itself (exactly the inputs, as
C-contiguous float64 arrays of the right shapes, no keywords) and hands every other call, and
every nonzero C status, to ``__call__``. Per-call costs against Pinocchio:
``reports/fastpath.md`` (``experiments/bench_fastpath.py``).

NaN/inf in the inputs is detected in C before evaluation: the call raises ``ValueError`` naming
the input (``nan="raise"``, default) or returns NaN outputs (``nan="propagate"``). The unit
quaternions of floating and spherical joints are checked in C as well (``|norm - 1| > 1e-6``,
like :func:`symdyn.rnea`): ``ValueError`` naming the input slice and the body (``.batch``: the
state too), whatever ``nan`` says. ``build(..., quaternions="normalize")`` (or ``load``)
normalizes them first instead, explicitly (zero or non-finite ones are still refused).

Threads: a :class:`CompiledFunction` may be called from many Python threads at once. The thread
that created it uses its work buffers directly; its call context records that thread, and the
C wrapper refuses (status -3, nothing read or written) a call through it from any other thread,
which then runs on its own copy with its own context and work buffers, created on its first
call and kept in a ``threading.local``. The owner's calls pay only a ``pthread_self()``
comparison in C; another thread pays for the refused attempt on every call, so a worker thread
with a hot loop should call ``f.copy()`` once and use that copy (it owns it).

Batches: ``.batch(..., threads=n)`` splits one batch over C threads (the GIL is released there;
threads take chunks of states as they go); ``threads=None``, the default, picks the number by
the batch's estimated work (one thread per ~1 ms, at most the CPUs available, capped by
``$SYMDYN_NUM_THREADS`` or ``$OMP_NUM_THREADS``; :func:`auto_threads`). ``stream=`` chooses how
outputs are written (whole cache lines with non-temporal stores, or in place; by default by
their size); see :meth:`CompiledFunction.batch` and :mod:`symdyn.codegen.csource`. Results are
fresh arrays unless ``out=`` is given; for large outputs pass ``out=`` and reuse it (fresh
multi-MB arrays cost page faults comparable to the computation).
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from . import cache as _cache
from .csource import API_VERSION

_ndarray = np.ndarray
_empty = np.empty
_perf_counter = time.perf_counter
_F64 = np.dtype(np.float64)
_RAISE = "raise"
_NAN_MODES = (_RAISE, "propagate")
QUATERNION_MODES = ("check", "normalize")
_BAD_QUAT = -100          # C status of quaternion j: _BAD_QUAT - j (see csource)
_OTHER_THREAD = -3        # C status: the context belongs to another thread (nothing done)


class CompiledFunction:
    """One compiled algorithm: ``f(*inputs, out=None, nan="raise")`` and ``f.batch(...)``.

    ``f.input_names``/``f.input_shapes``, ``f.output_names``/``f.output_shapes`` describe the
    signature (e.g. rnea: q (nq,), qd (nv,), qdd (nv,) -> tau (nv,)); ``f.stats`` holds SX sizes and
    build timings. Results are fresh arrays owned by the caller unless ``out=`` is given.
    Instances are made by :class:`CompiledModule` (:func:`load`, :func:`symdyn.codegen.build`).
    """

    def __init__(self, meta: dict, single_lib, batch_lib, *, quaternions=(), thread_id=None,
                 quaternion_mode: str = "check"):
        self.meta = meta
        self.algorithm = meta["algorithm"]
        self.key = meta.get("key", self.algorithm)      # "alg" or "alg:label" (module lookup)
        self.parameters = meta.get("parameters")        # None or "inertial" (input pi last)
        self.name = meta.get("name", meta["fname"])     # public name (may exceed 48 characters)
        self.symbol = meta["fname"]                     # C symbol (at most 48 characters)
        self.quaternions = tuple((int(d["offset"]), str(d["body"])) for d in quaternions)
        if quaternion_mode not in QUATERNION_MODES:
            raise ValueError(f"quaternions must be one of {QUATERNION_MODES}, got "
                             f"{quaternion_mode!r}")
        self.quaternion_mode = quaternion_mode
        self._qin = list(meta["input_names"]).index("q") if "q" in meta["input_names"] else -1
        self._normalize = quaternion_mode == "normalize" and bool(self.quaternions)
        self._tls = threading.local()       # per-thread copies (shared with copies of self)
        self._thread_id = thread_id           # C: the owner value of the calling thread
        #: NaN/inf errors mention the ``nan=`` option (callers that do not offer it turn it off)
        self.nan_hint = True
        self.input_names = tuple(meta["input_names"])
        self.output_names = tuple(meta["output_names"])
        # the sizes the C code reads and writes come from the library; the manifest only names
        # them and gives the outputs' shapes, which must hold exactly that many entries
        sizes_in, sizes_out = library_sizes(single_lib, self.symbol)
        self._check_sizes(meta, sizes_in, sizes_out)
        self.input_shapes = tuple((n,) for n in sizes_in)
        self.output_shapes = tuple(tuple(int(d) for d in s) for s in meta["output_shapes"])
        self.stats = {k: meta[k] for k in ("n_nodes", "n_instructions", "work", "n_fast_trig",
                                           "t_trace", "t_function", "t_generate", "t_compile", "cpu_compile", "cflags",
                                           "source_bytes", "t_compile_simd", "cpu_compile_simd")
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
        self._call_inputs = getattr(single_lib, f"{self.symbol}_call_inputs")
        # no argtypes: every argument is a bytes object (char*) or the c_void_p context, which
        # ctypes passes as is, without a per-argument conversion
        self._call_inputs.argtypes = None
        self._call_inputs.restype = ctypes.c_int
        self._batch = getattr(batch_lib, f"{self.symbol}_batch_mode")
        self._batch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                                ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_longlong)]
        self._batch.restype = ctypes.c_int
        width = getattr(single_lib, f"{self.symbol}_symdyn_simd_width")
        width.argtypes, width.restype = [], ctypes.c_int
        #: states per instruction of ``.batch`` on this CPU (1: the scalar loop); the vector
        #: variants built are ``meta["simd"]`` (symdyn.codegen.simd)
        self.simd_width = int(width())
        # estimated ns a state (chooses threads=None): ~0.15 ns an SX instruction of the generated
        # functions (reports/fastpath.md), plus the outputs' bytes at ~10 GB/s; output entries alone
        # where the size is not recorded. One-thread batches of 32 states or more then average
        # in their measured time
        n_out = sum(int(np.prod(s)) for s in self.output_shapes)
        n_instr = meta.get("n_instructions")
        self._state_ns = (0.15 * float(n_instr) if n_instr else 1.0 * n_out) + 0.8 * n_out
        self._tune: dict[int, float] = {}   # threads=None: wall ns a state per thread count
        self._tune_calls = 0
        self._n_in = len(self.input_names)
        self._single = len(self.output_names) == 1
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

    def _allocate(self) -> None:
        """Work buffers and a call context owned by the calling thread."""
        self._owner = self._thread_id() if self._thread_id is not None else None
        self._iw = np.zeros(max(1, self._sz_iw), dtype=np.int64)
        self._w = np.zeros(max(1, self._sz_w))
        self._bind()

    def _bind(self) -> None:
        """The ctypes call context: output buffers, then iw, w and the owner thread (csource)."""
        self._buffers = tuple(np.zeros(s) for s in self.output_shapes)
        ctx = (ctypes.c_void_p * (self._sz_arg + self._sz_res + 3))()  # inputs: arguments
        for k, b in enumerate(self._buffers):
            ctx[self._sz_arg + k] = b.ctypes.data
        ctx[self._sz_arg + self._sz_res] = self._iw.ctypes.data
        ctx[self._sz_arg + self._sz_res + 1] = self._w.ctypes.data
        ctx[self._sz_arg + self._sz_res + 2] = self._owner   # only this thread may use ctx
        self._ctx, self._pctx = ctx, ctypes.c_void_p(ctypes.addressof(ctx))

    def _run(self, ins: tuple, outs: tuple) -> int:
        """Evaluate C on the float64 inputs ``ins`` (any strides) into the C-contiguous float64
        arrays ``outs`` (through ctypes; the extension's ``Function`` has its own); the C
        status."""
        status = self._call_inputs(*[x.tobytes() for x in ins], self._pctx)
        if not status:
            for o, b in zip(outs, self._buffers):
                o[...] = b
        return status

    def copy(self) -> "CompiledFunction":
        """The same function with its own buffers, owned by the calling thread (calls from other
        threads make per-thread copies by themselves; see the module docstring)."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
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
    def __call__(self, *args, out=None, nan: str = "raise", **inputs):
        """Evaluate at one state: ``f(q, qd, qdd)``, inputs also by name (``f(q, qdd=a,
        qd=v)``); any real arrays or sequences of the input shapes (converted to float64).

        Returns the output array, or a tuple of them (``output_names``), fresh and owned by
        the caller; with ``out`` (an array, or a tuple of arrays: float64, the output shapes)
        the results are copied there and ``out`` is returned. ``nan``: ``"raise"`` (default:
        ``ValueError`` naming the input holding NaN or inf) or ``"propagate"`` (NaN outputs).
        """
        if inputs or len(args) != self._n_in:
            args = self._arguments(args, inputs)
        if nan is not _RAISE and nan != "propagate":
            self._check_nan(nan)
        ins = args
        for x, shape in zip(args, self.input_shapes):
            if x.__class__ is not _ndarray or x.dtype is not _F64 or x.shape != shape:
                ins = tuple([self._input(k, x) for k, x in enumerate(args)])
                break
        if self._normalize:
            ins = ins[:self._qin] + (self._normalize_q(ins[self._qin]),) + ins[self._qin + 1:]
        outs = tuple(map(_empty, self.output_shapes))
        status = self._run(ins, outs)
        if status:
            if status == _OTHER_THREAD:    # nothing done: use this thread's own copy
                return self._threaded(args, out, nan)
            self._status(status, nan, outs, ins)
        if out is not None:
            return self._write_out(out, outs)
        return outs[0] if self._single else outs

    def _arguments(self, args: tuple, named: dict) -> tuple:
        """The inputs in order from positional and named arguments (Python's messages)."""
        names = self.input_names
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} positional arguments "
                            f"({', '.join(names)}) but {len(args)} were given")
        values = dict(zip(names, args))
        for name, x in named.items():
            if name not in names:
                raise TypeError(f"{self.name}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{self.name}() got multiple values for argument {name!r}")
            values[name] = x
        missing = [repr(n) for n in names if n not in values]
        if missing:
            raise TypeError(f"{self.name}() missing {len(missing)} required positional "
                            f"argument{'s' if len(missing) > 1 else ''}: "
                            f"{' and '.join(missing)}")
        return tuple(values[n] for n in names)

    def _input(self, k: int, x) -> np.ndarray:
        """Input ``k`` as a native float64 array of its shape (``_run`` reads any strides)."""
        if isinstance(x, _ndarray) and x.dtype == _F64 and x.shape == self.input_shapes[k]:
            return x
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

    def _normalize_q(self, q: np.ndarray) -> np.ndarray:
        """A copy of q whose quaternions have unit norm (``quaternions="normalize"``); a zero or
        non-finite quaternion is left as it is, for the C checks to report."""
        q = q.copy()
        for off, _ in self.quaternions:
            e = q[off:off + 4]
            n = float(np.sqrt(e @ e))
            if n > 0.0 and np.isfinite(n):
                e /= n
        return q

    def _status(self, status: int, nan: str, outs: tuple, ins: tuple) -> None:
        """Raise the error a nonzero C status stands for, or fill ``outs`` with NaN for NaN/inf
        inputs under ``nan="propagate"``."""
        if status <= _BAD_QUAT:
            raise self._quaternion_error(_BAD_QUAT - status, ins[self._qin])
        if status > 0:
            if nan == "propagate":
                for o in outs:
                    o.fill(np.nan)
                return
            raise ValueError(f"{self.name}: input {self.input_names[status - 1]} contains NaN "
                             "or inf" + (" (pass nan='propagate' to get NaN outputs instead)"
                                         if self.nan_hint else ""))
        raise RuntimeError(f"{self.name}: the compiled function failed (status {status})")

    def _write_out(self, out, results: tuple):
        outs = (out,) if self._single else out
        if not isinstance(outs, (tuple, list)) or len(outs) != len(results):
            raise TypeError(f"{self.name}: out must be "
                            + ("an array" if self._single else
                               f"a tuple of {len(results)} arrays ({', '.join(self.output_names)})"))
        for k, (o, r) in enumerate(zip(outs, results)):
            if o.__class__ is not _ndarray or o.dtype is not _F64 or o.shape != r.shape:
                self._check_out(k, o, self.output_shapes[k], contiguous=False)
            try:
                o[...] = r
            except ValueError:                   # read-only: named by _check_out
                self._check_out(k, o, self.output_shapes[k], contiguous=False)
                raise
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
              stream: bool | None = None, simd: bool = True):
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

        ``simd``: ``True`` (default) evaluates ``f.simd_width`` states per instruction with the
        widest vector variant this CPU runs (:mod:`symdyn.codegen.simd`; the scalar loop where
        the build has none, and for batches of fewer than ``f.simd_width`` states, where one
        block would cost more than the states' scalar calls); ``False`` the scalar loop. Results agree to rounding (the vector
        code may fuse multiply-adds differently).

        Without ``out`` the results are fresh arrays; for large batches pass ``out=`` and reuse
        it (fresh multi-MB arrays cost page faults comparable to the computation).
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
        if not isinstance(simd, (bool, np.bool_)):
            raise ValueError(f"simd must be True or False, got {simd!r}")
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
        outs: list[Any] | None
        if out is None:
            outs = [np.empty((nstates, *s)) for s in self.output_shapes]
        else:
            outs = [out] if self._single else list(out) if isinstance(out, (tuple, list)) else None
            if outs is None or len(outs) != len(self.output_shapes):
                raise TypeError(f"{self.name}.batch: out must be "
                                + ("an array" if self._single else
                                   f"a tuple of {len(self.output_shapes)} arrays"))
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
        t0 = _perf_counter()
        status = self._batch(pin, pout, nstates, int(threads),
                             -1 if stream is None else int(bool(stream)), int(bool(simd)), bad)
        if nstates >= 32 and status == 0:
            # measured wall ns a state: one thread's refine the work estimate; automatic
            # choices record theirs per thread count (benign races between Python threads)
            ns = (_perf_counter() - t0) * 1e9 / nstates
            if threads == 1:
                self._state_ns = 0.5 * (self._state_ns + ns)
            if auto:
                old = self._tune.get(int(threads))
                self._tune[int(threads)] = ns if old is None else 0.5 * (old + ns)
        if status == 2:
            q = ins[self._qin][bad[1]]
            # the quaternion C rejected: the first one off by more than the tolerance (the one
            # furthest off should rounding differ from C's)
            devs = [abs(float(np.sqrt(q[o:o + 4] @ q[o:o + 4])) - 1.0) for o, _ in self.quaternions]
            j = next((j for j, d in enumerate(devs) if d > 1e-6), int(np.argmax(devs)))
            raise self._quaternion_error(j, q, where=f".batch: state {bad[1]}")
        if status == 1 and nan == "raise":
            raise ValueError(f"{self.name}.batch: state {bad[0]} has NaN or inf inputs"
                             + (" (pass nan='propagate' to get NaN outputs for such states)"
                                if self.nan_hint else ""))
        if status < 0:
            what = "out of memory" if status == -2 else f"status {status}"
            raise RuntimeError(f"{self.name}.batch: the compiled function failed ({what})")
        if out is not None:
            return out
        return outs[0] if self._single else tuple(outs)

    def _tuned(self, threads: int) -> int:
        """``threads`` (> 1, from the work estimate) or 1, whichever ran faster per state in
        this function's earlier automatic batches: on a machine whose other cores are busy, a
        helper thread that the scheduler preempts holds up the batch (measurements in
        reports/fastpath.md). Each is tried once, then the slower one again every 16th call, in
        case the load changed."""
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


# threads=None: one thread per this much estimated work (ns). Starting a POSIX thread costs tens of
# microseconds, and on a busy machine a thread can wait a scheduler time slice (ms) before it
# runs or while it holds a chunk, which makes 2 threads slower than 1 for batches of ~1 ms
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

@functools.lru_cache(maxsize=None)
def _extension_class(base: type) -> type:
    """:class:`CompiledFunction` on the fastcall extension's ``Function`` type (``base``): its
    C call takes exact-array calls itself and hands every other call to
    ``CompiledFunction.__call__``, and its ``_run`` replaces the ctypes one."""

    class ExtensionFunction(base, CompiledFunction):  # type: ignore[valid-type, misc]
        __doc__ = CompiledFunction.__doc__

        def _bind(self) -> None:
            entry = getattr(self._single_lib, f"{self.symbol}_call")
            self._attach(ctypes.cast(entry, ctypes.c_void_p).value, self._sz_arg, self._sz_res,
                         self._iw.ctypes.data, self._w.ctypes.data, self._owner or 0,
                         tuple(s[0] for s in self.input_shapes), self.output_shapes,
                         CompiledFunction.__call__, not self._normalize)
            # batches that threads=None runs on one thread whatever the CPU count: in C
            batch = getattr(self._single_lib, f"{self.symbol}_batch_mode")
            self._attach_batch(ctypes.cast(batch, ctypes.c_void_p).value,
                               int(2 * AUTO_THREAD_NS // self._state_ns) - 1,
                               CompiledFunction.batch)

    ExtensionFunction.__name__ = ExtensionFunction.__qualname__ = "CompiledFunction"
    return ExtensionFunction


def function_class() -> type:
    """The class of compiled functions in this process: on the fastcall extension where it is
    available (:func:`symdyn.codegen.fastcall.status`), else :class:`CompiledFunction` itself
    (through ctypes)."""
    from . import fastcall

    mod = fastcall.module()
    return CompiledFunction if mod is None else _extension_class(mod.Function)


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
                 quaternions: str = "check"):
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
        cls = function_class()
        groups: dict[str, dict] = {}
        for fd in manifest["functions"]:
            f = cls(fd, single, batch, quaternions=manifest.get("quaternions", ()),
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
         quaternions: str = "check", manifest: dict | None = None) -> CompiledModule:
    """Load a build directory written by :func:`symdyn.codegen.build` (or ``symdyn codegen
    --compile``), after checking its manifest checksums. ``quaternions``: ``"check"`` (default) refuses a q whose unit quaternions (floating and
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
    return CompiledModule(directory, manifest, cache_hit, quaternions=quaternions)
