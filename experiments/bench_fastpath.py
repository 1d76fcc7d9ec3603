"""Compiled fast path vs Pinocchio, per call from Python and batched per state -> reports/fastpath.md.

    python experiments/bench_fastpath.py                      # all sections (long: builds + flags)
    python experiments/bench_fastpath.py --sections calls --merge   # redo only the vs-Pinocchio tables
    python experiments/bench_fastpath.py --models serial:20 --algorithms rnea,crba --quick --out -

Sections (all by default): ``summary`` (the written discussion), ``overhead`` (ctypes vs cffi
call cost, casadi.Function call cost), ``gamma`` (Gamma of a 20-DoF serial chain generated and
compiled: the <= 30 s target), ``flags`` (compile CPU time and run time per gcc level),
``split`` (big functions cut into chunks vs CasADi's single function), ``calls`` (symdyn
compiled vs Pinocchio in the same process, axis-aligned builders, random-geometry models and
URDFs), ``batch`` (batches of large outputs: the C computation floor, the previous and the
current batch wrapper from a C driver, single calls vs ``.batch`` with 1 and 2 threads vs
Pinocchio), ``vector`` (vector batches against the scalar loop, and the share of the vector FMA
peak, measured in the same run, that each reaches), ``toolkit`` (compiled frame Jacobians, CoM
Jacobian and joint torque regressor vs Pinocchio's computeFrameJacobian, jacobianCenterOfMass,
computeJointTorqueRegressor),
``parameters`` (functions with the inertial parameters as an input vs the inertias compiled in,
on the toolkit models). ``--merge`` replaces only the regenerated sections of an existing
report (``--sections batch --merge``).

Batches are timed with explicit ``threads=`` (``threads=None`` picks by the work and the CPUs;
``_common`` pins ``$OMP_NUM_THREADS`` to 1, which that rule follows).

Timing: blocks of calls sized to ~20 ms, run round-robin so that compared functions see the same
machine load; per-call medians over the rounds and the medians of the per-round ratios.
Compile times are reported as the compiler's CPU time (wall time on a shared machine mostly
measures the other jobs).
"""
from __future__ import annotations

import argparse
import ctypes
import itertools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# first: pins BLAS to one thread before NumPy loads
from _common import block_size, pinocchio_gamma, table

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symdyn.codegen import ALGORITHMS, build, casadi_function  # noqa: E402
from symdyn.io.specs import from_spec  # noqa: E402
from provenance import report_provenance  # noqa: E402

DEFAULT_MODELS = ("serial:20,binary:20,biped:20,quadruped:20,robot:panda,robot:talos,"
                  "serial:20:seed=1,serial:40:seed=1,random:20:seed=1")
DEFAULT_ALGS = "rnea,crba,aba,coriolis_matrix,rnea_derivatives,aba_derivatives,christoffel"
TARGETS = {  # (per call, batched per state) ratio targets vs Pinocchio, from issue 5
    "rnea": (1.0, 0.25), "crba": (1.0, 0.25), "coriolis_matrix": (0.5, None),
    "christoffel": (0.15, None), "rnea_derivatives": (0.7, None),
}
CHRISTOFFEL_MAX_NV = 20   # Gamma has nv^3 entries: larger models take minutes to compile


# --- timing --------------------------------------------------------------------------------------------

def _block_size(fn, target=0.02) -> int:
    return block_size(fn, target)[0]


def _block(fn, n) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def interleaved(fns, repeat: int) -> list[list[float]]:
    """Per-call times of each function over ``repeat`` rounds, blocks run round-robin so all
    functions see the same machine load."""
    ns = [_block_size(f) for f in fns]
    times = [[] for _ in fns]
    for _ in range(repeat):
        for f, n, t in zip(fns, ns, times):
            t.append(_block(f, n))
    return times


def interleaved_cpu(fns, repeat: int) -> tuple[list[list[float]], list[list[float]]]:
    """As :func:`interleaved`, returning (wall, thread CPU) per-call times: the CPU time of the
    calling thread leaves out the time the scheduler gave to other jobs (meaningful for work
    done on the calling thread only)."""
    ns = [_block_size(f) for f in fns]
    wall, cpu = [[] for _ in fns], [[] for _ in fns]
    for _ in range(repeat):
        for f, n, w, c in zip(fns, ns, wall, cpu):
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(n):
                f()
            c.append((time.thread_time() - c0) / n)
            w.append((time.perf_counter() - t0) / n)
    return wall, cpu


def median_time(fn, repeat: int) -> float:
    n = _block_size(fn)
    return statistics.median(_block(fn, n) for _ in range(repeat))


def us(t: float) -> str:
    return f"{t * 1e6:.3g}" if t < 1e-3 else f"{t * 1e6:.0f}"


# --- Pinocchio -----------------------------------------------------------------------------------------

def pinocchio_setup(spec: str, model):
    """(pin model, pin data, state in Pinocchio's ordering, how it was built)."""
    import pinocchio as pin

    from symdyn.interop.pinocchio import q_to_pin, to_pinocchio, v_to_pin

    rng = np.random.default_rng(0)
    if spec.startswith("robot:"):
        from symdyn.io.robots import ROBOTS, robot_urdf

        name = spec.split(":", 1)[1]
        path = str(robot_urdf(name))
        if ROBOTS[name].floating_base:
            pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            pm = pin.buildModelFromUrdf(path)
        q = pin.integrate(pm, pin.neutral(pm), rng.uniform(-1, 1, pm.nv))
        how = "pinocchio.buildModelFromUrdf"
    else:
        pm = to_pinocchio(model)
        q = q_to_pin(model, model.random_q(rng))
        how = "symdyn.interop.pinocchio.to_pinocchio"
    v, a = rng.uniform(-1, 1, pm.nv), rng.uniform(-1, 1, pm.nv)
    return pm, pm.createData(), (q, v, a), how


def pinocchio_calls(pm, pd, state):
    import pinocchio as pin

    q, v, a = state
    gamma = pinocchio_gamma(pm, pd, q)

    return {
        "rnea": ("rnea", lambda: pin.rnea(pm, pd, q, v, a)),
        "crba": ("crba", lambda: pin.crba(pm, pd, q)),
        "aba": ("aba", lambda: pin.aba(pm, pd, q, v, a)),
        "coriolis_matrix": ("computeCoriolisMatrix", lambda: pin.computeCoriolisMatrix(pm, pd, q, v)),
        "rnea_derivatives": ("computeRNEADerivatives",
                             lambda: pin.computeRNEADerivatives(pm, pd, q, v, a)),
        "aba_derivatives": ("computeABADerivatives",
                            lambda: pin.computeABADerivatives(pm, pd, q, v, a)),
        "christoffel": ("nv x computeCoriolisMatrix(q, e_k)", gamma),
    }


# --- sections ----------------------------------------------------------------------------------------

def section_overhead(repeat: int) -> list[str]:
    """Cost of one C call through ctypes (CDLL/PyDLL) and cffi (ABI, API), and of casadi.Function."""
    import cffi

    src = "int noop(void* ctx) { return ctx == 0; }\n"
    out = ["## Call overhead of the binding (one pointer argument, C function does nothing)", "",
           "| binding | per call (us) |", "|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        c, so = Path(d, "noop.c"), Path(d, "libnoop.so")
        c.write_text(src)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(c), "-o", str(so)], check=True)
        buf = (ctypes.c_void_p * 4)()
        ptr = ctypes.addressof(buf)
        cands = []
        for kind in (ctypes.CDLL, ctypes.PyDLL):
            fn = kind(str(so)).noop
            fn.argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int
            cands.append((f"ctypes.{kind.__name__} (argtypes set)", lambda fn=fn: fn(ptr)))
        ffi = cffi.FFI()
        ffi.cdef("int noop(void*);")
        lib = ffi.dlopen(str(so))
        cp = ffi.cast("void*", ptr)
        cands.append(("cffi ABI mode (dlopen)", lambda: lib.noop(cp)))
        try:
            api = cffi.FFI()
            api.cdef("int noop(void*);")
            api.set_source("_symdyn_noop", src)
            api.compile(tmpdir=d, verbose=False)
            sys.path.insert(0, d)
            import _symdyn_noop  # type: ignore

            cp2 = _symdyn_noop.ffi.cast("void*", ptr)
            cands.append(("cffi API mode (compiled CPython extension)",
                          lambda: _symdyn_noop.lib.noop(cp2)))
        except Exception as exc:  # noqa: BLE001 - report what failed
            out.append(f"(cffi API mode not measured: {type(exc).__name__}: {exc})")
        from symdyn.codegen import fastcall

        fc = fastcall.module()
        if fc is not None:   # symdyn's single-call path: one float64 input, no outputs
            noop = ctypes.CDLL(str(so)).noop
            fn_addr = ctypes.cast(noop, ctypes.c_void_p).value
            caller = fc.Function()
            caller._attach(fn_addr, 1, 0, 0, 0, 0, (1,), (), lambda *a: None, True)
            x = np.zeros(1)
            cands.append(("symdyn fastcall extension (one float64 array, no outputs)",
                          lambda: caller(x)))
        else:
            out.append(f"(symdyn's fastcall extension not measured: {fastcall.status()})")
        times = interleaved([f for _, f in cands], 3 * repeat)
    out += [f"| {n} | {statistics.median(t) * 1e6:.3f} |" for (n, _), t in zip(cands, times)]
    out += ["", "symdyn's single calls go through its fastcall extension (symdyn/codegen/"
            "fastcall.py: one CPython extension type compiled once per Python and NumPy, not "
            "per build, the base type of compiled functions; it takes C-contiguous float64 "
            "arrays as they are and returns fresh result arrays the C code wrote); other calls "
            "convert their inputs in Python first. Where the extension cannot be built, calls "
            "go through `ctypes.PyDLL` (GIL kept), with inputs as `tobytes` copies. `.batch` "
            "calls through `ctypes.CDLL` (GIL released, so other Python threads run).", ""]
    return out


def section_gamma(repeat: int) -> list[str]:
    """Gamma of serial:20, generated and compiled with the default (auto) flags, cache off."""
    model = from_spec("serial:20")
    t0 = time.perf_counter()
    lib = build(model, ["christoffel"], cache=False, progress=True)
    wall = time.perf_counter() - t0
    st = lib.stats["functions"]["christoffel"]
    fd = next(d for d in lib.manifest["functions"] if d["algorithm"] == "christoffel")
    form = f"{fd.get('form', 'unrolled')} form ({fd.get('form_reason', 'the only form')})"
    q = model.random_q(np.random.default_rng(0))
    ref = __import__("symdyn.algorithms.christoffel", fromlist=["x"]).christoffel(model, q)
    err = float(np.abs(lib.christoffel(q) - ref).max() / max(1, np.abs(ref).max()))
    t_call = median_time(lambda: lib.christoffel(q), repeat)
    out = ["## Gamma of a 20-DoF serial chain: generated and compiled (target <= 30 s)", "",
           f"Command: `build(from_spec('serial:20'), ['christoffel'], cache=False)` (opt auto -> "
           f"{' '.join(st['cflags'])}; {form}).", "",
           "| step | time |", "|---|---|",
           f"| trace Alg. 2 with CasADi SX | {st['t_trace']:.2f} s |",
           f"| casadi.Function with cse | {st['t_function']:.2f} s |",
           f"| C generation ({st['source_bytes'] / 1e6:.1f} MB) | {st['t_generate']:.2f} s |",
           f"| gcc {' '.join(st['cflags'])} (CPU) | {st.get('cpu_compile', float('nan')):.1f} s |",
           f"| gcc (wall, machine shared) | {st['t_compile']:.1f} s |",
           f"| **total build (wall)** | **{wall:.1f} s** |", "",
           f"SX graph: {st['n_nodes']} nodes, {st['n_instructions']} instructions. Compiled "
           f"Gamma (8000 entries) per call from Python: {us(t_call)} us; max relative "
           f"difference to NumPy: {err:.1e}.", ""]
    return out


def section_flags(spec: str, algs: list[str], levels: list[str], repeat: int) -> list[str]:
    """Compile CPU time and run time per optimization level (cache off, one build per level)."""
    model = from_spec(spec)
    rng = np.random.default_rng(1)
    B = 200
    data = {"q": np.array([model.random_q(rng) for _ in range(B)]),
            "qd": rng.uniform(-1, 1, (B, model.nv)), "qdd": rng.uniform(-1, 1, (B, model.nv)),
            "tau": rng.uniform(-1, 1, (B, model.nv))}
    rows = {}
    sizes = {alg: casadi_function(model, alg, layout="numpy").n_instructions() for alg in algs}
    for level in levels:
        opt, *extra = level.split()
        for alg in algs:
            if sizes[alg] > 50000 and opt in ("-O2", "-O3"):
                rows[alg, level] = (sizes[alg], np.nan, np.nan)  # > 90 s CPU: not run
                continue
            lib = build(model, [alg], opt=opt, cflags=extra, native=False, cache=False,
                        progress=False, form="unrolled")
            f = lib[alg]
            ins = [data[n] for n in f.input_names]
            t = median_time(lambda: f.batch(*ins, threads=1), repeat) / B
            rows[alg, level] = (f.stats["n_instructions"], f.stats.get("cpu_compile", np.nan), t)
            print(f"flags {spec} {alg} {level}: cpu {rows[alg, level][1]:.1f}s, "
                  f"{t * 1e6:.3g} us/state", file=sys.stderr, flush=True)
    out = [f"## Compiler flags on {spec}: gcc CPU time (s) / run time per state (us, batched)", "",
           "The unrolled form (`build(..., form=\"unrolled\")`: one straight-line function), "
           "batched over 200 states, one thread.", "",
           "| algorithm | SX instructions | " + " | ".join(levels) + " |",
           "|---|---|" + "---|" * len(levels)]
    for alg in algs:
        n = rows[alg, levels[0]][0]
        cells = [f"{rows[alg, lv][1]:.1f} / {rows[alg, lv][2] * 1e6:.3g}"
                 if np.isfinite(rows[alg, lv][1]) else "not run (> 90 s CPU)" for lv in levels]
        out.append(f"| {alg} | {n} | " + " | ".join(cells) + " |")
    out.append("")
    return out


_C_OPS = {1: "{0}+{1}", 2: "{0}-{1}", 3: "{0}*{1}", 4: "{0}/{1}", 5: "-{0}", 10: "sqrt({0})",
          11: "{0}*{0}", 12: "2.*{0}", 13: "sin({0})", 14: "cos({0})", 36: "1./{0}", 0: "{0}"}
_BINARY = {1, 2, 3, 4}


def split_source(f, name: str, chunk: int) -> str:
    """C for an SX Function with its instruction list cut into static functions of ``chunk``
    instructions: values crossing a cut go through the work vector w, the rest stay in locals.
    Signature ``int name(const double** arg, double** res, double* w)``. Experiment only."""
    import casadi as ca

    n = f.n_instructions()
    ops = [f.instruction_id(k) for k in range(n)]
    ins = [f.instruction_input(k) for k in range(n)]
    outs = [f.instruction_output(k) for k in range(n)]
    nch = (n + chunk - 1) // chunk
    written, touched = [set() for _ in range(nch)], [set() for _ in range(nch)]
    live_in, live_out, last = [set() for _ in range(nch)], [set() for _ in range(nch)], {}
    for k in range(n):
        c, op = k // chunk, ops[k]
        if op not in _C_OPS and op not in (ca.OP_INPUT, ca.OP_OUTPUT, ca.OP_CONST):
            raise NotImplementedError(f"operation {op}")
        if op in (ca.OP_INPUT, ca.OP_CONST):
            reads = []
        elif op == ca.OP_OUTPUT:
            reads = [ins[k][0]]
        else:
            reads = ins[k][:2 if op in _BINARY else 1]
        for s in reads:
            touched[c].add(s)
            if s not in written[c]:
                live_in[c].add(s)
            if last.get(s, c) != c:
                live_out[last[s]].add(s)
        if op != ca.OP_OUTPUT:
            s = outs[k][0]
            written[c].add(s)
            touched[c].add(s)
            last[s] = c
    L = ["#include <math.h>"]
    for c in range(nch):
        L.append(f"static void {name}_p{c}(const double** arg, double** res, double* w) {{")
        t = sorted(touched[c])
        L += ["  double " + ", ".join(f"a{s}" for s in t[i:i + 16]) + ";" for i in range(0, len(t), 16)]
        L += [f"  a{s}=w[{s}];" for s in sorted(live_in[c])]
        for k in range(c * chunk, min(n, (c + 1) * chunk)):
            op, i, o = ops[k], ins[k], outs[k]
            if op == ca.OP_INPUT:
                L.append(f"  a{o[0]}=arg[{i[0]}][{i[1]}];")
            elif op == ca.OP_OUTPUT:
                L.append(f"  res[{o[0]}][{o[1]}]=a{i[0]};")
            elif op == ca.OP_CONST:
                L.append(f"  a{o[0]}={float(f.instruction_constant(k))!r};")
            else:
                L.append(f"  a{o[0]}=" + _C_OPS[op].format(*[f"a{s}" for s in i]) + ";")
        L += [f"  w[{s}]=a{s};" for s in sorted(live_out[c])]
        L.append("}")
    L.append(f"int {name}(const double** arg, double** res, double* w) {{")
    L += [f"  {name}_p{c}(arg, res, w);" for c in range(nch)]
    L.append("  return 0;\n}")
    return "\n".join(L) + "\n"


def section_split(spec: str, algs: list[str], variants: list[str], repeat: int) -> list[str]:
    """CasADi's single C function vs the instruction list split into chunks (compile CPU, run)."""
    import casadi as ca
    import resource

    model = from_spec(spec)
    rows = []
    for alg in algs:
        f = casadi_function(model, alg, layout="numpy", name="F")
        rng = np.random.default_rng(0)
        ins = [rng.uniform(-1, 1, f.nnz_in(i)) for i in range(f.n_in())]
        outs = [np.empty(f.nnz_out(i)) for i in range(f.n_out())]
        ref = f.call(ins)
        w = np.empty(f.sz_w() + 1)
        iw = np.empty(f.sz_iw() + 1, dtype=np.int64)
        arg = (ctypes.c_void_p * (f.sz_arg() + 1))(*[x.ctypes.data for x in ins])
        res = (ctypes.c_void_p * (f.sz_res() + 1))(*[o.ctypes.data for o in outs])
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            os.chdir(d)
            try:
                cg = ca.CodeGenerator("cas.c")
                cg.add(f)
                cg.generate()
            finally:
                os.chdir(cwd)
            for v in variants:
                kind, flags = v.split(":")
                src = Path(d, "cas.c") if kind == "casadi" else Path(d, f"split{kind}.c")
                if kind != "casadi":
                    src.write_text(split_source(f, "F", int(kind)))
                so = Path(d, f"{kind}{abs(hash(flags))}.so")
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(["cc", *flags.split(), "-fPIC", "-shared", str(src), "-o", str(so),
                                "-lm"], check=True)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
                fn = ctypes.CDLL(str(so)).F
                if kind == "casadi":
                    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int]
                    pw, piw = w.ctypes.data, iw.ctypes.data
                    call = (lambda fn=fn, pw=pw, piw=piw: fn(arg, res, piw, pw, 0))
                else:
                    fn.argtypes = [ctypes.c_void_p] * 3
                    pw = w.ctypes.data
                    call = (lambda fn=fn, pw=pw: fn(arg, res, pw))
                call()
                err = max(float(np.abs(o - np.asarray(r).ravel(order="F")).max())
                          for o, r in zip(outs, ref))
                rows.append((alg, f.n_instructions(), kind, flags, cpu,
                             median_time(call, repeat), err))
                print(f"split {alg} {kind} {flags}: cpu {cpu:.1f}s", file=sys.stderr, flush=True)
    out = [f"## Splitting big functions ({spec}): CasADi's one C function vs chunks", "",
           "Chunks of K instructions become static C functions; values crossing a cut are "
           "stored in the work vector (`split_source` in this script). Run time via ctypes "
           "(includes ~0.2 us call cost).", "",
           "| algorithm | SX instructions | code | flags | gcc CPU s | run us | max diff |",
           "|---|---|---|---|---|---|---|"]
    for alg, n, kind, flags, cpu, t, err in rows:
        code = "CasADi (one function)" if kind == "casadi" else f"split, K = {kind}"
        out.append(f"| {alg} | {n} | {code} | {flags} | {cpu:.1f} | {us(t)} | {err:.0e} |")
    out.append("")
    return out


def section_calls(specs: list[str], algs: list[str], repeat: int, batch: int) -> list[str]:
    """symdyn compiled vs Pinocchio, per call and batched per state."""
    rows, builds, notes = [], [], []
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for spec in specs:
        model = from_spec(spec)
        use = [a for a in algs if not (a == "christoffel" and model.nv > CHRISTOFFEL_MAX_NV)]
        if len(use) < len(algs):
            notes.append(f"{spec}: christoffel skipped (nv = {model.nv} > {CHRISTOFFEL_MAX_NV}: "
                         f"Gamma has {model.nv ** 3} entries)")
        t0 = time.perf_counter()
        lib = build(model, use, progress=True)
        builds.append((spec, model, lib, time.perf_counter() - t0))
        pm, pd, pstate, how = pinocchio_setup(spec, model)
        pcalls = pinocchio_calls(pm, pd, pstate)
        rng = np.random.default_rng(2)
        st = {"q": model.random_q(rng), "qd": rng.uniform(-1, 1, model.nv),
              "qdd": rng.uniform(-1, 1, model.nv), "tau": rng.uniform(-1, 1, model.nv)}
        Bst = {"q": np.array([model.random_q(rng) for _ in range(batch)]),
               "qd": rng.uniform(-1, 1, (batch, model.nv)),
               "qdd": rng.uniform(-1, 1, (batch, model.nv)),
               "tau": rng.uniform(-1, 1, (batch, model.nv))}
        for alg in use:
            f = lib[alg]
            ins = [st[n] for n in f.input_names]
            res = f(*ins)
            ref = ALGORITHMS[alg].resolve()(model, *ins)
            res = res if isinstance(res, tuple) else (res,)
            ref = ref if isinstance(ref, tuple) else (ref,)
            err = max(float(np.abs(r - np.asarray(x)).max() / max(1, np.abs(x).max()))
                      for r, x in zip(res, ref))
            pname, pfn = pcalls[alg]
            bins = [Bst[n] for n in f.input_names]
            outs = tuple(np.empty((batch, *sh)) for sh in f.output_shapes)
            bout = outs if len(outs) > 1 else outs[0]
            # all four in one round-robin, so that every ratio compares blocks run back to back
            t_s, t_p, t_b, t_b2 = interleaved(
                [lambda: f(*ins), pfn, lambda: f.batch(*bins, out=bout, threads=1),
                 lambda: f.batch(*bins, out=bout, threads=2)], repeat)
            med = statistics.median
            ts, tp, tb, tb2 = med(t_s), med(t_p), med(t_b) / batch, med(t_b2) / batch
            ratio = med(a / b for a, b in zip(t_s, t_p))
            bratio = med(a / batch / b for a, b in zip(t_b, t_p))
            mins = (min(t_s) / min(t_p), min(t_b) / batch / min(t_p))  # least disturbed blocks
            rows.append((spec, model.nv, alg, pname, ts, tp, ratio, tb, tb2, bratio, err, mins,
                         _kind(spec)))
            print(f"{spec} {alg}: symdyn {ts * 1e6:.3g} us, pin {tp * 1e6:.3g} us, ratio "
                  f"{ratio:.2f}, batch {tb * 1e6:.3g} us/state", file=sys.stderr, flush=True)
    out = ["## symdyn compiled vs Pinocchio (same process)", "",
           "Per call: `lib.<alg>(q, ...)` from Python (through the fastcall extension: the C code "
           "reads the input arrays and writes fresh result arrays owned by the caller) vs the "
           "Pinocchio Python call. Batched: `lib.<alg>.batch(Q, ..., out=preallocated)` over "
           f"{batch} states, per state, 1 and 2 threads (without `out=`, fresh multi-MB result "
           "arrays add page-fault time comparable to the computation, e.g. +11 us/state for "
           "talos' Coriolis matrix); its ratio is against Pinocchio's "
           "per-call time (Pinocchio has no batched Python API). The four measurements run "
           "round-robin in blocks of ~20 ms; times are medians over the rounds, ratios the "
           "medians of the per-round ratios (< 1: symdyn faster); the ratios of the minima over "
           "the rounds (least disturbed blocks) are given as a less load-sensitive estimate. "
           "Targets from issue 5 in brackets; ok/MISS marks them (on the medians). "
           f"Load average at the start of this section: {load0:.1f} (2 cores).", "",
           "*kind*: `axis-aligned builder` (serial:N, binary:N, biped:N, quadruped:N without a "
           "seed: unit joint axes and tree rotations, the favourable case for generated code), "
           "`random geometry` (`serial:N:seed=S` = `serial_chain(N, seed=S)`, `random:N:seed=S` "
           "= a random branched tree: random axes, rotations, offsets and inertias) or `URDF` "
           "(real robots; their tree rotations are mostly axis-aligned, see the batch section).",
           "",
           "| model | kind | nv | algorithm | Pinocchio routine | symdyn us/call | Pinocchio us/call | "
           "ratio [target] | batch us/state (1 thr / 2 thr) | batch ratio [target] | "
           "ratios of minima (call / batch) | max rel. diff vs NumPy |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec, nv, alg, pname, ts, tp, ratio, tb, tb2, bratio, err, mins, kind in rows:
        tc, tbt = TARGETS.get(alg, (None, None))
        mark = (lambda r, t: f"{r:.2f}" if t is None else
                f"{r:.2f} [{t}] {'ok' if r <= t else 'MISS'}")
        out.append(f"| {spec} | {kind} | {nv} | {alg} | {pname} | {us(ts)} | {us(tp)} | "
                   f"{mark(ratio, tc)} | {us(tb)} / {us(tb2)} | {mark(bratio, tbt)} | "
                   f"{mins[0]:.2f} / {mins[1]:.2f} | {err:.1e} |")
    out += ["", "Pinocchio models: built-in specs via `symdyn.interop.pinocchio.to_pinocchio`; "
            "robots via `pinocchio.buildModelFromUrdf` (free-flyer root for talos).", ""]
    out += [f"- {n}" for n in notes]
    out += ["", "### Builds (cache off for the first build of each model; auto flags)", "",
            "| model | nv | algorithm | form | SX nodes | SX instructions | flags | gcc CPU s | "
            "gcc wall s | build wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for spec, model, lib, wall in builds:
        forms = {d.get("key", d["algorithm"]): d.get("form", "unrolled")
                 for d in lib.manifest["functions"]}
        for alg, s in lib.stats["functions"].items():
            out.append(f"| {spec} | {model.nv} | {alg} | {forms.get(alg, '?')} | {s['n_nodes']} | "
                       f"{s['n_instructions']} | "
                       f"{' '.join(s.get('cflags', []))} | {s.get('cpu_compile', float('nan')):.1f} "
                       f"| {s.get('t_compile', float('nan')):.1f} | "
                       f"{'cache hit' if lib.cache_hit else f'{wall:.0f}'} |")
    out.append("")
    return out

# --- batches with large outputs -----------------------------------------------------------------------

BATCH_MODELS = "robot:baxter,robot:g1,robot:talos,serial:20:seed=1,serial:40:seed=1,random:20:seed=1"
BATCH_ALGS = "crba,coriolis_matrix,rnea_derivatives,aba_derivatives,christoffel"

# A C driver over the generated functions (dlopen'ed library, function pointers from ctypes):
# per state, one thread, round-robin over the modes, medians over rounds.
#   0 floor: F alone, inputs of state i, outputs into one scratch block that stays in L1
#   1 api3: the previous wrapper's loop (API version 3): in place below 8 MiB of outputs, else F
#     into scratch and each state's block copied out with 16-byte streaming stores
#   2 F_batch (automatic rule), 3 F_batch_write(in place), 4 F_batch_write(streamed)
# Each mode writes its own output arrays (a reused `out`, as in a loop of batches).
_BATCH_DRIVER = r"""
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
typedef int (*fn_t)(const double**, double**, long long*, double*, int);
typedef int (*bw_t)(const double* const*, double* const*, long long, int, int, long long*);
/* CPU time of the calling thread: every mode runs on it (F_batch_write with one thread too),
 * so the time the scheduler gives other jobs on a shared machine is left out */
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec; }
static int nonfinite(const double* x, long long n) { long long i;
  for (i = 0; i < n; ++i) if (!isfinite(x[i])) return 1; return 0; }
static void copy16(double* dst, const double* src, long long n) {
#if defined(__SSE2__)
  long long i = 0;
  if (((uintptr_t)dst & 15) && n > 0) { dst[0] = src[0]; i = 1; }
  for (; i + 2 <= n; i += 2) _mm_stream_pd(dst + i, _mm_loadu_pd(src + i));
  for (; i < n; ++i) dst[i] = src[i];
#else
  memcpy(dst, src, 8 * n);
#endif
}
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y; }
/* med[m], lo[m] = median and minimum over rounds of the seconds per state of mode m */
int bench(fn_t F, bw_t BW, int n_in, const long long* nin, int n_out, const long long* nout,
          long long sz_arg, long long sz_res, long long sz_iw, long long sz_w,
          const double** in, double** outs, long long n, int reps, double* med, double* lo) {
  const double** arg = calloc(sz_arg + 1, sizeof(void*));
  double** res = calloc(sz_res + 1, sizeof(void*));
  long long* iw = malloc(8 * (sz_iw + 1));
  double* w = malloc(8 * (sz_w + 1));
  long long n_all = 0, i, off, bad[2];
  double *scratch, *t = malloc(sizeof(double) * 5 * reps);
  int k, m, r, stream3;
  for (k = 0; k < n_out; ++k) n_all += nout[k];
  scratch = malloc(8 * (n_all + 1));
  stream3 = (double)n * n_all * 8 >= 8.0 * 1024 * 1024;
  for (r = 0; r < reps; ++r) for (m = 0; m < 5; ++m) {
    double* const* out = outs + m * n_out;
    double t0 = now();
    if (m == 0 || m == 1) {
      for (i = 0; i < n; ++i) {
        int ok = 1;
        for (k = 0; k < n_in; ++k) { arg[k] = in[k] + i * nin[k]; if (m == 1 && nonfinite(arg[k], nin[k])) ok = 0; }
        for (k = 0, off = 0; k < n_out; off += nout[k], ++k)
          res[k] = (m == 1 && !stream3) ? out[k] + i * nout[k] : scratch + off;
        if (ok && F(arg, res, iw, w, 0)) return -1;
        if (m == 1 && stream3) for (k = 0; k < n_out; ++k) copy16(out[k] + i * nout[k], res[k], nout[k]);
      }
#if defined(__SSE2__)
      _mm_sfence();
#endif
    } else if (BW((const double* const*)in, out, n, 1, m == 2 ? -1 : m == 3 ? 0 : 1, bad) < 0) {
      return -1;
    }
    t[m * reps + r] = (now() - t0) / n;
  }
  for (m = 0; m < 5; ++m) {
    qsort(t + m * reps, reps, sizeof(double), cmp);
    med[m] = t[m * reps + reps / 2];
    lo[m] = t[m * reps];
  }
  free(arg); free(res); free(iw); free(w); free(scratch); free(t);
  return 0;
}
"""


def _batch_driver(tmp: str):
    """The C driver above, compiled (cc -O2 -march=native, as the generated code) and loaded."""
    c, so = Path(tmp, "batch_driver.c"), Path(tmp, "libbatch_driver.so")
    c.write_text(_BATCH_DRIVER)
    subprocess.run(["cc", "-O2", "-march=native", "-shared", "-fPIC", str(c), "-o", str(so), "-lm"],
                   check=True)
    lib = ctypes.CDLL(str(so))
    lib.bench.restype = ctypes.c_int
    return lib


def _c_floor(driver, lib, f, ins: list, n: int, reps: int, budget: float = 4.0):
    """Seconds per state of the driver's modes for compiled function ``f`` of build ``lib`` over
    the ``n`` states ``ins`` (C-contiguous float64 arrays): (medians, minima) over rounds, at
    least ``reps`` rounds and more (up to 41) while they fit in ``budget`` seconds."""
    so = ctypes.CDLL(str(lib.library))
    F = ctypes.cast(getattr(so, f.symbol), ctypes.c_void_p)
    BW = ctypes.cast(getattr(so, f"{f.symbol}_batch_write"), ctypes.c_void_p)
    ll = ctypes.c_longlong
    nin = (ll * len(ins))(*[a.shape[1] for a in ins])
    sizes = [int(np.prod(s)) for s in f.output_shapes]
    nout = (ll * len(sizes))(*sizes)
    outs = [np.zeros((n, k)) for _ in range(5) for k in sizes]
    pin = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
    pout = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
    med, lo = (ctypes.c_double * 5)(), (ctypes.c_double * 5)()

    def run(r):
        if driver.bench(F, BW, len(ins), nin, len(sizes), nout, ll(f._sz_arg), ll(f._sz_res),
                        ll(f._sz_iw), ll(f._sz_w), pin, pout, ll(n), r, med, lo):
            raise RuntimeError(f"batch driver failed on {f.name}")

    t0 = time.perf_counter()
    run(1)                                       # also first-touches every output array
    one = time.perf_counter() - t0
    run(int(min(41, max(reps, budget / max(one, 1e-9)))))
    return list(med), list(lo)


def _kind(spec: str) -> str:
    """Which kind of geometry a spec has: builders without a seed are axis-aligned by
    construction (the favourable case for generated code), seeded builders and random: trees
    have random geometry, robots are real URDFs."""
    if spec.startswith("robot:") or spec.endswith(".urdf"):
        return "URDF"
    if spec.startswith("random:") or ":seed=" in spec:
        return "random geometry"
    return "axis-aligned builder"


SINGLE_STATES = 64   # states the single calls of the batch section cycle through


def _pinocchio_states(spec: str, model, pm, n: int = SINGLE_STATES) -> list:
    """n random states (q, v, a) in Pinocchio's ordering (as :func:`pinocchio_setup` makes one)."""
    import pinocchio as pin

    from symdyn.interop.pinocchio import q_to_pin

    rng = np.random.default_rng(6)
    out = []
    for _ in range(n):
        if spec.startswith("robot:"):
            q = pin.integrate(pm, pin.neutral(pm), rng.uniform(-1, 1, pm.nv))
        else:
            q = q_to_pin(model, model.random_q(rng))
        out.append((q, rng.uniform(-1, 1, pm.nv), rng.uniform(-1, 1, pm.nv)))
    return out


def section_batch(specs: list[str], algs: list[str], repeat: int, batch: int) -> list[str]:
    """Batches of large outputs: per state, the C computation floor, the previous wrapper and
    the new one (C driver), single calls vs .batch with 1 and 2 threads vs Pinocchio (Python)."""
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    crow, prow, models, notes = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        driver = _batch_driver(tmp)
        for spec in specs:
            model = from_spec(spec)
            use = [a for a in algs if not (a == "christoffel" and model.nv > CHRISTOFFEL_MAX_NV)]
            if len(use) < len(algs):
                notes.append(f"{spec}: christoffel skipped (nv = {model.nv} > "
                             f"{CHRISTOFFEL_MAX_NV})")
            lib = build(model, use, progress=True)
            pm, pd, _, how = pinocchio_setup(spec, model)
            # single calls (symdyn and Pinocchio) go through SINGLE_STATES different states in
            # turn, as a loop over a batch would (measured as fast as one state over and over)
            pcalls = [pinocchio_calls(pm, pd, s) for s in _pinocchio_states(spec, model, pm)]
            models.append((spec, model.nv, _kind(spec), _geometry(model), how))
            rng = np.random.default_rng(5)
            Bst = {"q": np.array([model.random_q(rng) for _ in range(batch)]),
                   "qd": rng.uniform(-1, 1, (batch, model.nv)),
                   "qdd": rng.uniform(-1, 1, (batch, model.nv)),
                   "tau": rng.uniform(-1, 1, (batch, model.nv))}
            forms = {d.get("key", d["algorithm"]): d.get("form", "unrolled")
                     for d in lib.manifest["functions"]}
            for alg in use:
                f = lib[alg]
                bins = [np.ascontiguousarray(Bst[n]) for n in f.input_names]
                rows = itertools.cycle([tuple(x[i] for x in bins) for i in range(SINGLE_STATES)])
                pfns = itertools.cycle([pc[alg][1] for pc in pcalls])
                pname = pcalls[0][alg][0]
                kept = tuple(np.empty((batch, *sh)) for sh in f.output_shapes)
                kept_rows = itertools.cycle([
                    (tuple(x[i] for x in bins),
                     kept[0][i] if len(kept) == 1 else tuple(o[i] for o in kept))
                    for i in range(batch)])

                def single_kept():
                    x, o = next(kept_rows)
                    f(*x, out=o)

                kb = sum(int(np.prod(s)) for s in f.output_shapes) * 8 / 1e3
                c, cmin = _c_floor(driver, lib, f, bins, batch, max(7, repeat // 2))
                outs = tuple(np.empty((batch, *sh)) for sh in f.output_shapes)
                bout = outs if len(outs) > 1 else outs[0]
                (t_s, t_k, t_b, t_b2, t_p), (c_s, c_k, c_b, _, c_p) = interleaved_cpu(
                    [lambda: f(*next(rows)), single_kept,
                     lambda: f.batch(*bins, out=bout, threads=1),
                     lambda: f.batch(*bins, out=bout, threads=2), lambda: next(pfns)()], repeat)
                med = statistics.median
                rcpu = (med(b / batch / a for a, b in zip(c_s, c_b)),
                        med(b / batch / a for a, b in zip(c_k, c_b)),
                        med(b / batch / p for p, b in zip(c_p, c_b)))
                ts, tk, tb, tb2, tp = (med(t_s), med(t_k), med(t_b) / batch, med(t_b2) / batch,
                                       med(t_p))
                r = (med(b / batch / a for a, b in zip(t_s, t_b)),
                     med(b / batch / a for a, b in zip(t_s, t_b2)),
                     med(b / batch / a for a, b in zip(t_k, t_b)),
                     med(b / batch / p for p, b in zip(t_p, t_b)),
                     med(b / batch / p for p, b in zip(t_p, t_b2)))
                crow.append((spec, model.nv, f"{alg} ({forms.get(alg, '?')})", kb, *c, *cmin))
                prow.append((spec, model.nv, alg, pname, kb, c[0], ts, tk, tb, tb2, tp, *r,
                             *rcpu))
                print(f"batch {spec} {alg}: {kb:.1f} kB, floor {c[0] * 1e6:.3g}, api3 "
                      f"{c[1] * 1e6:.3g}, now {c[2] * 1e6:.3g} us/state; single {ts * 1e6:.3g}, "
                      f"batch {tb * 1e6:.3g} / {tb2 * 1e6:.3g} (2 thr), pin {tp * 1e6:.3g}",
                      file=sys.stderr, flush=True)
    out = ["## Batches with large outputs: per state, single calls vs batch vs Pinocchio", "",
           f"States: {batch} per batch (outputs of 3-60 MB in all), random states; "
           f"load average at the start of this section: {load0:.1f} (2 cores shared with "
           "other jobs: the 2-thread figures depend on the other core being free).", "",
           "| model | nv | kind | tree rotations | Pinocchio model |", "|---|---|---|---|---|"]
    out += [f"| {s} | {nv} | {k} | {g.split(': ')[-1]} | {h} |" for s, nv, k, g, h in models]
    out += ["", "Axis-aligned builders (`serial:N`, `binary:N`, `biped:N`, `quadruped:N` without a "
            "seed) have unit joint axes and tree rotations, the favourable case for generated "
            "code (many exact zeros and ones); `random:` trees, seeded builders "
            "(`serial_chain(N, seed=1)`) and real URDFs are not favourable by construction (the "
            "URDFs' tree rotations are mostly axis-aligned, their inertias and offsets are not).",
            "", "### C driver: where the time of a batch goes (one thread, us per state)", "",
            "A C driver calls the generated function `F` and the wrapper's `F_batch_write` "
            "directly (no Python): *floor* is `F` alone with its outputs in one scratch block "
            "that stays in L1 (the computation); *previous* the wrapper of API version 3 (in "
            "place below 8 MiB of outputs, else scratch + each state's block copied with 16-byte "
            "streaming stores); *now* `F_batch` (outputs over 1 MiB per thread streamed in "
            "whole cache lines, see `symdyn/codegen/csource.py`); then the two ways forced. "
            "Each mode writes its own, reused, output arrays. Times are the CPU time of the "
            "driver's thread (`CLOCK_THREAD_CPUTIME_ID`; all modes run on it), which leaves out "
            "the time the scheduler gives other jobs but not their effect on shared caches and "
            "memory; medians over round-robin rounds (7-41, as many as fit in ~4 s), minima for "
            "the last two columns: what writing the outputs adds to the computation.",
            "", "| model | algorithm (form) | kB/state | floor | previous | now | in place | streamed | "
            "now - floor (minima) | previous - floor (minima) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for spec, nv, alg, kb, fl, old, new, inpl, strm, *mins in crow:
        out.append(f"| {spec} | {alg} | {kb:.1f} | {us(fl)} | {us(old)} | {us(new)} | "
                   f"{us(inpl)} | {us(strm)} | {us(mins[2] - mins[0])} | "
                   f"{us(mins[1] - mins[0])} |")
    out += ["", "### From Python: single calls vs `.batch` vs Pinocchio (us per state)", "",
            "Single call `lib.<alg>(q, ...)` (fastcall extension, ~0.3 us per call besides the C "
            "code, fresh result arrays) and "
            f"Pinocchio's Python call (no batched API), each over {SINGLE_STATES} of the batch's "
            "states in turn; *single, kept*: a loop of single calls over the batch's "
            f"{batch} states that keeps every result, `lib.<alg>(*state_i, out=row_i)` into a "
            "preallocated (B, ...) array as the batch does (results that land in distinct "
            f"memory); `.batch(..., out=preallocated, threads=1 | 2)` over {batch} states. The four run round-robin in blocks of ~20 "
            "ms; times are wall-clock medians over the rounds, ratios medians of the per-round "
            "ratios (< 1: the batch is cheaper); the last column gives the one-thread ratios "
            "by the CPU time of the calling thread (robust to the other jobs' load). *floor*: "
            "the C computation per state (driver above, CPU time).",
            "", "| model | nv | algorithm | kB/state | floor | single | single, kept | "
            "batch 1 thr | batch 2 thr | Pinocchio | batch / single (1 / 2 thr) | "
            "batch / single kept (1 thr) | batch / Pinocchio (1 / 2 thr) | CPU time (1 thr): "
            "batch / single, / single kept, / Pinocchio |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (spec, nv, alg, pname, kb, fl, ts, tk, tb, tb2, tp, r1, r2, rk, p1, p2,
         cs, ck, cp) in prow:
        out.append(f"| {spec} | {nv} | {alg} | {kb:.1f} | {us(fl)} | {us(ts)} | {us(tk)} | "
                   f"{us(tb)} | {us(tb2)} | {us(tp)} | {r1:.2f} / {r2:.2f} | {rk:.2f} | "
                   f"{p1:.2f} / {p2:.2f} | {cs:.2f}, {ck:.2f}, {cp:.2f} |")
    if prow:
        def rng_(i):
            v = [r[i] for r in prow]
            return f"{min(v):.2f}-{max(v):.2f} (median {statistics.median(v):.2f})"
        out += ["", f"Over the {len(prow)} rows, one thread: batch / single {rng_(11)}, batch / "
                f"single kept {rng_(13)}; by CPU time {rng_(16)} and {rng_(17)}; two threads: "
                f"batch / single {rng_(12)}. Pinocchio routines: as in the calls table "
                "(christoffel: nv x computeCoriolisMatrix(q, e_k))."]
    out += [""] + [f"- {n}" for n in notes] + [""]
    return out


# --- toolkit: frames, CoM, regressor ------------------------------------------------------------------

PANDA_ARM = "robot:panda:lock=panda_finger_joint1,panda_finger_joint2"
TOOLKIT_MODELS = {  # spec -> end-effector frame
    PANDA_ARM: "panda_hand", "robot:ur5": "tool0", "robot:solo12": "FR_FOOT",
    "robot:talos": "left_sole_link", "serial:20:seed=1": "link20",
}


VECTOR_MODELS = "robot:panda,robot:g1,serial:20:seed=1,random:20:seed=1"
VECTOR_ALGS = "rnea,crba,aba,coriolis_matrix,christoffel,rnea_derivatives"
VECTOR_STATES = 10_000
VECTOR_MAX_OUT_BYTES = 256e6   # fewer states where the outputs of 10^4 would exceed this


def section_vector(specs: list[str], algs: list[str], repeat: int) -> list[str]:
    """Vector batches (issue 50): the SIMD C batch (W states per instruction) and the scalar
    loop of the same function, per state, one thread, and the share of this CPU's vector FMA
    peak each reaches, the peak measured in this run (simd_batch.py's microbenchmark)."""
    from simd_batch import fma_peak
    from symdyn.codegen import compiler_info, simd

    title = "## Vector batches: share of the vector FMA peak (issue 50)"
    host = simd.host_targets(compiler_info()[0])
    if not host:
        return [title, "", "This CPU (or compiler) runs no vector target: the batches are "
                "scalar only.", ""]
    target = host[0]
    W = simd.TARGETS[target][0]
    peak = fma_peak(target)
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rng = np.random.default_rng(7)
    rows = []
    for spec in specs:
        model = from_spec(spec)
        lib = build(model, algs, simd=(target,), progress=True)
        for alg in algs:
            f = lib[alg]
            out_bytes = 8 * sum(int(np.prod(sh)) for sh in f.output_shapes)
            n = int(min(VECTOR_STATES, VECTOR_MAX_OUT_BYTES // out_bytes))
            ins = [np.array([model.random_q(rng) for _ in range(n)]) if k == "q"
                   else rng.uniform(-1, 1, (n, model.nv)) for k in f.input_names]
            out = f.batch(*ins, threads=1)
            tv, ts = interleaved([lambda: f.batch(*ins, out=out, threads=1, simd=True),
                                  lambda: f.batch(*ins, out=out, threads=1, simd=False)],
                                 repeat)
            vec, sca = statistics.median(tv) / n, statistics.median(ts) / n
            ops = int(f.stats["n_instructions"])
            rows.append([spec, _kind(spec), alg, f.meta["form"], str(f.simd_width), str(n),
                         f"{sca * 1e9:.0f}", f"{vec * 1e9:.0f}",
                         f"{statistics.median(a / b for a, b in zip(ts, tv)):.2f}",
                         f"{ops / (vec * 1e9):.1f}", f"{100 * 2 * ops / (vec * 1e9) / peak:.0f}",
                         f"{100 * 2 * ops / (sca * 1e9) / peak:.0f}"])
    L = [title, "",
         f"Vector target `{target}` (W = {W}); vector FMA peak measured in this run: "
         f"**{peak:.1f} flop/ns** (12 independent multiply-add chains on the same vector type "
         "and target attribute, one thread). Per state, one thread, outputs into reused arrays "
         f"(`out=`), {VECTOR_STATES} states (fewer where the outputs would exceed "
         f"{VECTOR_MAX_OUT_BYTES / 1e6:.0f} MB), the vector batch (`simd=True`) and the scalar "
         "loop of the same function (`simd=False`) in round-robin blocks; load average at the "
         f"start of this section: {load0:.1f}. `ops/ns`: the function's SX operations times "
         "states over the vector batch's time. `% peak`: those operations as a share of the "
         "peak's multiply-adds per ns (each SX operation counted as one FMA, two flops; above "
         "100 % where additions run on pipes of their own beside the multiply-add units); the "
         "scalar loop's share of the same peak beside it. reports/simd_batch.md "
         "breaks the vector batch's time into the kernel, the transpose of its outputs and the "
         "memory writes.", ""]
    L += table(["model", "kind", "function", "form", "W", "states", "scalar ns", "vector ns",
                 "speedup", "ops/ns", "% peak (vector)", "% peak (scalar)"], rows)
    return L + [""]


def _pinocchio_toolkit_model(spec: str, model):
    """(pin model, how): the robot's URDF (free flyer where symdyn's model floats) with the same
    joints locked, or the symdyn model converted (random-geometry chain)."""
    import pinocchio as pin

    if not spec.startswith("robot:"):
        from symdyn.interop.pinocchio import to_pinocchio

        return to_pinocchio(model), "symdyn.interop.pinocchio.to_pinocchio"
    from symdyn.io.specs import parse_lock
    from symdyn.io.robots import robot_urdf

    name, _, rest = spec.split(":", 1)[1].partition(":")
    path = str(robot_urdf(name))
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if model.is_floating
          else pin.buildModelFromUrdf(path))
    how = "pinocchio.buildModelFromUrdf" + (" (free flyer)" if model.is_floating else "")
    if rest.startswith("lock="):
        names = list(parse_lock(rest[len("lock="):]))
        pm = pin.buildReducedModel(pm, [pm.getJointId(n) for n in names], pin.neutral(pm))
        how += f" + buildReducedModel({', '.join(names)} at 0)"
    return pm, how


def _geometry(model) -> str:
    from symdyn.codegen.functions import exact_rotations

    snapped = exact_rotations(model)
    k = sum(bool(np.all(np.isin(np.asarray(X.E, dtype=float), (0.0, 1.0, -1.0))))
            for X in snapped.Xtree)
    kind = "axis-aligned (favourable)" if k >= 0.6 * model.N else "random geometry"
    return f"{kind}: {k}/{model.N} tree rotations axis-aligned"


def section_toolkit(specs: list[str], repeat: int, batch: int) -> list[str]:
    """Compiled frame Jacobians (local, world), CoM Jacobian and joint torque regressor vs
    Pinocchio, per call from Python, round-robin in one process."""
    import pinocchio as pin

    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows, builds, models = [], [], []
    for spec in specs:
        model = from_spec(spec)
        ee = TOOLKIT_MODELS.get(spec)
        if ee is None:
            raise SystemExit(f"toolkit: no end-effector frame known for {spec!r}; known: "
                             f"{', '.join(TOOLKIT_MODELS)}")
        request = {"frame_jacobian:local": {"frame": ee, "reference": "local"},
                   "frame_jacobian:world": {"frame": ee, "reference": "world"},
                   "com_jacobian": {}, "joint_torque_regressor": {}}
        t0 = time.perf_counter()
        lib = build(model, request, progress=True)
        builds.append((spec, model, lib, time.perf_counter() - t0))
        pm, how = _pinocchio_toolkit_model(spec, model)
        if (pm.nq, pm.nv) != (model.nq, model.nv):
            raise SystemExit(f"{spec}: Pinocchio model has nq, nv = {pm.nq}, {pm.nv}, symdyn "
                             f"{model.nq}, {model.nv}")
        pd = pm.createData()
        fid = pm.getFrameId(ee)
        if fid >= pm.nframes:
            raise SystemExit(f"{spec}: Pinocchio model has no frame {ee!r}")
        models.append((spec, model.nv, ee, how, _geometry(model)))
        rng = np.random.default_rng(3)
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) if model.is_floating \
            else rng.uniform(-1, 1, pm.nq)
        pv, pa = rng.uniform(-1, 1, pm.nv), rng.uniform(-1, 1, pm.nv)
        pcalls = {
            "frame_jacobian:local": ("computeFrameJacobian(LOCAL)",
                                     lambda: pin.computeFrameJacobian(pm, pd, pq, fid, pin.LOCAL)),
            "frame_jacobian:world": ("computeFrameJacobian(WORLD)",
                                     lambda: pin.computeFrameJacobian(pm, pd, pq, fid, pin.WORLD)),
            "com_jacobian": ("jacobianCenterOfMass", lambda: pin.jacobianCenterOfMass(pm, pd, pq)),
            "joint_torque_regressor": ("computeJointTorqueRegressor",
                                       lambda: pin.computeJointTorqueRegressor(pm, pd, pq, pv, pa)),
        }
        st = {"q": model.random_q(rng), "qd": rng.uniform(-1, 1, model.nv),
              "qdd": rng.uniform(-1, 1, model.nv)}
        Bst = {"q": np.array([model.random_q(rng) for _ in range(batch)]),
               "qd": rng.uniform(-1, 1, (batch, model.nv)),
               "qdd": rng.uniform(-1, 1, (batch, model.nv))}
        for key, opts in request.items():
            f = lib[key]
            ins = [st[n] for n in f.input_names]
            ref = ALGORITHMS[f.algorithm].resolve()(model, *ins, **opts)
            err = float(np.abs(f(*ins) - ref).max() / max(1, np.abs(ref).max()))
            pname, pfn = pcalls[key]
            bins = [Bst[n] for n in f.input_names]
            bout = np.empty((batch, *f.output_shapes[0]))
            t_s, t_p, t_b = interleaved([lambda: f(*ins), pfn,
                                         lambda: f.batch(*bins, out=bout, threads=1)], repeat)
            med = statistics.median
            ratio = med(a / b for a, b in zip(t_s, t_p))
            bratio = med(a / batch / b for a, b in zip(t_b, t_p))
            rows.append((spec, model.nv, key, pname, med(t_s), med(t_p), ratio,
                         med(t_b) / batch, bratio, min(t_s) / min(t_p), err))
            print(f"toolkit {spec} {key}: symdyn {med(t_s) * 1e6:.3g} us, pin "
                  f"{med(t_p) * 1e6:.3g} us, ratio {ratio:.2f}", file=sys.stderr, flush=True)
    out = ["## Toolkit: frame Jacobians, CoM Jacobian, joint torque regressor vs Pinocchio", "",
           "symdyn: one build per model, `build(model, {\"frame_jacobian:local\": {\"frame\": EE, "
           "\"reference\": \"local\"}, \"frame_jacobian:world\": {...\"world\"}, "
           "\"com_jacobian\": {}, \"joint_torque_regressor\": {}})`, called as "
           "`lib[\"frame_jacobian:local\"](q)`, `lib.com_jacobian(q)`, "
           "`lib.joint_torque_regressor(q, qd, qdd)` from Python (inputs copied in, new result "
           "arrays). Pinocchio: the one-call Python routines that compute their own kinematics "
           "(`computeFrameJacobian(model, data, q, frame_id, LOCAL|WORLD)`, "
           "`jacobianCenterOfMass(model, data, q)`, `computeJointTorqueRegressor(model, data, q, "
           "v, a)`). Both run round-robin in blocks of ~20 ms in one process; times are medians "
           f"over {repeat} rounds, ratios the medians of the per-round ratios (< 1: symdyn "
           "faster), plus the ratio of the minima (least disturbed blocks). Batched: "
           f"`.batch(..., out=)` over {batch} states, per state, 1 thread, against Pinocchio's "
           "per-call time. Jacobian rows are [angular; linear] in symdyn, [linear; angular] in "
           "Pinocchio (same work). Load average at the start of this section: "
           f"{load0:.1f} (2 cores shared with other jobs).", "",
           "| model | nv | end-effector frame | Pinocchio model | geometry |", "|---|---|---|---|---|"]
    out += [f"| {s} | {nv} | {ee} | {how} | {geo} |" for s, nv, ee, how, geo in models]
    out += ["", "| model | nv | function | Pinocchio routine | symdyn us/call | Pinocchio us/call | "
            "ratio | ratio of minima | batch us/state (ratio) | max rel. diff vs NumPy |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for spec, nv, key, pname, ts, tp, ratio, tb, bratio, rmin, err in rows:
        out.append(f"| {spec} | {nv} | {key} | {pname} | {us(ts)} | {us(tp)} | {ratio:.2f} | "
                   f"{rmin:.2f} | {us(tb)} ({bratio:.2f}) | {err:.1e} |")
    out += ["", "Ranges over the models (ratio per call / ratio of minima / batched ratio per "
            "state; the random-geometry chain separately):", ""]
    for key in dict.fromkeys(r[2] for r in rows):
        def rng_of(idx, sel):
            vals = [r[idx] for r in rows if r[2] == key and sel(r[0])]
            if not vals:
                return "-"
            lo, hi = f"{min(vals):.2f}", f"{max(vals):.2f}"
            return lo if lo == hi else f"{lo}-{hi}"
        real = lambda sp: sp.startswith("robot:")  # noqa: E731
        rand = lambda sp: not sp.startswith("robot:")  # noqa: E731
        out.append(f"- {key}: robots {rng_of(6, real)} / {rng_of(9, real)} / "
                   f"{rng_of(8, real)}; random geometry {rng_of(6, rand)} / {rng_of(9, rand)} / "
                   f"{rng_of(8, rand)}")
    out += ["", "Per call, the Python side of a compiled call costs ~0.6-0.9 us whatever the "
            "function (inputs to bytes, the ctypes call, the result array; see the summary), "
            "which is most of a frame or CoM Jacobian's time on these models: per call they sit "
            "near Pinocchio's, batched they are well below it. The regressor's work grows with "
            "the 10 N columns, where generated code gains most.", ""]
    out += ["", "### Toolkit builds (cache as available; auto flags)", "",
            "| model | function | SX instructions | flags | gcc CPU s | build wall s |",
            "|---|---|---|---|---|---|"]
    for spec, model, lib, wall in builds:
        for key, s in lib.stats["functions"].items():
            out.append(f"| {spec} | {key} | {s['n_instructions']} | "
                       f"{' '.join(s.get('cflags', []))} | "
                       f"{s.get('cpu_compile', float('nan')):.1f} | "
                       f"{'cache hit' if lib.cache_hit else f'{wall:.0f}'} |")
    out.append("")
    return out


PARAMETER_ALGS = ("rnea", "crba", "aba", "coriolis_matrix")


def section_parameters(specs: list[str], repeat: int, batch: int) -> list[str]:
    """Compiled functions with the inertial parameters as an input (parameters="inertial") vs the
    same functions with the model's inertias compiled in: SX size, per call and batched."""
    from symdyn.identification.parameters import inertial_parameters

    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for spec in specs:
        model = from_spec(spec)
        plain = build(model, list(PARAMETER_ALGS), progress=True)
        withp = build(model, list(PARAMETER_ALGS), parameters="inertial", progress=True)
        rng = np.random.default_rng(4)
        st = {"q": model.random_q(rng), "qd": rng.uniform(-1, 1, model.nv),
              "qdd": rng.uniform(-1, 1, model.nv), "tau": rng.uniform(-1, 1, model.nv)}
        Bst = {"q": np.array([model.random_q(rng) for _ in range(batch)]),
               "qd": rng.uniform(-1, 1, (batch, model.nv)),
               "qdd": rng.uniform(-1, 1, (batch, model.nv)),
               "tau": rng.uniform(-1, 1, (batch, model.nv))}
        pi = inertial_parameters(model)
        PI = np.tile(pi, (batch, 1))
        for alg in PARAMETER_ALGS:
            f, g = plain[alg], withp[alg]
            ins = [st[n] for n in f.input_names]
            a, b = f(*ins), g(*ins, pi)
            a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
            err = max(float(np.abs(x - y).max() / max(1, np.abs(x).max())) for x, y in zip(a, b))
            bins = [Bst[n] for n in f.input_names]
            outs = tuple(np.empty((batch, *sh)) for sh in f.output_shapes)
            bout = outs if len(outs) > 1 else outs[0]
            t_f, t_g, b_f, b_g = interleaved(
                [lambda: f(*ins), lambda: g(*ins, pi), lambda: f.batch(*bins, out=bout, threads=1),
                 lambda: g.batch(*bins, PI, out=bout, threads=1)], repeat)
            med = statistics.median
            rows.append((spec, model.nv, alg, f.stats["n_instructions"], g.stats["n_instructions"],
                         med(t_f), med(t_g), med(y / x for x, y in zip(t_f, t_g)),
                         min(t_g) / min(t_f), med(b_f) / batch, med(b_g) / batch,
                         med(y / x for x, y in zip(b_f, b_g)), err))
    out = ["## parameters=\"inertial\": the inertial parameters as an input", "",
           "`build(model, [...], parameters=\"inertial\")`: the functions take `pi` (10 N, "
           "Pinocchio's order) as a last input, `lib.rnea(q, qd, qdd, pi)`, so an adaptive "
           "controller or an identification loop runs compiled with its current estimate. "
           "Compared with the same functions with the model's inertias compiled in (same flags "
           "rule), round-robin in one process: per call from Python and batched "
           f"(`.batch(..., out=)`, {batch} states, 1 thread, per state); ratios are medians of "
           "the per-round ratios (with pi / compiled in), plus the ratio of the minima per call. "
           "`pi` = the model's own parameters, so both give the same result (last column). "
           f"Load average at the start of this section: {load0:.1f} (2 cores shared).", "",
           "| model | nv | algorithm | SX instructions (compiled in / pi) | us/call "
           "(compiled in / pi) | ratio (of minima) | batch us/state (compiled in / pi) | "
           "batch ratio | max rel. diff |",
           "|---|---|---|---|---|---|---|---|---|"]
    for spec, nv, alg, n0, n1, t0, t1, r, rmin, b0, b1, br, err in rows:
        out.append(f"| {spec} | {nv} | {alg} | {n0} / {n1} | {us(t0)} / {us(t1)} | "
                   f"{r:.2f} ({rmin:.2f}) | {us(b0)} / {us(b1)} | {br:.2f} | {err:.1e} |")
    out.append("")
    return out


DISCUSSION = """## How to read this report

Every figure below is measured in this run; nothing here is copied from an earlier one.

* **Call overhead**: the cost of crossing from Python into a compiled function that does
  nothing, per binding (ctypes, cffi, symdyn's extension), and a `casadi.Function` call for
  comparison: the floor under every per-call figure of the later tables.
* **Gamma of a 20-DoF chain**: generation and compile time of the Christoffel symbols, against
  the 30 s target.
* **Compiler flags** and **splitting**: compiler CPU time against run time per gcc level, and
  CasADi's one C function against chunks; they are what `symdyn.codegen.compiler`'s automatic
  level (`-O2` up to a graph size, `-Og` above) and the unsplit functions rest on.
* **symdyn compiled vs Pinocchio**: the Python call on both sides, in one process, in
  round-robin blocks; the ratio column (< 1: symdyn faster) is the median of per-round ratios.
  Axis-aligned builders (`serial:N`, `binary:N`) are favourable cases with many exact zeros;
  random-geometry models (`:seed=`) and real URDFs are what users bring.
* **Batches with large outputs**: per state, single calls against `.batch` on one and two
  threads and against a loop of Pinocchio calls; the C driver rows separate the computation
  from the cost of writing the outputs to memory.
* **Vector batches**: W states per instruction against the scalar loop, and the share of the
  vector FMA peak (measured in the same run) each reaches. reports/simd_batch.md has more
  models, every vector target and where the vector batch's time goes.
* **Toolkit** and **inertial parameters as an input**: the same comparison for frame and CoM
  Jacobians and the regressor, and for functions that take the inertial parameters at run time.

Ratios move by a few percent between runs on a shared machine, and by more when other jobs load
it (the load average is in the head of the report and of the sections that record it).
"""


def _sections(text: str) -> list[tuple[str, str]]:
    """(title, text) of each '## ' section, in order ('' for the part before the first)."""
    parts, title, cur = [], "", []
    for line in text.splitlines():
        if line.startswith("## "):
            parts.append((title, "\n".join(cur)))
            title, cur = line.split(":")[0].split("(")[0].strip(), []
        cur.append(line)
    parts.append((title, "\n".join(cur)))
    return parts


def _merge(old: str, new_body: str, new_head: str) -> str:
    """The old report with the sections present in new_body replaced (others kept)."""
    new = dict(_sections(new_body))
    out = []
    for title, text in _sections(old):
        if not title:
            # the head of the run that made the kept sections, relabelled; its provenance
            # marker is dropped (the report's marker is the new run's)
            earlier = [ln.replace("Regenerate:", "Earlier sections:")
                       .replace("Machine:", "Earlier sections' machine:")
                       .replace("Source:", "Earlier sections' source:")
                       for ln in text.splitlines()
                       if ln.startswith(("Regenerate:", "Earlier sections:", "Machine:",
                                         "Earlier sections' machine:", "Source:",
                                         "Earlier sections' source:"))]
            # the summary is static text: commands that only rewrote it measured nothing
            earlier = list(dict.fromkeys(ln for ln in earlier if "--sections summary " not in ln))
            out.append("\n".join([new_head.rstrip(), "", *earlier, ""]))
        else:
            out.append(new.pop(title, text).rstrip() + "\n")
    out += [t.rstrip() + "\n" for k, t in new.items() if k]
    return "\n".join(out)


def _cpu() -> str:
    """The CPU: model name and family/model from /proc/cpuinfo where there is one (ratios against
    Pinocchio moved by ~35 % between hosts that the older reports do not tell apart)."""
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, val = line.partition(":")
            info.setdefault(key.strip(), val.strip())
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in info:
        name += f" (family {info['cpu family']}, model {info.get('model', '?')})"
    return f"{platform.machine()} {name}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=DEFAULT_MODELS)
    p.add_argument("--algorithms", default=DEFAULT_ALGS)
    p.add_argument("--sections",
                   default="summary,overhead,gamma,flags,split,calls,batch,vector,toolkit,"
                           "parameters")
    p.add_argument("--batch-models", default=BATCH_MODELS)
    p.add_argument("--batch-algorithms", default=BATCH_ALGS)
    p.add_argument("--vector-models", default=VECTOR_MODELS)
    p.add_argument("--vector-algorithms", default=VECTOR_ALGS)
    p.add_argument("--flag-levels", default="-Og,-O1,-O2,-Og -march=native,-O2 -march=native")
    p.add_argument("--flag-algorithms",
                   default="rnea,crba,aba,coriolis_matrix,rnea_derivatives,christoffel")
    p.add_argument("--toolkit-models", default=";".join(TOOLKIT_MODELS),
                   help="';'-separated specs for the toolkit section (specs may hold commas)")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    p.add_argument("--out", default=str(ROOT / "reports" / "fastpath.md"))
    p.add_argument("--merge", action="store_true",
                   help="replace only the regenerated sections of an existing report")
    args = p.parse_args(argv)
    repeat = 5 if args.quick else args.repeat
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    import casadi
    import pinocchio

    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    head = ["# Compiled fast path: symdyn (CasADi-generated C) vs Pinocchio", "",
            "Regenerate: `" + f"python experiments/bench_fastpath.py "
            f"{' '.join(argv or sys.argv[1:])}".rstrip() + "`", "",
            *report_provenance(ROOT, "bench_fastpath.py"),
            f"Machine: {_cpu()}, {os.cpu_count()} cores "
            f"(shared with other jobs; load average at start {load[0]:.1f}), "
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"casadi {casadi.__version__}, pinocchio {pinocchio.__version__}, "
            f"{subprocess.run(['cc', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}.",
            ""]
    body = [DISCUSSION] if "summary" in sections else []
    if "overhead" in sections:
        body += section_overhead(repeat)
        m = from_spec("serial:20")
        f = casadi_function(m, "rnea")
        q, v = m.random_q(np.random.default_rng(0)), np.ones(m.nv)
        body += [f"casadi.Function call from Python (rnea, serial:20, NumPy inputs): "
                 f"{us(median_time(lambda: f(q, v, v), repeat))} us per call - the conversion "
                 "cost the compiled path avoids.", ""]
    if "gamma" in sections:
        body += section_gamma(repeat)
    if "flags" in sections:
        body += section_flags("serial:20", args.flag_algorithms.split(","),
                              args.flag_levels.split(","), repeat)
    if "split" in sections:
        body += section_split("serial:20", ["coriolis_matrix", "rnea_derivatives"],
                              ["casadi:-O2", "casadi:-Og", "2000:-O2", "5000:-O2", "2000:-Og"],
                              repeat)
    if "calls" in sections:
        body += section_calls(args.models.split(","), args.algorithms.split(","), repeat,
                              args.batch)
    if "batch" in sections:
        body += section_batch(args.batch_models.split(","), args.batch_algorithms.split(","),
                              repeat, args.batch)
    if "vector" in sections:
        body += section_vector(args.vector_models.split(","), args.vector_algorithms.split(","),
                               repeat)
    if "toolkit" in sections:
        body += section_toolkit([m for m in args.toolkit_models.split(";") if m.strip()], repeat,
                                args.batch)
    if "parameters" in sections:
        body += section_parameters([m for m in args.toolkit_models.split(";") if m.strip()],
                                   repeat, args.batch)
    text = "\n".join(head + body)
    if args.out != "-":
        out = Path(args.out)
        if args.merge and out.is_file() and set(sections) <= {"summary"}:
            # static text only: replace the summary, keep the head (command, machine, load) of
            # the run that measured the tables
            fresh = dict(_sections("\n".join(body)))
            text = "\n".join((fresh.get(t, x) if t else x).rstrip() + "\n"
                             for t, x in _sections(out.read_text()))
        elif args.merge and out.is_file():
            text = _merge(out.read_text(), "\n".join(body), "\n".join(head))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
