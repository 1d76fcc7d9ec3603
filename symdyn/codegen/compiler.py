"""Compiler driver: find the C compiler, choose flags, run compiler jobs in parallel, link.

Flags (``opt="auto"``): ``-O2`` for functions whose size (SX instructions plus output entries,
each output write being a branch in CasADi's code) is at most ``AUTO_O2_MAX_SIZE``, ``-Og`` above
it, plus ``-march=native`` by default. The recursive form always gets ``-O2``: its C is many
small kernels, whose -O2 build costs seconds more than -Og (not the superlinear growth of one
huge function) and runs 1.2-1.6x faster (``experiments/build_policy.py``,
reports/build_policy.md). gcc spends its time on straight-line code in register
allocation and per-basic-block passes, which grow faster than linearly with function size at
-O1/-O2, while -Og code is at most ~25 % slower there: the threshold buys faster mid-size
functions for a few seconds of build and keeps the largest (Gamma of a 20-DoF chain) within the
30 s build target. Functions are not split into chunks: it saved little build time and made the
code slower. ``experiments/bench_fastpath.py --sections flags,split`` measures all of this
(``reports/fastpath.md``).

The compiler is ``cc=`` if given, else ``$CC``, else the first of cc, gcc, clang on ``PATH``;
without one, :class:`BuildError` names what was looked for (only the compiled path needs a
compiler: CasADi functions and exported sources do not).
"""
from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

from ..progress import Progress, make_progress

AUTO_O2_MAX_SIZE = 32000   # -O2 up to here, -Og above (see the module docstring; reports/fastpath.md)
AUTO_POLICY = ("-O2", AUTO_O2_MAX_SIZE, "-Og", "recursive -O2")  # part of the cache key
OPT_LEVELS = ("auto", "-O0", "-O1", "-O2", "-O3", "-Og", "-Os")
DEFAULT_COMPILERS = ("cc", "gcc", "clang")


class BuildError(RuntimeError):
    """Code generation or compilation failed, or no C compiler was found (the message includes
    the compiler's output or what was looked for)."""


_CC_INFO: dict[str, tuple[str, str]] = {}


def compiler_info(cc: str | None = None) -> tuple[str, str]:
    """(path, version line) of the C compiler: ``cc`` argument, else ``$CC``, else the first of
    :data:`DEFAULT_COMPILERS` on ``PATH``. :class:`BuildError` naming what was looked for when
    none is found or it does not run."""
    if cc:
        candidates, origin = [cc], "cc"
    elif os.environ.get("CC"):
        candidates, origin = [os.environ["CC"]], "$CC"
    else:
        candidates, origin = list(DEFAULT_COMPILERS), "PATH"
    for c in candidates:
        words = c.split()
        path = shutil.which(words[0]) if words else None
        if path:
            break
    else:
        where = (f"{origin} = {candidates[0]!r}, which is not an executable" if origin != "PATH"
                 else f"looked for {', '.join(candidates)} on PATH")
        raise BuildError(f"no C compiler found ({where}); the compiled path (symdyn.codegen."
                         "build) needs one: install gcc or clang, or set $CC to a compiler")
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


def choose_opt(n_instructions: int, n_outputs: int = 0, opt: str = "auto",
               form: str = "unrolled") -> str:
    """The optimization flag for a function of ``n_instructions`` SX instructions writing
    ``n_outputs`` output entries, in ``form`` (the recursive form: always -O2)."""
    if opt != "auto":
        return opt
    small, limit, big, _ = AUTO_POLICY
    if form == "recursive":
        return small
    return small if n_instructions + n_outputs <= limit else big


def check_opt(opt: str) -> None:
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
    ``os.wait4`` exists (wall times mean little while other processes share the cores)."""
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


def run_compilers(jobs_list: list[dict], cc: str, directory: Path, jobs: int,
                   progress: Progress) -> None:
    """Compile each ``{"source", "object", "flags", "label"}`` in ``directory``, ``jobs`` at a
    time; records ``t_compile`` (wall) per unit; ``still compiling`` lines every
    ``progress.heartbeat`` seconds while waiting (5 s on a terminal, 10 s in a log)."""
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
        if running and time.perf_counter() - last_beat > progress.heartbeat:
            last_beat = time.perf_counter()
            names = ", ".join(f"{j['source']} ({time.perf_counter() - t0:.0f}s)"
                              for _, j, t0, _ in running)
            progress(f"still compiling {names}", slow=True)
    if failed:
        j, text = failed[0]
        raise BuildError(f"compilation failed: {j['command']}\n{text}")



def compile_library(directory, manifest: dict, *, opt: str = "auto",
                    cflags: Sequence[str] = (), native: bool = False, cc: str | None = None,
                    jobs: int | None = None,
                    progress: bool | None | Callable = None) -> dict:
    """Compile the sources described by ``manifest`` in ``directory`` into a shared library
    (a fresh file name per build, so a process never gets a stale ``dlopen`` handle). ``native``
    adds ``-march=native`` when the compiler supports it. Updates and returns the manifest
    (flags, wall and CPU compile times)."""
    check_opt(opt)
    directory = Path(directory)
    cc_path, cc_version = compiler_info(cc)
    prefix = manifest["prefix"]
    prog = make_progress(progress, f"codegen {prefix}")
    extra = (native_target(cc_path)[0] if native else []) + list(cflags)
    units = []
    for fd in manifest["functions"]:
        # unrolled code writes each output entry with its own instruction; the recursive form
        # copies the entries its kernels do not write in a loop (its code is the kernels)
        n_out = 0 if fd.get("form") == "recursive" else \
            sum(math.prod(sh) for sh in fd["output_shapes"])
        o = choose_opt(fd["n_instructions"], n_out, opt, fd.get("form", "unrolled"))
        fd["cflags"] = [o, *extra]
        units.append({"source": fd["source"], "object": fd["source"][:-2] + ".o",
                      "flags": fd["cflags"], "label": f"{fd['n_instructions']} instructions",
                      "weight": fd["n_instructions"], "fd": fd})
        if fd.get("simd_source"):   # the vector variants: same flags, a unit of their own
            units.append({"source": fd["simd_source"], "object": fd["simd_source"][:-2] + ".o",
                          "flags": fd["cflags"], "weight": fd["n_instructions"], "fd_simd": fd,
                          "label": f"vector variants, {fd['n_instructions']} instructions"})
        der = fd.get("derivatives")
        if der:      # CasADi's derivative entry points (casadi.external), one unit
            units.append({"source": der["source"], "object": der["source"][:-2] + ".o",
                          "flags": [choose_opt(der["n_instructions"], 0, opt), *extra],
                          "label": f"derivatives, {der['n_instructions']} instructions",
                          "weight": der["n_instructions"]})
    api = f"{prefix}_api.c"
    units.append({"source": api, "object": f"{prefix}_api.o", "flags": ["-O2", "-pthread", *extra],
                  "label": "wrapper", "weight": 0})
    jobs = jobs or max(1, min(len(units), os.cpu_count() or 1))
    cpu0, t0 = _cpu_children(), time.perf_counter()
    run_compilers(units, cc_path, directory, jobs, prog)
    for u in units:
        if "fd_simd" in u:
            u["fd_simd"]["t_compile_simd"] = u["t_compile"]
            if "cpu_compile" in u:
                u["fd_simd"]["cpu_compile_simd"] = u["cpu_compile"]
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
