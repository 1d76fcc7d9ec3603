"""Build = generate, compile, cache, load: the thin orchestration of the codegen layers.

``build(model, ["rnea", "crba"])`` returns a :class:`~symdyn.codegen.loader.CompiledModule`
whose callables run the generated C directly. The layers:

* :mod:`symdyn.codegen.generate`: trace to a ``casadi.Function``, CasADi's ``CodeGenerator``,
  then the ordered passes over the C text (``PASSES``), plus the wrapper of
  :mod:`symdyn.codegen.csource`;
* :mod:`symdyn.codegen.compiler`: find the C compiler, choose flags by function size (see its
  docstring for the measurements), compile the translation units in parallel, link;
* :mod:`symdyn.codegen.cache`: content-addressed entries, safe under concurrent builders;
* :mod:`symdyn.codegen.loader`: ctypes calls with little overhead.
"""
from __future__ import annotations

import contextlib
import logging
import platform
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

from . import cache as _cache
from . import recursive
from . import simd as _simd
from .compiler import (AUTO_O2_MAX_SIZE, AUTO_POLICY, OPT_LEVELS, BuildError, check_opt,
                       choose_opt, compile_library, compiler_info, native_target)
from .csource import API_VERSION
from .generate import (CODEGEN_SOURCES, FORMAT, PASSES, jsonable_options, versions,
                       codegen_source_files, function_symbol, generate_sources,
                       normalize_algorithms, split_key)
from .names import c_identifier
from ..progress import Progress, make_progress

__all__ = ["AUTO_O2_MAX_SIZE", "AUTO_POLICY", "BuildError", "CODEGEN_SOURCES", "FORMAT",
           "OPT_LEVELS", "PASSES", "Progress", "build", "choose_opt", "codegen_source_files",
           "compile_library", "compiler_info", "function_symbol", "generate_sources",
           "native_target", "normalize_algorithms"]

log = logging.getLogger("symdyn.codegen")
_check_opt = check_opt


def build(model, algorithms, out_dir=None, name: str | None = None, *, opt: str = "auto",
          cflags: Sequence[str] = (), native: bool = True, cse: bool = True,
          fast_trig: bool = True, cache: bool = True, cache_dir=None, cc: str | None = None,
          jobs: int | None = None, progress: bool | None | Callable = None,
          quaternions: str = "check", parameters: str | None = None,
          form: str = "auto", simd="auto", **options):
    """Generate, compile and load C code of ``algorithms`` for ``model``.

    ``algorithms``: names (``["rnea", "crba"]`` or ``"rnea,crba"``) or ``{name: options}``; see
    :data:`symdyn.codegen.ALGORITHMS`. ``options`` are algorithm options routed to the algorithms
    that accept them (e.g. ``factorization="simple"``). Returns a
    :class:`~symdyn.codegen.loader.CompiledModule` exposing one callable per algorithm
    (``lib.rnea(q, qd, qdd)``, ``lib.rnea.batch(Q, QD, QDD)``) and ``lib.stats`` (SX node and
    instruction counts, trace/generate/compile times, flags).

    Without ``out_dir`` the build goes to the cache (:func:`symdyn.codegen.cache.cache_root`),
    keyed by the model's content, algorithms, options, flags and symdyn/CasADi/compiler
    versions; a second build is a cache hit (``lib.cache_hit``), safe across concurrent
    processes. Entries are verified before use (checksums of every file and of the manifest;
    sizes from the library itself) and rebuilt when they do not verify; a read-only cache
    serves its valid entries, and a build it cannot store goes to a temporary directory (with a
    ``RuntimeWarning``). ``cache_dir`` overrides the cache location (default ``$SYMDYN_CACHE`` or
    ``~/.cache/symdyn``). With ``out_dir`` the sources and library are written there (no cache).
    ``name`` (default: model name) is the C prefix, sanitized into an identifier. ``opt``:
    ``"auto"`` (by function size, see the module docstring) or a gcc level such as ``"-O1"``;
    ``native`` adds ``-march=native`` (20-30 % faster code measured; the cache key records the
    CPU features, see :func:`native_target`); ``cflags`` are appended. ``progress``: see
    :class:`~symdyn.progress.Progress` (periodic lines in a log). ``quaternions``
    (``"check"`` or ``"normalize"``): see :func:`symdyn.codegen.loader.load`.

    Build-time options and several functions of one algorithm: frame functions need ``frame``
    (``build(model, {"frame_jacobian": {"frame": "panda_hand", "reference": "world"}})``); each
    compiled function is keyed ``"<algorithm>:<label>"``, the label being the frame's name unless
    given in the key (``{"frame_jacobian:hand_world": {...}}``), and a list of frames gives one
    function each (see :func:`~symdyn.codegen.generate.normalize_algorithms`). Call them as
    ``lib["frame_jacobian:panda_hand"](q)`` or ``lib.frame_jacobian["panda_hand"](q)``.

    ``parameters="inertial"``: the functions whose result depends on the inertias take the 10 N
    inertial parameters ``pi`` (Pinocchio's order, :func:`symdyn.inertial_parameters`)
    as a last input, e.g. ``lib.rnea(q, qd, qdd, pi)``; frames and regressors keep their inputs
    (:mod:`symdyn.codegen.parameters` lists the functions and the caveats).

    ``simd``: the vector variants that ``.batch`` runs W states per instruction with
    (:mod:`symdyn.codegen.simd`): ``"auto"`` one per function, the widest the building CPU runs
    except AVX2 for functions with large outputs (640 bytes a state or more, and one entry per
    10 operations or more: faster there; :func:`symdyn.codegen.simd.auto_target`), a target
    name or a tuple of them (``("avx512", "avx2")``: a library for other CPUs too), ``()`` none. The
    batch picks at run time the widest one the CPU supports, else the scalar loop; single
    calls are not affected.
    """
    from .loader import load

    check_opt(opt)
    from .loader import QUATERNION_MODES

    if quaternions not in QUATERNION_MODES:
        raise ValueError(f"quaternions must be one of {QUATERNION_MODES}, got {quaternions!r}")
    from ..model import Model

    if not isinstance(model, Model):
        raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
    if model.is_symbolic:
        raise ValueError(f"model {model.name!r} has SymPy parameters; substitute numbers with "
                         "model.subs(...) before compiling")
    from .parameters import check_parameters

    parameters = check_parameters(parameters)
    recursive.check_form(form)
    _simd.check_simd(simd)
    cflags = [str(f) for f in cflags]
    algs = normalize_algorithms(algorithms, options)
    prefix = c_identifier(name if name is not None else model.name)
    cc_path, cc_version = compiler_info(cc)
    targets = _simd.resolve_targets(simd, cc_path)
    simd_auto = _simd.check_simd(simd) == "auto"
    prog = make_progress(progress, f"codegen {prefix}")
    t0 = time.perf_counter()

    def make(directory: Path) -> dict:
        manifest = generate_sources(model, dict(algs), directory, prefix, cse=cse,
                                    fast_trig=fast_trig, progress=prog, parameters=parameters,
                                    form=form, simd=targets, simd_auto=simd_auto)
        manifest = compile_library(directory, manifest, opt=opt, cflags=cflags, native=native,
                                   cc=cc_path, jobs=jobs, progress=prog)
        manifest["t_total"] = time.perf_counter() - t0
        return manifest

    manifest: dict | None   # a built one, or a cached one (None: invalid)
    if out_dir is not None or not cache:
        directory = Path(out_dir) if out_dir is not None else Path(
            tempfile.mkdtemp(prefix=f"symdyn-{prefix}-"))
        manifest = make(directory)
        manifest["key"] = None
        _cache.write_manifest(directory, manifest)
        return load(directory, cache_hit=False, quaternions=quaternions)

    key_data = {
        "format": FORMAT, "api": API_VERSION, "versions": versions(),
        "model": _cache.model_fingerprint(model),
        "algorithms": [(k, jsonable_options(o)) for k, o in algs], "prefix": prefix,
        "opt": opt, "auto": AUTO_POLICY, "cflags": cflags, "cse": bool(cse),
        "fast_trig": bool(fast_trig), "simd": list(targets),
        "simd_auto": ([_simd.AUTO_NARROW_OUT_BYTES, _simd.AUTO_NARROW_OUT_PER_OP] if simd_auto
                      else None),
        "native": native_target(cc_path)[1] if native else None,
        "cc": [cc_path, cc_version], "platform": [sys.platform, platform.machine()],
    }
    if parameters is not None:
        key_data["parameters"] = parameters
    if form != "auto" or any(recursive.choose_form(model, split_key(k)[0], form,
                                                   parameters=parameters, options=o)[0]
                             != "unrolled" for k, o in algs):
        key_data["form"] = [form, recursive.AUTO_MAX_UNROLLED, recursive.AUTO_WORK_RATIO,
                            recursive.AUTO_COMPARE_MIN, recursive.AUTO_WORK_PER_INSTRUCTION,
                            recursive.AUTO_CALL_COST, recursive.program.FUSE]
    key = _cache.build_key(key_data)
    root = Path(cache_dir) if cache_dir is not None else _cache.cache_root()
    entry = root / key

    def lookup():
        """(the loaded entry, "") when it verifies, else (None, why not)."""
        manifest, reason = _cache.verify(entry, key)
        if manifest is None:
            return None, reason
        try:
            lib = load(entry, cache_hit=True, verified=True, manifest=manifest,
                       quaternions=quaternions)
        except _cache.InvalidBuild as exc:
            return None, str(exc)
        log.info("cache hit %s (%s)", entry, prefix)
        return lib, ""

    # a lookup takes no lock (entries appear by an atomic rename and are never modified in
    # place): a read-only cache serves its valid entries
    lib, reason = lookup()
    if lib is not None:
        return lib
    locked = contextlib.ExitStack()
    try:
        root.mkdir(parents=True, exist_ok=True)
        locked.enter_context(_cache.lock(root, key))
    except OSError as exc:
        warnings.warn(f"the code-generation cache {root} is not writable ({exc}); building "
                      "in a temporary directory instead (set $SYMDYN_CACHE or pass cache_dir= "
                      "to cache builds)", RuntimeWarning, stacklevel=2)
        directory = Path(tempfile.mkdtemp(prefix=f"symdyn-{prefix}-"))
        manifest = make(directory)
        manifest["key"] = None
        _cache.write_manifest(directory, manifest)
        return load(directory, cache_hit=False, quaternions=quaternions)
    with locked:
        lib, reason = lookup()            # another builder may have finished meanwhile
        if lib is not None:
            return lib
        if entry.exists():
            prog(f"cache entry {entry.name} is invalid ({reason}): rebuilding", slow=True)
            _cache.discard(entry)
        _cache.sweep(root)
        tmp = _cache.new_tmp_dir(root, key)
        try:
            manifest = make(tmp)
            manifest["key"] = key
            manifest["key_data"] = key_data
            _cache.write_manifest(tmp, manifest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if not _cache.publish(tmp, entry):
            manifest, reason = _cache.verify(entry, key)
            if manifest is None:
                raise BuildError(f"cache entry {entry} appeared during the build but is invalid "
                                 f"({reason})")
    return load(entry, cache_hit=False, quaternions=quaternions)
