"""JAX backend throughput and jit compile times -> reports/jax.md.

Per-state time of the jitted, batched symdyn algorithms (``symdyn.jax.compile``, its default
``route="auto"``: the lowered CasADi graph for small models, the recorded program past
``symdyn.jax.GRAPH_MAX`` instructions; rnea, crba, coriolis_matrix, christoffel, aba) over batches
of 1e2..1e5 states, measured side by side (one run, interleaved rounds, medians) with the
compiled C batch (``symdyn.codegen.build(...).<alg>.batch``, one thread; the process pinned to one
core, ``--cores``), with the traced route
(``route="trace"``: the algorithm on JAX arrays under ``vmap``) and with ADAM's JAX backend
(``adam-robotics``, jit + vmap, on the same URDF) where ADAM has the quantity. Then the compile
time (symdyn's setup + JAX trace + XLA) of every listed algorithm versus model size: serial
chains and a 35-DoF humanoid (Unitree G1, floating base).

    pip install -e ".[jax,bench]"      # JAX, and ADAM (adam-robotics) as the second anchor
    python experiments/bench_jax.py [--quick] [--device cpu|gpu] [--cores N]
                                    [--dispatch sync|async]
                                    [--retain-memory | --huge-pages] [--out-dir DIR]
                                    [--robots R,...] [--algorithms A,...] [--sizes N,...]
                                    [--throughput-only]

``--robots``, ``--algorithms`` and ``--sizes`` restrict the throughput table;
``--throughput-only`` measures the default route beside the C batch only (no traced, forced
graph, ADAM or compile-time measurements) and writes ``jax_throughput.md``: a short run for
comparing two versions of the library.

``--device gpu`` runs the JAX and ADAM kernels on the first GPU (batch sizes up to 1e6) and
refuses in one line when JAX sees none; the C batch stays on the CPU. ``--retain-memory`` calls
``symdyn.jax.retain_freed_memory()`` first (glibc reuses the buffers XLA allocates for every call;
the C batch's results come from the same allocator) and writes reports/jax_retained.md.
``--huge-pages`` runs the script again with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc >=
2.35 then asks for transparent huge pages for the blocks it maps, as NumPy does for its large
arrays) and writes reports/jax_hugepages.md. ``--dispatch`` (CPU): ``sync`` (default) runs each
call on the calling thread (``symdyn.jax.synchronous_dispatch()``, the setting for small batches
on a CPU), ``async`` keeps JAX's default (a worker thread runs each call) and adds ``_async`` to
the report's name.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import re
import time

from _common import (header, interleaved, log, median, ms, out_dir, parser, table,  # noqa: I001
                     us)

import numpy as np

ALGS = ("rnea", "crba", "coriolis_matrix", "christoffel", "aba")
ROBOTS = ("ur5", "panda", "g1")
TRACED_MAX_NV = 10       # the traced route is measured beside on the small robots only (its XLA
# compile of coriolis_matrix / christoffel takes minutes at nv = 35)
OUT_BYTES = 4e8          # cap a batch so that its results stay below ~400 MB
G1_SIZES = (100, 1000)   # g1 per-state times are 1-400 us: larger batches add minutes, no news
G1_DEFAULT_XLA = "g1, XLA's default options"   # the compile table's row without COMPILER_OPTIONS
G1_SMALL = "g1, 100 states"                      # rows compiled for batches of 100 states
G1_ONE_KERNEL = "g1, 100 states, one_kernel=True"
COMPILE_BATCH = 4096     # compile times for this batch shape: the lowering keeps shared values
# on large batches (symdyn.codegen.jax_lowering.SHARED_WORK), so the code depends on the shape


def _args(model, names, n, rng):
    """Batch of n random states for the named arguments (q random with unit quaternions)."""
    out = []
    for a in names:
        if a == "q":
            out.append(np.stack([model.random_q(rng) for _ in range(min(n, 1000))]))
            if n > 1000:
                out[-1] = np.resize(out[-1], (n, model.nq))
        else:
            out.append(rng.uniform(-1, 1, (n, model.nv)))
    return out


def _out_size(alg: str, nv: int) -> int:
    return {"rnea": nv, "aba": nv, "crba": nv * nv, "coriolis_matrix": 3 * nv * nv,
            "christoffel": nv ** 3}[alg]


def _adam(urdf_path, joint_names, floating: bool):
    """ADAM's JAX functions of one state (jit + vmap applied by the caller), or None."""
    try:
        import adam.jax
        import jax.numpy as jnp
    except ImportError as exc:
        log(f"ADAM not available: {exc}")
        return None
    kd = adam.jax.KinDynComputations(urdf_path.read_text(), joint_names)
    _no_device(kd)
    H0 = jnp.eye(4)
    nb = 6 if floating else 0

    def base(q):
        if not floating:
            return H0, q
        # symdyn floating q = [p; quat(x, y, z, w)] -> homogeneous transform
        x, y, z, w = q[3], q[4], q[5], q[6]
        R = jnp.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                       [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                       [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        H = jnp.eye(4).at[:3, :3].set(R).at[:3, 3].set(q[:3])
        return H, q[7:]

    def split(v):
        return (v[:nb], v[nb:]) if floating else (jnp.zeros(6), v)

    def rnea_like(q, v, a):         # ADAM has no inverse dynamics with qdd: M a + h (2 calls)
        H, s = base(q)
        vb, sd_ = split(v)
        M = kd.mass_matrix(H, s)
        h = kd.bias_force(H, s, vb, sd_)
        ab = a if floating else jnp.concatenate([jnp.zeros(6), a])
        return M @ ab + h

    def crba(q):
        H, s = base(q)
        return kd.mass_matrix(H, s)

    def aba(q, v, tau):
        H, s = base(q)
        vb, sd_ = split(v)
        return kd.aba(H, s, vb, sd_, tau[nb:] if floating else tau)

    return {"rnea": rnea_like, "crba": crba, "aba": aba}


def _no_device(obj, seen=None) -> None:
    """ADAM's array factory passes ``device=`` a sharding to ``jnp.asarray``, which JAX 0.10
    refuses inside jit (AttributeError: 'SingleDeviceSharding' object has no attribute 'spec');
    ``None`` (JAX's default device) works."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if hasattr(obj, "_device"):
        obj._device = None
    for v in list(getattr(obj, "__dict__", {}).values()):
        if type(v).__module__.startswith("adam"):
            _no_device(v, seen)


def _joint_names(urdf_path, model):
    """Names of the URDF's moving joints in the model's order (ADAM's joints_name_list)."""
    text = urdf_path.read_text()
    moving = re.findall(r'<joint\s+name="([^"]+)"\s+type="(revolute|continuous|prismatic)"',
                        text)
    by_name = {n for n, _ in moving}
    names = [n for n in getattr(model, "joint_names", ()) if n in by_name]
    return names or [n for n, _ in moving]


def _graph_size(model, alg) -> int:
    from symdyn.codegen.functions import casadi_function
    return casadi_function(model, alg, layout="numpy").n_instructions()


def throughput(args, report):
    import jax

    import symdyn as sd
    import symdyn.jax as sjax
    from symdyn.codegen import build

    dev = jax.devices(args.device)[0]
    sizes = [100, 1000] if args.quick else [100, 1000, 10_000, 100_000]
    if args.device == "gpu" and not args.quick:
        sizes.append(1_000_000)
    sizes = args.sizes or sizes
    robots = args.robots or (ROBOTS[:2] if args.quick else ROBOTS)
    short = args.throughput_only
    rows, ratio_rows = [], []
    rng = np.random.default_rng(0)
    for robot in robots:
        model = sd.load_robot(robot)
        path = sd.robot_urdf(robot)
        floating = model.joints[0].type == "floating"
        log(f"{robot}: nq={model.nq} nv={model.nv}; building C")
        lib = build(model, list(args.algorithms), progress=False)
        adam = None
        try:
            adam = None if short else _adam(path, _joint_names(path, model), floating)
        except Exception as exc:  # noqa: BLE001 - ADAM's URDF parser: report, go on
            log(f"ADAM failed on {robot}: {type(exc).__name__}: {exc}")
            report.append(f"ADAM could not load {robot}: `{type(exc).__name__}: {exc}`.")
        for alg in args.algorithms:
            f = sjax.compile(model, alg)
            ft = (sjax.compile(model, alg, route="trace")
                  if model.nv <= TRACED_MAX_NV and not short else None)
            # the graph forced beside the program where it is at most 2.5x the auto limit
            # (what route="graph" would give a user willing to wait for XLA)
            fg = None
            if (f.route == "program" and not short
                    and _graph_size(model, alg) <= 2.5 * sjax.GRAPH_MAX):
                fg = sjax.compile(model, alg, route="graph")
            fk = None if short else sjax.compile(model, alg, one_kernel=True)   # one pass
            fk = fk if fk is not None and fk.one_kernel else None
            t0 = time.perf_counter()
            fa = None
            if adam is not None and alg in adam:
                fa = jax.jit(jax.vmap(adam[alg]))
            for n in sizes if model.nv <= TRACED_MAX_NV or args.sizes else G1_SIZES:
                if n * _out_size(alg, model.nv) * 8 > OUT_BYTES:
                    continue
                X = _args(model, f.args, n, rng)
                Xj = [jax.device_put(x, dev) for x in X]
                c = lib[alg]
                c.batch(*X)

                def runner(g):
                    jax.block_until_ready(g(*Xj))              # compile (first size only)
                    return lambda: jax.block_until_ready(g(*Xj))

                def run_c():
                    c.batch(*X)
                fns = [runner(f), run_c]
                fk_n = fk if fk is not None and fk.one_kernel_at(n) else None
                for extra in (ft, fa, fg, fk_n):
                    if extra is not None:
                        fns.append(runner(extra))
                ts = interleaved(fns, repeat=5 if n <= 10_000 else 3, target=0.05,
                                 max_total=4.0 if not args.quick else 2.0)
                tj, tc = median(ts[0]) / n, median(ts[1]) / n
                k = 2
                tt = ta = rt = ra = float("nan")
                if ft is not None:
                    tt = median(ts[k]) / n
                    rt = float(np.median([a / b for a, b in zip(ts[k], ts[0])]))
                    k += 1
                if fa is not None:
                    ta = median(ts[k]) / n
                    ra = float(np.median([a / b for a, b in zip(ts[k], ts[0])]))
                    k += 1
                tg = median(ts[k]) / n if fg is not None else float("nan")
                k += fg is not None
                tk = rk = float("nan")
                if fk_n is not None:
                    tk = median(ts[k]) / n
                    rk = float(np.median([a / b for a, b in zip(ts[k], ts[1])]))
                rj = float(np.median([a / b for a, b in zip(ts[0], ts[1])]))
                rows.append([robot, model.nv, alg, f.route, f"{n:.0e}", us(tj), us(tc),
                             us(tt) if ft is not None else "-", us(ta) if fa is not None else "-",
                             us(tg) if fg is not None else "-", f"{rj:.2f}",
                             f"{rt:.2f}" if ft is not None else "-",
                             f"{ra:.2f}" if fa is not None else "-",
                             us(tk) if fk_n is not None else "-",
                             f"{rk:.2f}" if fk_n is not None else "-"])
                ratio_rows.append((robot, alg, n, rj, ra, f.route, rt, tj, tg, rk))
                log("  ".join(str(x) for x in rows[-1]))
                del X, Xj
                gc.collect()
            log(f"{robot} {alg}: {time.perf_counter() - t0:.1f} s")
    return rows, ratio_rows


def _compile_times_on(cores, args):
    """compile_times in a fresh process on ``cores`` (the machine's: compiling, XLA emits fusions
    in parallel, as it does for a user; the throughput runs pinned)."""
    os.sched_setaffinity(0, cores)
    import jax
    jax.config.update("jax_enable_x64", True)
    return compile_times(args)


def compile_times(args):
    import jax

    import symdyn as sd
    import symdyn.jax as sjax
    from symdyn.models import serial_chain

    chains = (5, 10) if args.quick else (5, 10, 20)
    models = [(f"serial:{n}", serial_chain(n, seed=1)) for n in chains]
    g1 = sd.load_robot("g1")
    models.append(("g1 (35 DoF, floating)", g1))
    # beside it, XLA's default options (its MLIR fusion emitters) instead of sjax.COMPILER_OPTIONS
    models.append((G1_DEFAULT_XLA, g1))
    # and batches of 100 states (another code: fewer shared values kept), as XLA's kernels and
    # as one kernel (compile(one_kernel=True) applies to the batches run in one pass)
    models += [(G1_SMALL, g1), (G1_ONE_KERNEL, g1)]
    rows, total, g1_total, totals = [], 0.0, 0.0, {}
    for label, model in models:
        row, total = [label, model.nv], 0.0
        sjax._compiler_options = {} if label == G1_DEFAULT_XLA else None
        batch = 100 if label in (G1_SMALL, G1_ONE_KERNEL) else COMPILE_BATCH
        for alg in ALGS:
            t0 = time.perf_counter()
            f = sjax.compile(model, alg, one_kernel=label == G1_ONE_KERNEL)   # route choice,
            shapes = [jax.ShapeDtypeStruct((batch, n), np.float64)          # CasADi / recording
                      for n in f.sizes]
            t1 = time.perf_counter()
            lowered = f.batch.lower(*shapes)                   # JAX trace + lowering
            t2 = time.perf_counter()
            lowered.compile()                                  # XLA
            t3 = time.perf_counter()
            total += t3 - t0
            row.append(f"{f.route[0]} {t1 - t0:.1f} + {t2 - t1:.1f} + "
                       f"{t3 - t2:.1f}")
            log(f"{label} {alg} ({f.route}): setup {t1 - t0:.1f} s, trace {t2 - t1:.1f} s, "
                f"XLA {t3 - t2:.1f} s")
        row.append(f"{total:.1f}")
        rows.append(row)
        if label.startswith("g1 (35"):
            g1_total = total
        totals[label] = total
    sjax._compiler_options = None
    return rows, g1_total, totals, compile_many_times(g1)


def compile_many_times(g1):
    """Wall seconds of ``symdyn.jax.compile_many(g1, ALGS, batch_sizes=(B,), workers=w)``: the
    functions the first calls of batches of B states run (checks, result reuse), compiled ahead;
    one thread (one after the other) and one per core."""
    import symdyn.jax as sjax
    cores = len(os.sched_getaffinity(0))
    rows = []
    for batch, one_kernel in ((COMPILE_BATCH, False), (100, False), (100, True)):
        row = [f"g1, {batch} states" + (", one_kernel=True" if one_kernel else ""), g1.nv]
        for workers in (1, cores):
            t0 = time.perf_counter()
            sjax.compile_many(g1, ALGS, batch_sizes=(batch,), workers=workers,
                              one_kernel=one_kernel)
            row.append(time.perf_counter() - t0)
            log(f"compile_many {row[0]}, {workers} threads: {row[-1]:.1f} s")
        rows.append(row)
    return cores, rows


def _range(vals) -> str:
    vals = [v for v in vals if np.isfinite(v)]
    return f"{min(vals):.1f}-{max(vals):.1f}x" if vals else "-"


def _discussion(ratios, g1_total, memory: str, sync: bool) -> list[str]:
    """What the tables say about the targets, from this run's numbers."""
    import symdyn.jax as sjax
    out = ["## Discussion", ""]
    for route in ("graph", "program"):
        mine = [r for r in ratios if r[5] == route]
        if not mine:
            continue
        big = [r for r in mine if r[2] >= 1000]
        out.append(f"- `route=\"{route}\"` ({', '.join(sorted({r[0] for r in mine}))}): "
                   f"JAX/C {_range([r[3] for r in mine])} over all batches, "
                   f"{_range([r[3] for r in big])} from 1000 states on; against the traced "
                   f"route {_range([r[6] for r in mine])} faster (trace/JAX).")
    small = [r for r in ratios if r[2] == 100 and r[5] == "graph"]
    pairs = [r for r in ratios if np.isfinite(r[8])]
    forced = ", ".join(sorted({f"{r[0]} {r[1]}" for r in pairs})) or "none"
    gain = [r[7] / r[8] for r in pairs]
    out += [
        "- Graph route: XLA fuses the lowered scalar graph into loops over contiguous batch rows. "
        "Its CPU fusion duplicates cheap producers into every fusion that uses them, and on a "
        "CSE'd graph that compounds (panda aba: 2747 SX instructions became 46725 arithmetic "
        "operations, 1.2 us a state at 1e4 states); the lowering therefore keeps the values "
        "used more than once for their users on large batches (`symdyn.codegen.jax_lowering."
        "_shared`: 4360 operations, ~0.55 us a state; each kept value ends a fusion, a fixed "
        "cost per call, so on small batches a value is kept where recomputing it for each "
        "further user would repeat enough work: (uses - 1) x cone >= 6400 / batch operations; "
        "measured apart, one core, 100 states, against the cone alone: panda aba 1.43 -> 1.04, "
        "G1 rnea 4.39 -> 3.41 us a state). What remains against the C "
        "batch is the rows XLA stores between fusions and a fixed cost per call "
        f"(dispatch, conditionals: at 100 states JAX/C is {_range([r[3] for r in small])}). "
        "With JAX's default dispatch, XLA's CPU client hands each call to a worker thread and "
        "the caller waits for it: two thread switches a call on one core, and unpinned, on "
        "another core, a hand-off that costs more than a small batch's arithmetic (symdyn.jax's "
        "docstring: ur5 rnea at 100 states, 0.41 us a state on one core against 1.1-1.3 on "
        "two; from 1e4 states on, XLA's splitting of large fusions over two cores gains some of "
        "what pinning costs). " + _DISPATCH_RUN[sync] + " The values are checked in the "
        "call, one flag the host reads after it, instead of in NumPy before it (host work "
        "between calls slows the next call's XLA code; measured apart, interleaved, 100 states, "
        "JAX/C host checks -> flag, synchronous: ur5 rnea 2.19 -> 1.88, christoffel 2.88 -> "
        "2.31, panda coriolis_matrix 4.36 -> 3.79, g1 crba 6.71 -> 6.20).",
        "- Large batches: from 1000 to 10000 states the graph route's time a state falls "
        f"(JAX/C {_range([r[3] for r in ratios if r[5] == 'graph' and r[2] == 10_000])} at 1e4), "
        f"at 1e5 states ({_range([r[3] for r in ratios if r[5] == 'graph' and r[2] == 100_000])}"
        ") the batch runs as a loop over chunks (`symdyn.codegen.jax_lowering.in_chunks`; "
        "graphs: 256 states, from 2048 states on; programs: 1024, or down to 128 where the "
        "workspace rows their results are gathered from would outgrow 2 MiB a chunk "
        "(`jax_lowering.program_chunk`: g1 coriolis_matrix and christoffel 128), from four "
        "chunks on), so that the rows "
        "XLA keeps between its fusions stay in the caches (measured apart, one core, glibc's "
        "defaults, us a state in one pass -> in chunks of ~1000: 1e5 states ur5 rnea 0.44 -> "
        "0.20, aba 0.81 -> 0.26, coriolis_matrix 0.68 -> 0.32; panda aba 1.30 -> 0.43; 1e4 "
        "states, since the chunks start from the reused result set instead of a zero fill: "
        "panda christoffel 3.17 -> 2.27, aba 0.82 -> 0.62, ur5 christoffel 0.36 -> 0.43, the one "
        "slower; graph chunks of 256 instead of 1024 states, interleaved, JAX/C at 1e4 / 1e5 "
        "states: panda christoffel 2.98 / 3.19 -> 2.59 / 2.43, with its 729 results a state "
        "the chunk's results stay in the L2 cache; ur5 coriolis_matrix 1.29 / 1.55 -> 1.15 / "
        "1.44; g1 crba 1e4 2.61 -> 2.39; program chunks of 128 instead of one pass, 1000 "
        "states, interleaved: g1 coriolis_matrix 2.69-2.87 -> 2.46-2.51, christoffel 2.60-2.65 "
        "-> 1.86-1.91). What remains there is XLA's temporaries, allocated "
        "afresh for every call (next points but one).",
        f"- The auto rule's limit (`GRAPH_MAX` = {sjax.GRAPH_MAX} graph instructions) is set by "
        "compile time, not speed. With XLA's LLVM IR fusion emitters "
        "(`symdyn.jax.COMPILER_OPTIONS`; the compile table's last row has XLA's defaults) "
        "graphs (their shared values kept) to ~8500 instructions compile in about a program's "
        "time (G1 rnea 6314 and crba 6563 instructions: ~3 s of XLA each, about a G1 program's "
        "in the compile table), so G1's rnea and crba and panda's christoffel (6304) now run as "
        "graphs (with XLA's defaults the limit was 5000: G1's five with rnea and crba as graphs took "
        "30.7 s, past the budget). Larger graphs take longer than any program (measured apart: "
        "G1 aba, 16389 instructions, 11.2 s of XLA, which takes G1's five to about 30 s; G1 "
        "coriolis_matrix, "
        "25k, 18.8 s). Where the graph was forced beside the program (`graph us`; "
        f"{forced}) it ran {_range(gain)} faster than the program; `route=\"graph\"` forces "
        "it.",
        "- Program route (the models past `symdyn.jax.GRAPH_MAX` instructions): one scan step "
        "per step call of the recorded program (about a hundred to a thousand on G1), each "
        "switching to its kernel, which gathers its own argument rows from the workspace and "
        "stacks its P result rows (calls writing more split into steps), written into free "
        "rows of the workspace. Its time is that array traffic over the batch plus the "
        "kernels' operations, and its workspace, allocated afresh for every call (next "
        "point). A row a step stacks and writes costs about four kernel operations, so P is "
        "small where splitting repeats little work (`jax_lowering._split`: G1 coriolis_matrix "
        "6 rows, crba 4, aba 50) (measured apart, one core, interleaved, us a state at 100 / "
        "1000 states: gathering in the branch and stacking there, shared values kept, against "
        "gathering the longest row list before the switch: G1 aba 17.6 / 13.0 -> 14.7 / 10.6, "
        "coriolis_matrix 30.0 / 32.2 -> 22.3 / 20.3, crba 13.6 / 9.2 -> 9.1 / 7.0; then P 6 "
        "for coriolis_matrix 14.7 / 29.6 against 24.4 / 28.5 with P 13 and 27.4 / 42.0 "
        "unsplit, P 4 instead of 17 for crba 11.5 / 7.3 -> 6.1 / 5.0). The steps run as one "
        "scan per segment of the program whose calls share no kernel with the others (the "
        "algorithm's passes, `jax_lowering._segments`), each writing at most the rows its "
        "calls need: G1 aba's segments write 12, 9, 16, 50, 42, 12 and 7 rows a step instead "
        "of 50 for all (14.0 / 9.3 -> 11.6 / 6.8 us a state; coriolis_matrix, P 6 in all but "
        "its first segment, 12.6 / 14.1 -> 12.7 / 13.9). On small batches a step's time is "
        "mostly XLA's fixed cost per kernel (G1 aba's heavy kernel, 757 instructions, 16-17 us "
        "a call from 8 to 100 states, one XLA kernel per kept value and per result row), so a "
        "kernel keeping at least 32 values writes them eight to an array "
        "(`jax_lowering.PROGRAM_GROUP_MIN`), and where a segment's steps write more than 8 rows "
        "(a stack XLA runs as a kernel a row) each of its kernels is compiled as one function "
        "(`jax_lowering.small_call`, `PROGRAM_SMALL_CALLS`): a step is the loop's iteration, "
        "the switch and one call (`experiments/jax_program_steps.py g1`: one core, "
        "interleaved, us a state at 100 / 1000 states, XLA's kernels -> one function a kernel, "
        "C batch: G1 christoffel 78.7 / 78.1 -> 49.2 / 61.7, C 44.5 / 45.0; aba 10.5 / 7.8 -> "
        "6.0 / 6.3, C 4.0 / 3.9; XLA's compile about the same; G1 coriolis_matrix, 6 rows a "
        "step, stays XLA's kernels: as one function it ran no faster and its 104 kernels took "
        "3 s longer to compile). The kernels "
        "serve every body "
        "of a kind, its tree transform and inertia read from a table; where the model's "
        "constants 0 and +-1 are folded into them instead (`symdyn.jax.FOLD_MAX`: the folded "
        "kernels of G1's rnea and crba stay within it, aba's, coriolis_matrix's and "
        "christoffel's do not) G1 rnea runs 1.4-1.8x and crba 1.1-1.25x faster than from the "
        "table (measured apart, interleaved, 100 and 1000 states; folded, G1's aba, "
        "coriolis_matrix and christoffel ran 0.89-1.21x as fast and compiled 2.4-4.9x as "
        "long). It stays the slowest route "
        "per state and is used for what it bounds: XLA's compile time (below).",
        "- Memory: XLA allocates its result and temporary buffers afresh for every call; glibc "
        "maps the blocks above its mmap threshold (at most 32 MiB) anew each time, and touching "
        "the fresh pages costs more than the arithmetic where results are large. As the C "
        "batch reuses the result arrays its caller has dropped, `symdyn.jax.compile`'s "
        "functions write results of at least 1 MiB a batch into a dropped result set of the "
        "same size, donated to the call (`reuse_results`, default; this run's calls drop their "
        "results, as the C batch's do) (measured apart, one core, us a state, fresh -> reused: "
        "G1 christoffel, 42875 entries a state, 171 / 237 -> 89 / 139 at 100 / 1000 states; "
        "panda christoffel 1e4 states 5.2 -> 3.3; ur5 christoffel 1e5 states 1.14 -> 0.75). "
        "A program's results are written box by box around the entries that are always zero "
        "(`jax_lowering._boxes`), which a reused set already holds: G1 christoffel, 77 % of "
        "its 42875 entries a state always zero (boxes over 44 %), 106 / 150 -> 60 / 98 us a "
        "state at 100 / 1000 states into a reused set, against assembling every entry from the "
        "workspace rows (measured apart, one core, interleaved). XLA's "
        "temporaries (the program's workspace, the rows kept between fusions) are still fresh "
        "for every call; the C batch's buffers are NumPy's, for which NumPy asks for "
        "transparent huge pages (a 65 MB array written once: 3.8 ms, 21 ms without). Two "
        "process-wide ways around that, each a report of its own: "
        "`symdyn.jax.retain_freed_memory()` makes glibc reuse the buffers "
        "(reports/jax_retained.md), `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` in the environment "
        "makes glibc ask for huge pages too (reports/jax_hugepages.md); before result reuse "
        "they took G1 christoffel from ~180-225 to ~72-89 us a state. "
        + _MEMORY_RUN[memory],
        f"- Compile time: the 35-DoF humanoid's five algorithms take {g1_total:.1f} s here "
        "(target <= 30 s); the traced route, the only one before, took 51 s for rnea + crba + "
        "aba alone (this report of 2026-11-23; coriolis_matrix and christoffel were not "
        "compiled, minutes each).", ""]
    return out


_MEMORY_RUN = {
    "default": "This run: glibc's defaults (what a process gets unless it changes them).",
    "retained": "This run called `symdyn.jax.retain_freed_memory()` first, so glibc reuses "
                "those buffers (and the C batch's results); reports/jax.md is the same run with "
                "glibc's defaults.",
    "hugepages": "This run had `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`: glibc's mapped blocks "
                 "(XLA's buffers, the C batch's results) on transparent huge pages; reports/"
                 "jax.md is the same run with glibc's defaults."}
_MEMORY_HEADER = {
    "default": "Memory: glibc's defaults (what a process gets unless it changes them); "
               "reports/jax_retained.md has the same run after "
               "`symdyn.jax.retain_freed_memory()`, reports/jax_hugepages.md with "
               "`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`.",
    "retained": "Memory: `symdyn.jax.retain_freed_memory()` was called first (glibc's malloc "
                "serves blocks below 1 GiB from its main heap for every thread and keeps what "
                "is freed: XLA's per-call buffers and the C batch's results are reused, not "
                "mapped afresh); reports/jax.md has the same run with glibc's defaults.",
    "hugepages": "Memory: `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc asks for transparent "
                 "huge pages for the blocks it maps: XLA's per-call buffers fault once per 2 MiB, "
                 "not per 4 KiB, as NumPy's large arrays do); reports/jax.md has the same run "
                 "with glibc's defaults."}
_HUGETLB = "glibc.malloc.hugetlb=1"
_DISPATCH_RUN = {
    True: "This run calls `symdyn.jax.synchronous_dispatch()` first: each call runs on the "
          "calling thread (measured apart, one core, 100 states, JAX/C asynchronous -> "
          "synchronous, separate processes: ur5 rnea 2.16 -> 1.88, christoffel 2.71 -> 2.31, "
          "panda rnea 2.40 -> 1.89, crba 3.00 -> 2.72, coriolis_matrix 4.43 -> 3.79, g1 crba "
          "6.47 -> 6.20).",
    False: "This run keeps JAX's default dispatch (`--dispatch async`); reports/jax.md calls "
           "`symdyn.jax.synchronous_dispatch()` first."}
_SYNC_HEADER = ("Dispatch: `symdyn.jax.synchronous_dispatch()` (`jax_cpu_enable_async_dispatch` "
                "off: JAX's CPU client runs each call on the calling thread, as the C batch "
                "runs; with JAX's default a worker thread runs it and the caller waits: "
                "`--dispatch async`).")
_ASYNC_HEADER = ("Dispatch: JAX's default (its CPU client hands each call to a worker thread "
                 "and the caller waits for it); reports/jax.md runs each call on the calling "
                 "thread (`symdyn.jax.synchronous_dispatch()`).")


def _huge_pages() -> None:
    """Run this script again with glibc's ``hugetlb`` tunable (read at process start only)."""
    import ctypes
    import ctypes.util
    import sys
    try:
        version = ctypes.CDLL(ctypes.util.find_library("c")).gnu_get_libc_version
        version.restype = ctypes.c_char_p
        major, minor = (int(v) for v in version().decode().split(".")[:2])
    except (OSError, AttributeError, TypeError, ValueError):
        raise SystemExit("bench_jax.py: error: --huge-pages needs glibc's malloc") from None
    if (major, minor) < (2, 35):
        raise SystemExit(f"bench_jax.py: error: --huge-pages needs glibc >= 2.35 (its "
                         f"glibc.malloc.hugetlb tunable), this is {major}.{minor}")
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if _HUGETLB not in tunables.split(":"):
        env = dict(os.environ, GLIBC_TUNABLES=":".join(t for t in (tunables, _HUGETLB) if t))
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _within_summary(ratios) -> list[str]:
    """'robot: k of n' of the measurements within 3x of the C batch, per robot."""
    out = []
    for robot in dict.fromkeys(r[0] for r in ratios):
        mine = [r for r in ratios if r[0] == robot]
        out.append(f"{robot} {sum(1 for r in mine if r[3] <= 3.0)} of {len(mine)}")
    return out


def _names(allowed):
    """argparse type: a comma-separated list of names from ``allowed``."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(t.strip() for t in text.split(",") if t.strip())
        bad = [n for n in names if n not in allowed]
        if bad or not names:
            raise ValueError(f"choose from {', '.join(allowed)}")
        return names
    return parse


def _sizes(text: str) -> list[int]:
    """argparse type: comma-separated batch sizes (``1e4`` allowed)."""
    return [int(float(t)) for t in text.split(",") if t.strip()]


def _pin(n: int) -> list[int]:
    """Restrict this process (and the threads it starts later: XLA's) to its first ``n`` cores
    before JAX starts; returns them."""
    if n < 1:
        raise SystemExit(f"bench_jax.py: error: --cores must be >= 1, got {n}")
    avail = sorted(os.sched_getaffinity(0))
    cores = avail[:n]
    os.sched_setaffinity(0, cores)
    return cores


def main():
    p = parser(__doc__)
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--cores", type=int, default=1, metavar="N",
                   help="CPU cores the process may use (default 1: XLA spreads large fusions "
                        "over the cores it sees, the C batch runs on one thread)")
    p.add_argument("--dispatch", choices=("sync", "async"), default="sync",
                   help="sync (default): symdyn.jax.synchronous_dispatch(), each call on the "
                        "calling thread; async: JAX's default (writes jax_async*.md)")
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--retain-memory", action="store_true",
                        help="call symdyn.jax.retain_freed_memory() first; writes "
                             "jax_retained.md")
    memory.add_argument("--huge-pages", action="store_true",
                        help="run with GLIBC_TUNABLES=glibc.malloc.hugetlb=1; writes "
                             "jax_hugepages.md")
    p.add_argument("--robots", type=_names(ROBOTS), default=None, metavar="R,...",
                   help=f"robots of the throughput table (default: {', '.join(ROBOTS)})")
    p.add_argument("--algorithms", type=_names(ALGS), default=ALGS, metavar="A,...",
                   help=f"algorithms (default: {', '.join(ALGS)})")
    p.add_argument("--sizes", type=_sizes, default=None, metavar="N,...",
                   help="batch sizes of the throughput table (default: 1e2 ... 1e5)")
    p.add_argument("--throughput-only", action="store_true",
                   help="the default route beside the C batch only; writes jax_throughput.md")
    args = p.parse_args()
    if args.huge_pages:
        _huge_pages()                              # returns once the tunable is set
    mode = "retained" if args.retain_memory else "hugepages" if args.huge_pages else "default"
    all_cores = sorted(os.sched_getaffinity(0))
    cores = _pin(args.cores)
    sync = args.dispatch == "sync" and args.device == "cpu"
    if sync:
        import symdyn.jax
        symdyn.jax.synchronous_dispatch()           # before JAX starts its CPU client
    if args.retain_memory:
        import symdyn.jax
        if not symdyn.jax.retain_freed_memory():
            raise SystemExit("bench_jax.py: error: --retain-memory needs glibc's malloc")
    import jax
    jax.config.update("jax_enable_x64", True)
    import symdyn.jax as sjax
    if args.device == "gpu":
        try:
            jax.devices("gpu")
        except RuntimeError:
            raise SystemExit("bench_jax.py: error: --device gpu, but JAX sees no GPU "
                             f"(devices: {jax.devices()})")
    t_start = time.perf_counter()
    notes: list[str] = []
    rows, ratios = throughput(args, notes)
    if args.throughput_only:
        path = out_dir(args) / "jax_throughput.md"
        lines = ["# JAX default route beside the C batch (us a state, medians)", "",
                 f"JAX {jax.__version__}, pinned to {len(cores)} core(s), "
                 f"{'synchronous' if sync else 'asynchronous'} dispatch, memory: {mode}.", ""]
        lines += table(["robot", "nv", "algorithm", "route", "batch", "JAX us", "C us", "JAX/C"],
                       [r[:7] + [r[10]] for r in rows])
        path.write_text("\n".join(lines) + "\n")
        log(f"wrote {path}")
        return
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        crows, g1_total, totals, (many_cores, many) = pool.apply(_compile_times_on,
                                                                 (all_cores, args))
    cmd = "python experiments/bench_jax.py" + (" --quick" if args.quick else "") + \
        (" --device gpu" if args.device == "gpu" else "") + \
        (f" --cores {args.cores}" if args.cores != 1 else "") + \
        (" --dispatch async" if args.dispatch == "async" else "") + \
        (" --retain-memory" if args.retain_memory else "") + \
        (" --huge-pages" if args.huge_pages else "")
    from symdyn import __version__  # noqa: F401
    lines = header("JAX backend: throughput and jit compile time", cmd, t_start,
                   f"JAX {jax.__version__} on {jax.devices(args.device)[0]} (float64, "
                   f"`jax_enable_x64`). The process is pinned to {len(cores)} CPU core"
                   f"{'s' if len(cores) > 1 else ''} (`--cores`, cores {cores}): XLA would "
                   "otherwise spread large fusions over all the cores it sees, while the C batch "
                   "runs on one thread. " + (_SYNC_HEADER if sync else _ASYNC_HEADER) + " " +
                   _MEMORY_HEADER[mode])
    within = [r for r in ratios if r[3] <= 3.0]
    faster = [r for r in ratios if np.isfinite(r[4])]
    lines += ["## Per-state time over batches (medians, side by side)", "",
              "Columns: microseconds per state of the jitted, batched symdyn function "
              "(`symdyn.jax.compile`, default `route=\"auto\"`; `route`: the route it took; "
              "default checks of shapes, NaN and unit quaternions included), of the compiled "
              "C batch (`symdyn.codegen.build(...).alg.batch`, one thread, its own checks "
              "included), of the traced route (`route=\"trace\"`: the algorithm on JAX arrays "
              "under `vmap`, what `compile` did before the graph and program routes; measured on "
              f"the robots with nv <= {TRACED_MAX_NV}) and of ADAM's JAX backend (jit + vmap). "
              "`JAX/C` is the median per-round ratio (target <= 3), `trace/JAX` and `ADAM/JAX` "
              "the median per-round ratios (> 1: the default route faster). ADAM has no inverse "
              "dynamics with accelerations, no Coriolis matrix and no Christoffel symbols: its "
              "`rnea` column is `mass_matrix @ qdd + bias_force` (two calls), and it always "
              "carries a floating base (a 6 + n mass matrix even for fixed-base arms, with an "
              f"identity base pose). `graph us`: `route=\"graph\"` forced, beside the program "
              "route where the graph has at most 2.5 times `symdyn.jax.GRAPH_MAX` instructions. "
              "`1k us` and `1k/C`: `symdyn.jax.compile(..., one_kernel=True)` (each call one XLA "
              "kernel; graph and program routes, on the batches run in one pass, not in chunks; "
              "not the default, for its compile time: the compile table) and its median "
              "per-round ratio to the C batch. "
              f"G1 runs batches of {' and '.join(map(str, G1_SIZES))} states.",
              ""]
    lines += table(["robot", "nv", "algorithm", "route", "batch", "JAX us", "C us", "trace us",
                    "ADAM us", "graph us", "JAX/C", "trace/JAX", "ADAM/JAX", "1k us", "1k/C"],
                   rows)
    lines += ["", f"Within 3x of the C batch: {len(within)} of {len(ratios)} measurements "
              f"({', '.join(_within_summary(ratios))}). Faster than ADAM: "
              f"{sum(1 for r in faster if r[4] > 1)} of {len(faster)} measurements where ADAM has "
              "the quantity.", ""]
    kernel = [r for r in ratios if np.isfinite(r[9])]
    if kernel:
        lines += [f"With `one_kernel=True` (the `1k` columns): "
                  f"{sum(1 for r in kernel if r[9] <= 3)} of {len(kernel)} measurements within "
                  "3x of the C batch, JAX/C "
                  f"{_range([r[9] for r in kernel])} against {_range([r[3] for r in kernel])} "
                  "by default on the same cells.", ""]
    lines += notes + [""] if notes else []
    lines += ["## Compile time versus model size", "",
              "Seconds of symdyn's setup (route choice; CasADi tracing or recording of the "
              "program) + JAX's trace and lowering + XLA's compile of the batched function of "
              f"each algorithm (batch shape {COMPILE_BATCH}; one XLA compile per shape: the graph "
              "route keeps shared values on large batches, a different code from small ones), "
              "with the route taken "
              f"(g: graph, p: program, t: trace). Measured in a separate process on all "
              f"{len(all_cores)} cores of the machine (XLA emits fusions in parallel when it "
              "compiles, as it does for a user). XLA's options are those `symdyn.jax.compile` "
              "uses: `symdyn.jax.compiler_options()` "
              f"({sjax.compiler_options() or 'none: this jaxlib does not know them'}: its LLVM IR "
              "fusion emitters; the kernels of programs whose steps write more than 8 rows are "
              "each compiled as one function, `jax_lowering.PROGRAM_SMALL_CALLS`); the row "
              f"\"{G1_DEFAULT_XLA}\" compiles the same routes with XLA's defaults (its MLIR "
              "fusion emitters) throughout; the rows "
              f"\"{G1_SMALL}\" and \"{G1_ONE_KERNEL}\" "
              "compile for batches of 100 states, as XLA's kernels and with "
              "`compile(..., one_kernel=True)` (each call one kernel: XLA compiles it on one "
              "thread).", ""]
    lines += table(["model", "nv", *ALGS, "total s"], crows)
    g1_ok = g1_total <= 30.0
    small, one = totals.get(G1_SMALL, float("nan")), totals.get(G1_ONE_KERNEL, float("nan"))
    many_s = {r[0]: r[3] for r in many}
    ahead = many_s.get(f"g1, {COMPILE_BATCH} states", float("nan"))
    ahead_small = many_s.get("g1, 100 states", float("nan"))
    ahead_one = many_s.get("g1, 100 states, one_kernel=True", float("nan"))
    lines += ["", f"35-DoF humanoid (G1), all five algorithms: {g1_total:.1f} s "
              f"({small:.1f} s for batches of 100 states). Target (<= 30 s): "
              f"{'met' if g1_ok and small <= 30.0 else 'missed'}. With `one_kernel=True` "
              f"(batches of 100 states): {one:.1f} s, "
              f"{'within' if one <= 30.0 else 'past'} the target.", "",
              "Compiled ahead (`symdyn.jax.compile_many(g1, five, batch_sizes=(B,), "
              "workers=w)`, wall seconds): the functions the first calls of such batches run "
              "(their checks and result reuse included: slightly more than the batched function "
              "of the table above), compiled before any call, one after the other (one thread) "
              f"and on {many_cores} threads (one per core: one algorithm is recorded and traced "
              "in Python while XLA compiles another, and XLA compiles a single-function kernel "
              "on one thread). Same process, after the table above.", ""]
    lines += table(["G1, five algorithms", "nv", "one thread s", f"{many_cores} threads s"],
                   [[r[0], r[1], f"{r[2]:.1f}", f"{r[3]:.1f}"] for r in many])
    lines += ["", f"With `compile_many` on {many_cores} threads G1's five compile in "
              f"{ahead:.1f} s ({ahead_small:.1f} s for batches of 100 states; "
              f"{ahead_one:.1f} s with `one_kernel=True`): "
              f"{'within' if max(ahead, ahead_small) <= 30.0 else 'past'} the 30 s target.", ""]
    lines += _discussion(ratios, g1_total, mode, sync)
    if args.device == "cpu":
        lines += ["No GPU figures were taken in this run (CPU only); `--device gpu` runs the same "
                  "script on a GPU machine.", ""]
    name = "jax" + ("" if args.device == "cpu" else "_gpu") + \
        ("_async" if args.device == "cpu" and not sync else "") + \
        ("" if mode == "default" else f"_{mode}")
    path = out_dir(args) / f"{name}.md"
    path.write_text("\n".join(lines) + "\n")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
