"""Generate C for symdyn algorithms with CasADi, compile it, cache it, load it.

``build(model, ["rnea", "crba"])`` returns a :class:`~symdyn.codegen.loader.CompiledModule`
whose callables run the generated C directly (see :mod:`symdyn.codegen.loader`). Sources are
generated one translation unit per algorithm (compiled in parallel, each with flags chosen from
its size), plus the call/batch wrapper of :mod:`symdyn.codegen.csource`.

Compiler flags (``opt="auto"``), chosen by measurement (``experiments/bench_fastpath.py``,
``reports/fastpath.md``): ``-O2`` for functions whose size (SX instructions plus output entries,
each output write being a branch in CasADi's code) is at most ``AUTO_O2_MAX_SIZE``, ``-Og``
above it, plus ``-march=native`` by default. gcc spends its time on straight-line CasADi code in
register allocation and per-basic-block passes, which grow faster than linearly with function size
at -O1/-O2 (Gamma of a 20-DoF chain, 81k instructions: -Og 7 s CPU, -O1 10 s, -O2 > 90 s; talos
Coriolis matrix, 38k: -Og 2.9 s, -O2 27 s), while -Og code is at most ~25 % slower than -O2 code
there. Splitting big functions into chunks was measured too (own emitter from CasADi's
instruction list): it did not reduce compile time much and made the code slower, so functions
are not split. The threshold was raised from 20k to 32k after measuring the functions between
(gcc CPU -Og -> -O2 / time per call, 2-core AMD EPYC): talos coriolis_matrix (29.8k) 2 -> 9-13 s /
8.8 -> 7.0 us, serial:20 rnea_derivatives (28.4k) 4.8 -> 11.7 s / 8.0 -> 6.2 us, biped:20
rnea_derivatives (20.9k) 3.3 -> 4.9 s / 6.1 -> 5.2 us, binary:20 christoffel (20.3k) 1.7 ->
7.6 s / 5.9 -> 5.1 us, biped:20 christoffel (30.8k) 2.2 -> 8.5 s / 7.3 -> 6.0 us: 12-22 % faster
code for a few seconds more per build; Gamma of serial:20 (77k) stays -Og (the 30 s target).

Generated sources are post-processed: outputs are emitted in the algorithms' sweep order
(:mod:`symdyn.codegen.emit_order`) and sin/cos are inlined (:mod:`symdyn.codegen.trig`).
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import cache as _cache
from .csource import API_VERSION, api_sources, example_main, makefile
from .functions import algorithm_options, algorithm_spec, casadi_function
from .names import c_identifier
from .emit_order import remap_output_writes
from .trig import use_fast_trig

log = logging.getLogger("symdyn.codegen")

FORMAT = 1                      # layout of generated files / manifest (part of the cache key)
AUTO_O2_MAX_SIZE = 32000
AUTO_POLICY = ("-O2", AUTO_O2_MAX_SIZE, "-Og")  # part of the cache key
OPT_LEVELS = ("auto", "-O0", "-O1", "-O2", "-O3", "-Og", "-Os")
_PROGRESS_AFTER = 2.0           # seconds before automatic progress messages start


class BuildError(RuntimeError):
    """Code generation or compilation failed (the message includes the compiler's output)."""


# --- progress --------------------------------------------------------------------------------------

class Progress:
    """Progress messages of a build: ``mode`` True (always, stderr), False (never), None (stderr
    once the build has run for more than 2 s or a step is known to be slow) or a callable taking
    the message. Every message also goes to the ``symdyn.codegen`` logger."""

    def __init__(self, mode: bool | None | Callable[[str], Any], label: str):
        self.mode, self.label, self.t0 = mode, label, time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def __call__(self, msg: str, slow: bool = False) -> None:
        text = f"[symdyn codegen {self.label} {self.elapsed():6.1f}s] {msg}"
        log.info(text)
        if callable(self.mode):
            self.mode(text)
        elif self.mode or (self.mode is None and (slow or self.elapsed() > _PROGRESS_AFTER)):
            print(text, file=sys.stderr, flush=True)


# --- compiler ----------------------------------------------------------------------------------------

_CC_INFO: dict[str, tuple[str, str]] = {}


def compiler_info(cc: str | None = None) -> tuple[str, str]:
    """(path, version line) of the C compiler: ``cc`` argument, else ``$CC``, else cc/gcc/clang."""
    name = cc or os.environ.get("CC")
    candidates = [name] if name else ["cc", "gcc", "clang"]
    for c in candidates:
        path = shutil.which(c.split()[0]) if c else None
        if path:
            break
    else:
        raise BuildError(f"no C compiler found (tried {', '.join(candidates)}); install gcc or "
                         "clang, or set $CC")
    if path not in _CC_INFO:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
            version = (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError) as exc:
            raise BuildError(f"C compiler {path} does not run: {exc}") from None
        _CC_INFO[path] = (path, version)
    return _CC_INFO[path]


_NATIVE: dict[str, tuple[list[str], str]] = {}


def native_target(cc: str | None = None) -> tuple[list[str], str]:
    """(``["-march=native"]``, digest of the CPU features it enables) if the compiler accepts
    ``-march=native``, else ``([], "")``. The digest (of the predefined macros, e.g. __AVX2__,
    __FMA__) goes into the cache key, so a cache shared by different CPUs never serves code built
    for another instruction set."""
    path, _ = compiler_info(cc)
    if path not in _NATIVE:
        flags, digest = [], ""
        try:
            res = subprocess.run([path, "-march=native", "-E", "-dM", "-x", "c", os.devnull],
                                 capture_output=True, text=True, timeout=60)
            if res.returncode == 0:
                flags = ["-march=native"]
                digest = hashlib.sha256(res.stdout.encode()).hexdigest()[:16]
        except (OSError, subprocess.SubprocessError):
            pass
        _NATIVE[path] = (flags, digest)
    return _NATIVE[path]


def choose_opt(n_instructions: int, n_outputs: int = 0, opt: str = "auto") -> str:
    """The optimization flag for a function of ``n_instructions`` SX instructions writing
    ``n_outputs`` output entries."""
    if opt != "auto":
        return opt
    small, limit, big = AUTO_POLICY
    return small if n_instructions + n_outputs <= limit else big


def _check_opt(opt: str) -> None:
    if opt not in OPT_LEVELS:
        raise ValueError(f"unknown opt {opt!r}; choose from {', '.join(OPT_LEVELS)}")


def _cpu_children() -> float:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return float("nan")
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _reap(p: subprocess.Popen, job: dict) -> bool:
    """True once ``p`` has exited; records the compiler's own CPU time (``cpu_compile``) where
    ``os.wait4`` exists (wall times mean little on a loaded machine)."""
    if not hasattr(os, "wait4"):  # pragma: no cover - Windows
        return p.poll() is not None
    if p.returncode is not None:
        return True
    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
    if pid == 0:
        return False
    p.returncode = os.waitstatus_to_exitcode(status)
    job["cpu_compile"] = ru.ru_utime + ru.ru_stime
    return True


def _run_compilers(jobs_list: list[dict], cc: str, directory: Path, jobs: int,
                   progress: Progress) -> None:
    """Compile each ``{"source", "object", "flags", "label"}`` in ``directory``, ``jobs`` at a
    time; records ``t_compile`` (wall) per unit. Heartbeat messages every 5 s while waiting."""
    pending = sorted(jobs_list, key=lambda j: -j.get("weight", 0))
    running: list[tuple[subprocess.Popen, dict, float, Any]] = []
    last_beat = time.perf_counter()
    failed = []
    while pending or running:
        while pending and len(running) < jobs:
            j = pending.pop(0)
            logf = open(directory / (j["object"] + ".log"), "w")
            cmd = [cc, *j["flags"], "-fPIC", "-c", j["source"], "-o", j["object"]]
            j["command"] = " ".join(cmd)
            progress(f"compiling {j['source']} ({j['label']}) with {' '.join(j['flags'])}",
                     slow=j.get("weight", 0) > 20000)
            p = subprocess.Popen(cmd, cwd=directory, stdout=logf, stderr=subprocess.STDOUT)
            running.append((p, j, time.perf_counter(), logf))
        time.sleep(0.02)
        still = []
        for p, j, t0, logf in running:
            if not _reap(p, j):
                still.append((p, j, t0, logf))
                continue
            logf.close()
            j["t_compile"] = time.perf_counter() - t0
            if p.returncode != 0:
                failed.append((j, (directory / (j["object"] + ".log")).read_text()[-4000:]))
            else:
                cpu = f", {j['cpu_compile']:.1f}s CPU" if "cpu_compile" in j else ""
                progress(f"compiled {j['source']} in {j['t_compile']:.1f}s{cpu}")
        running = still
        if running and time.perf_counter() - last_beat > 5.0:
            last_beat = time.perf_counter()
            names = ", ".join(f"{j['source']} ({time.perf_counter() - t0:.0f}s)"
                              for _, j, t0, _ in running)
            progress(f"still compiling {names}", slow=True)
    if failed:
        j, text = failed[0]
        raise BuildError(f"compilation failed: {j['command']}\n{text}")


# --- algorithms and options --------------------------------------------------------------------------

def normalize_algorithms(algorithms, options: Mapping[str, Any]) -> list[tuple[str, dict]]:
    """``[(name, options)]`` from a name, a comma-separated string, a sequence of names or a dict
    ``{name: options}``. Shared ``options`` go to every algorithm that accepts them (an option no
    selected algorithm accepts is an error)."""
    if isinstance(algorithms, str):
        names = [a.strip() for a in algorithms.split(",") if a.strip()]
        per = {n: {} for n in names}
    elif isinstance(algorithms, Mapping):
        per = {n: dict(o or {}) for n, o in algorithms.items()}
        names = list(per)
    elif isinstance(algorithms, Iterable):
        names = list(algorithms)
        per = {n: {} for n in names}
    else:
        raise TypeError(f"algorithms must be names (a list or 'rnea,crba'), got "
                        f"{type(algorithms).__name__}")
    if not names:
        raise ValueError("no algorithm given")
    if len(set(names)) != len(names):
        raise ValueError(f"algorithm listed twice in {names}")
    out = []
    used = set()
    for n in names:
        algorithm_spec(n)
        accepted = algorithm_options(n)
        opts = {k: v for k, v in options.items() if k in accepted}
        used |= set(opts)
        bad = set(per[n]) - set(accepted)
        if bad:
            raise TypeError(f"{n}: unknown option(s) {', '.join(sorted(bad))}; accepted: "
                            f"{', '.join(accepted) or 'none'}")
        out.append((n, {**opts, **per[n]}))
    unused = sorted(set(options) - used)
    if unused:
        raise TypeError(f"option(s) {', '.join(unused)} are accepted by none of "
                        f"{', '.join(names)}")
    return out


# --- source generation ------------------------------------------------------------------------------

def _versions() -> dict:
    import casadi

    from .. import __version__

    return {"symdyn": __version__, "symdyn_source": _source_digest(), "casadi": casadi.__version__}


_SOURCE_DIGEST: list[str] = []
# The symdyn sources that decide generated code (relative to the package; folders: every .py
# below). Closed under symdyn-internal imports (tests/test_codegen.py checks it), so an edit
# elsewhere (symbolic/, constrained/, models.py, the CLIs) no longer invalidates the cache.
CODEGEN_SOURCES = ("algorithms", "backends", "spatial.py", "joints.py", "model.py", "autodiff.py",
                   *(f"codegen/{m}.py" for m in ("__init__", "build", "cache", "csource",
                                                  "emit_order", "functions", "loader", "names",
                                                  "trig")))


def codegen_source_files() -> list[Path]:
    """The files of :data:`CODEGEN_SOURCES`, sorted."""
    root = Path(__file__).resolve().parents[1]
    files = []
    for entry in CODEGEN_SOURCES:
        path = root / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sorted(files)


def _source_digest() -> str:
    """SHA-256 of the symdyn sources that generate code (:data:`CODEGEN_SOURCES`): a cache entry
    built by other code (an edited algorithm, a development checkout between releases) is never
    reused."""
    if not _SOURCE_DIGEST:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in codegen_source_files():
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _SOURCE_DIGEST.append(h.hexdigest()[:16])
    return _SOURCE_DIGEST[0]


def generate_sources(model, algorithms, out_dir, name: str | None = None, *, cse: bool = True,
                     fast_trig: bool = True, progress: bool | None | Callable = None,
                     **options) -> dict:
    """Write CasADi-generated C (one ``<prefix>_<algorithm>.c/.h`` per algorithm), the call/batch
    wrapper ``<prefix>_api.c/.h``, an example ``main.c`` and a ``Makefile`` into ``out_dir``.

    Returns the manifest dict (function signatures, SX node and instruction counts, timings).
    ``name`` (default: the model's name) becomes the C prefix after sanitizing. ``options`` are
    algorithm options (see :func:`normalize_algorithms`). ``fast_trig`` replaces libm's sin/cos
    by branch-free inline versions (:mod:`symdyn.codegen.trig`).
    """
    import casadi as ca

    algs = normalize_algorithms(algorithms, options)
    prefix = c_identifier(name if name is not None else model.name)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    prog = progress if isinstance(progress, Progress) else Progress(progress, prefix)
    versions = _versions()
    functions = []
    for alg, opts in algs:
        spec = algorithm_spec(alg)
        fname = f"{prefix}_{alg}"
        prog(f"tracing {alg} on {model.name!r} (nv={model.nv})", slow=model.nv >= 15)
        info: dict = {}
        f = casadi_function(model, alg, name=fname, layout="numpy", cse=cse, info=info,
                            emit_order=True, **opts)
        tr = info["trace"]
        frame = f", {info['frame']} frame" if "frame" in info else ""
        prog(f"{alg}: {tr.n_nodes} SX nodes, {tr.n_instructions} instructions{frame} "
             f"(trace {tr.t_trace:.2f}s, Function {tr.t_function:.2f}s)")
        t0 = time.perf_counter()
        cg = ca.CodeGenerator(f"{fname}.c", {"with_header": True, "casadi_int": "long long int",
                                              "casadi_real": "double"})
        cg.add(f)
        cg.generate(str(directory) + os.sep)
        src = directory / f"{fname}.c"
        text = remap_output_writes(src.read_text(), info["orders"])
        n_trig = 0
        if fast_trig:
            text, n_trig = use_fast_trig(text)
        src.write_text(text)
        t_gen = time.perf_counter() - t0
        functions.append({
            "algorithm": alg, "fname": fname, "options": opts, "frame": info.get("frame"),
            "source": f"{fname}.c", "header": f"{fname}.h",
            "input_names": list(spec.input_names), "input_sizes": list(spec.input_sizes(model)),
            "output_names": list(spec.output_names),
            "output_shapes": [list(tr.output_shapes[o]) for o in spec.output_names],
            "n_nodes": tr.n_nodes, "n_instructions": tr.n_instructions, "n_fast_trig": n_trig,
            "t_trace": tr.t_trace, "t_function": tr.t_function, "t_generate": t_gen,
            "source_bytes": (directory / f"{fname}.c").stat().st_size,
        })
    header, body = api_sources(prefix, functions, model, versions["symdyn"])
    (directory / f"{prefix}_api.h").write_text(header)
    (directory / f"{prefix}_api.c").write_text(body)
    rng = __import__("numpy").random.default_rng(0)
    example_inputs = {"q": model.random_q(rng)}
    for n in ("qd", "qdd", "tau"):
        example_inputs[n] = rng.uniform(-1, 1, model.nv)
    (directory / "main.c").write_text(example_main(prefix, functions, example_inputs,
                                                   versions["symdyn"]))
    sources = [fd["source"] for fd in functions] + [f"{prefix}_api.c"]
    (directory / "Makefile").write_text(makefile(prefix, sources, f"lib{prefix}.so"))
    return {
        "format": FORMAT, "api_version": API_VERSION, "prefix": prefix, "versions": versions,
        "model": {"name": model.name, "nq": model.nq, "nv": model.nv, "N": model.N,
                  "fingerprint": _cache.model_fingerprint(model)},
        "functions": functions, "cse": bool(cse), "fast_trig": bool(fast_trig), "library": None,
        "example_inputs": {k: [float(x) for x in v] for k, v in example_inputs.items()},
    }


def compile_library(directory, manifest: dict, *, opt: str = "auto",
                    cflags: Sequence[str] = (), native: bool = False, cc: str | None = None,
                    jobs: int | None = None,
                    progress: bool | None | Callable = None) -> dict:
    """Compile the sources described by ``manifest`` in ``directory`` into a shared library
    (a fresh file name per build, so a process never gets a stale ``dlopen`` handle). ``native``
    adds ``-march=native`` when the compiler supports it. Updates and returns the manifest
    (flags, wall and CPU compile times)."""
    _check_opt(opt)
    directory = Path(directory)
    cc_path, cc_version = compiler_info(cc)
    prefix = manifest["prefix"]
    prog = progress if isinstance(progress, Progress) else Progress(progress, prefix)
    extra = (native_target(cc_path)[0] if native else []) + list(cflags)
    units = []
    for fd in manifest["functions"]:
        n_out = sum(math.prod(sh) for sh in fd["output_shapes"])
        o = choose_opt(fd["n_instructions"], n_out, opt)
        fd["cflags"] = [o, *extra]
        units.append({"source": fd["source"], "object": fd["source"][:-2] + ".o",
                      "flags": fd["cflags"], "label": f"{fd['n_instructions']} instructions",
                      "weight": fd["n_instructions"], "fd": fd})
    api = f"{prefix}_api.c"
    units.append({"source": api, "object": f"{prefix}_api.o", "flags": ["-O2", "-pthread", *extra],
                  "label": "wrapper", "weight": 0})
    jobs = jobs or max(1, min(len(units), os.cpu_count() or 1))
    cpu0, t0 = _cpu_children(), time.perf_counter()
    _run_compilers(units, cc_path, directory, jobs, prog)
    for u in units:
        if "fd" in u:
            u["fd"]["t_compile"] = u["t_compile"]
            if "cpu_compile" in u:
                u["fd"]["cpu_compile"] = u["cpu_compile"]
    libname = f"lib{prefix}-{uuid.uuid4().hex[:8]}.so"
    objs = [u["object"] for u in units]
    link = [cc_path, "-shared", "-pthread", *extra, "-o", libname, *objs, "-lm"]
    res = subprocess.run(link, cwd=directory, capture_output=True, text=True)
    if res.returncode != 0:
        raise BuildError(f"linking failed: {' '.join(link)}\n{res.stderr[-4000:]}")
    for old in directory.glob(f"lib{prefix}-*.so"):
        if old.name != libname:
            old.unlink()
    for u in units:
        for p in (directory / u["object"], directory / (u["object"] + ".log")):
            p.unlink(missing_ok=True)
    manifest.update(library=libname, cc=cc_path, cc_version=cc_version, opt=opt,
                    cflags=extra, t_compile_wall=time.perf_counter() - t0,
                    t_compile_cpu=_cpu_children() - cpu0, jobs=jobs)
    prog(f"linked {libname} (compile {manifest['t_compile_wall']:.1f}s wall, "
         f"{manifest['t_compile_cpu']:.1f}s CPU)")
    return manifest


# --- build (with cache) -----------------------------------------------------------------------------

def build(model, algorithms, out_dir=None, name: str | None = None, *, opt: str = "auto",
          cflags: Sequence[str] = (), native: bool = True, cse: bool = True,
          fast_trig: bool = True, cache: bool = True, cache_dir=None, cc: str | None = None,
          jobs: int | None = None, progress: bool | None | Callable = None, **options):
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
    processes. ``cache_dir`` overrides the cache location (default ``$SYMDYN_CACHE`` or
    ``~/.cache/symdyn``). With ``out_dir`` the sources and library are written there (no cache).
    ``name`` (default: model name) is the C prefix, sanitized into an identifier. ``opt``:
    ``"auto"`` (by function size, see the module docstring) or a gcc level such as ``"-O1"``;
    ``native`` adds ``-march=native`` (20-30 % faster code measured; the cache key records the
    CPU features, see :func:`native_target`); ``cflags`` are appended. ``progress``: see
    :class:`Progress`.
    """
    from .loader import load

    _check_opt(opt)
    from ..model import Model

    if not isinstance(model, Model):
        raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
    if model.is_symbolic:
        raise ValueError(f"model {model.name!r} has SymPy parameters; substitute numbers with "
                         "model.subs(...) before compiling")
    cflags = [str(f) for f in cflags]
    algs = normalize_algorithms(algorithms, options)
    prefix = c_identifier(name if name is not None else model.name)
    cc_path, cc_version = compiler_info(cc)
    prog = Progress(progress, prefix)
    t0 = time.perf_counter()

    def make(directory: Path) -> dict:
        manifest = generate_sources(model, dict(algs), directory, prefix, cse=cse,
                                    fast_trig=fast_trig, progress=prog)
        manifest = compile_library(directory, manifest, opt=opt, cflags=cflags, native=native,
                                   cc=cc_path, jobs=jobs, progress=prog)
        manifest["t_total"] = time.perf_counter() - t0
        return manifest

    if out_dir is not None or not cache:
        directory = Path(out_dir) if out_dir is not None else Path(
            tempfile.mkdtemp(prefix=f"symdyn-{prefix}-"))
        manifest = make(directory)
        manifest["key"] = None
        _cache.write_manifest(directory, manifest)
        return load(directory, cache_hit=False)

    key_data = {
        "format": FORMAT, "api": API_VERSION, "versions": _versions(),
        "model": _cache.model_fingerprint(model), "algorithms": algs, "prefix": prefix,
        "opt": opt, "auto": AUTO_POLICY, "cflags": cflags, "cse": bool(cse),
        "fast_trig": bool(fast_trig),
        "native": native_target(cc_path)[1] if native else None,
        "cc": [cc_path, cc_version], "platform": [sys.platform, platform.machine()],
    }
    key = _cache.build_key(key_data)
    root = Path(cache_dir) if cache_dir is not None else _cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    entry = root / key
    with _cache.lock(root, key):
        manifest, reason = _cache.verify(entry, key)
        if manifest is not None:
            log.info("cache hit %s (%s)", entry, prefix)
            return load(entry, cache_hit=True, verified=True)
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
    return load(entry, cache_hit=False)
