"""JAX backend throughput and jit compile times -> reports/jax.md.

Per-state time of the jitted, batched symdyn algorithms (``symdyn.jax.compile``, its default
``route="auto"``: the lowered CasADi graph for small models, the recorded program past
``symdyn.codegen.choose.JAX`` instructions; rnea, crba, coriolis_matrix, christoffel, aba) over
batches
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
graph, ADAM or compile-time measurements) and writes ``jax_throughput.md`` (with
``--retain-memory`` / ``--huge-pages``: ``jax_retained.md`` / ``jax_hugepages.md``, the runner's
presets, since the memory settings change per-call buffers, not compile times): a short run for
comparing two versions of the library.

``--device gpu`` runs the JAX and ADAM kernels on the first GPU (batch sizes up to 1e6) and
refuses in one line when JAX sees none; the C batch stays on the CPU. ``--retain-memory`` calls
``symdyn.jax.process.retain_freed_memory()`` first (glibc reuses the buffers XLA allocates for
every call; the C batch's results come from the same allocator) and writes
reports/jax_retained.md.
``--huge-pages`` runs the script again with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc >=
2.35 then asks for transparent huge pages for the blocks it maps, as NumPy does for its large
arrays) and writes reports/jax_hugepages.md. ``--dispatch`` (CPU): ``sync`` (default) runs each
call on the calling thread (``symdyn.jax.process.synchronous_dispatch()``, the setting for small
batches on a CPU), ``async`` keeps JAX's default (a worker thread runs each call) and adds
``_async`` to the report's name.
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
COMPILE_BATCH = 4096     # compile times for this batch shape: the lowering keeps shared values
# on large batches (symdyn.jax.lowering.SHARED_WORK), so the code depends on the shape


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
    from symdyn.codegen import build, choose

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
                    and _graph_size(model, alg) <= 2.5 * choose.JAX.max_unrolled):
                fg = sjax.compile(model, alg, route="graph")
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
                for extra in (ft, fa, fg):
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
                rj = float(np.median([a / b for a, b in zip(ts[0], ts[1])]))
                rows.append([robot, model.nv, alg, f.route, f"{n:.0e}", us(tj), us(tc),
                             us(tt) if ft is not None else "-", us(ta) if fa is not None else "-",
                             us(tg) if fg is not None else "-", f"{rj:.2f}",
                             f"{rt:.2f}" if ft is not None else "-",
                             f"{ra:.2f}" if fa is not None else "-"])
                ratio_rows.append((robot, alg, n, rj, ra, f.route, rt, tj, tg))
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
    from symdyn.jax import jitted
    from symdyn.models import serial_chain

    chains = (5, 10) if args.quick else (5, 10, 20)
    models = [(f"serial:{n}", serial_chain(n, seed=1)) for n in chains]
    g1 = sd.load_robot("g1")
    models.append(("g1 (35 DoF, floating)", g1))
    # beside it, XLA's default options (its MLIR fusion emitters) instead of sjax.COMPILER_OPTIONS
    models.append((G1_DEFAULT_XLA, g1))
    # and batches of 100 states (another code: fewer shared values kept)
    models.append((G1_SMALL, g1))
    rows, total, g1_total, totals = [], 0.0, 0.0, {}
    for label, model in models:
        row, total = [label, model.nv], 0.0
        jitted._compiler_options = {} if label == G1_DEFAULT_XLA else None
        batch = 100 if label == G1_SMALL else COMPILE_BATCH
        for alg in ALGS:
            t0 = time.perf_counter()
            f = sjax.compile(model, alg)                                    # route choice,
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
    jitted._compiler_options = None
    return rows, g1_total, totals, compile_many_times(g1)


def compile_many_times(g1):
    """Wall seconds of ``symdyn.jax.compile_many(g1, ALGS, batch_sizes=(B,), workers=w)``: the
    functions the first calls of batches of B states run (with their checks), compiled ahead;
    one thread (one after the other) and one per core."""
    import symdyn.jax as sjax
    cores = len(os.sched_getaffinity(0))
    rows = []
    for batch in (COMPILE_BATCH, 100):
        row = [f"g1, {batch} states", g1.nv]
        for workers in (1, cores):
            t0 = time.perf_counter()
            sjax.compile_many(g1, ALGS, batch_sizes=(batch,), workers=workers)
            row.append(time.perf_counter() - t0)
            log(f"compile_many {row[0]}, {workers} threads: {row[-1]:.1f} s")
        rows.append(row)
    return cores, rows


def _range(vals) -> str:
    vals = [v for v in vals if np.isfinite(v)]
    return f"{min(vals):.1f}-{max(vals):.1f}x" if vals else "-"


def _discussion(ratios, g1_total, memory: str, sync: bool) -> list[str]:
    """What the tables say about the targets, from this run's numbers."""
    from symdyn.codegen import choose
    from symdyn.jax import routes
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
    out += [
        "- Graph route (`symdyn.jax.lowering`): XLA fuses the lowered scalar graph into loops "
        "over contiguous batch rows; values used more than once are kept for their users on "
        "large batches (`lowering._shared`), written a group of rows at a time. What remains "
        "against the C batch is the rows XLA stores between fusions and a fixed cost per call "
        f"(at 100 states JAX/C is {_range([r[3] for r in small])}). " + _DISPATCH_RUN[sync],
        "- Large batches run as a loop over chunks (`symdyn.jax.chunks`: graphs 256 states "
        "from 2048 on; programs 1024, or fewer where their result rows outgrow 2 MiB a chunk), "
        "so that the rows XLA keeps between its fusions stay in the caches.",
        f"- The auto rule's limit ({choose.JAX.max_unrolled} graph instructions, "
        "`symdyn.codegen.choose.JAX`) is set by compile time, not speed: larger graphs take "
        "longer to compile than any program (the compile table).",
        "- Program route (`symdyn.jax.program`): one `lax.scan` per pass of the algorithm, a "
        "`lax.switch` over its kernels a step; the model's constants 0 and +-1 are folded into "
        f"the kernels while they stay within {routes.FOLD_MAX} instructions "
        "(`symdyn.jax.routes.FOLD_MAX`).",
        "- Large results: XLA allocates a call's results afresh; `f(*xs, out=earlier)` writes "
        "into the arrays of earlier results instead (donated). This benchmark's calls allocate "
        "fresh results, as a caller that keeps them does. " + _MEMORY_RUN[memory],
        ""]
    return out


_MEMORY_RUN = {
    "default": "This run: glibc's defaults (what a process gets unless it changes them).",
    "retained": "This run called `symdyn.jax.process.retain_freed_memory()` first, so glibc reuses "
                "those buffers (and the C batch's results); reports/jax.md is the same run with "
                "glibc's defaults.",
    "hugepages": "This run had `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`: glibc's mapped blocks "
                 "(XLA's buffers, the C batch's results) on transparent huge pages; reports/"
                 "jax.md is the same run with glibc's defaults."}
_MEMORY_HEADER = {
    "default": "Memory: glibc's defaults (what a process gets unless it changes them); "
               "reports/jax_retained.md has the same throughput table after "
               "`symdyn.jax.process.retain_freed_memory()`, reports/jax_hugepages.md with "
               "`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`.",
    "retained": "Memory: `symdyn.jax.process.retain_freed_memory()` was called first (glibc's "
                "malloc "
                "serves blocks below 1 GiB from its main heap for every thread and keeps what "
                "is freed: XLA's per-call buffers and the C batch's results are reused, not "
                "mapped afresh); the throughput table of reports/jax.md has the same "
                "measurement with glibc's defaults.",
    "hugepages": "Memory: `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc asks for transparent "
                 "huge pages for the blocks it maps: XLA's per-call buffers fault once per 2 MiB, "
                 "not per 4 KiB, as NumPy's large arrays do); the throughput table of "
                 "reports/jax.md has the same measurement with glibc's defaults."}
_HUGETLB = "glibc.malloc.hugetlb=1"
_DISPATCH_RUN = {
    True: "This run calls `symdyn.jax.process.synchronous_dispatch()` first: each call runs on the "
          "calling thread (`--dispatch async` measures JAX's default beside it).",
    False: "This run keeps JAX's default dispatch (`--dispatch async`); reports/jax.md calls "
           "`symdyn.jax.process.synchronous_dispatch()` first."}
_SYNC_HEADER = ("Dispatch: `symdyn.jax.process.synchronous_dispatch()` "
                "(`jax_cpu_enable_async_dispatch` "
                "off: JAX's CPU client runs each call on the calling thread, as the C batch "
                "runs; with JAX's default a worker thread runs it and the caller waits: "
                "`--dispatch async`).")
_ASYNC_HEADER = ("Dispatch: JAX's default (its CPU client hands each call to a worker thread "
                 "and the caller waits for it); reports/jax.md runs each call on the calling "
                 "thread (`symdyn.jax.process.synchronous_dispatch()`).")


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
                   help="sync (default): symdyn.jax.process.synchronous_dispatch(), each call "
                        "on the "
                        "calling thread; async: JAX's default (writes jax_async*.md)")
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--retain-memory", action="store_true",
                        help="call symdyn.jax.process.retain_freed_memory() first; writes "
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
        from symdyn.jax.process import synchronous_dispatch
        synchronous_dispatch()                      # before JAX starts its CPU client
    if args.retain_memory:
        from symdyn.jax.process import retain_freed_memory
        if not retain_freed_memory():
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
        # the memory variants change how XLA's per-call buffers are allocated, not compile times
        path = out_dir(args) / ("jax_throughput.md" if mode == "default" else f"jax_{mode}.md")
        cmd = "python experiments/bench_jax.py --throughput-only" + \
            (" --quick" if args.quick else "") + \
            (" --retain-memory" if args.retain_memory else "") + \
            (" --huge-pages" if args.huge_pages else "")
        lines = header("JAX default route beside the C batch (us a state, medians)", cmd,
                       t_start, f"JAX {jax.__version__}, pinned to {len(cores)} core(s), "
                       f"{'synchronous' if sync else 'asynchronous'} dispatch. "
                       + _MEMORY_HEADER[mode])
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
              "route where the graph has at most 2.5 times the JAX limit of "
              "`symdyn.codegen.choose` instructions. "
              f"G1 runs batches of {' and '.join(map(str, G1_SIZES))} states.",
              ""]
    lines += table(["robot", "nv", "algorithm", "route", "batch", "JAX us", "C us", "trace us",
                    "ADAM us", "graph us", "JAX/C", "trace/JAX", "ADAM/JAX"],
                   rows)
    lines += ["", f"Within 3x of the C batch: {len(within)} of {len(ratios)} measurements "
              f"({', '.join(_within_summary(ratios))}). Faster than ADAM: "
              f"{sum(1 for r in faster if r[4] > 1)} of {len(faster)} measurements where ADAM has "
              "the quantity.", ""]
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
              "fusion emitters); the row "
              f"\"{G1_DEFAULT_XLA}\" compiles the same routes with XLA's defaults (its MLIR "
              "fusion emitters) throughout; the row "
              f"\"{G1_SMALL}\" compiles for batches of 100 states.", ""]
    lines += table(["model", "nv", *ALGS, "total s"], crows)
    g1_ok = g1_total <= 30.0
    small = totals.get(G1_SMALL, float("nan"))
    many_s = {r[0]: r[3] for r in many}
    ahead = many_s.get(f"g1, {COMPILE_BATCH} states", float("nan"))
    ahead_small = many_s.get("g1, 100 states", float("nan"))
    lines += ["", f"35-DoF humanoid (G1), all five algorithms: {g1_total:.1f} s "
              f"({small:.1f} s for batches of 100 states). Target (<= 30 s): "
              f"{'met' if g1_ok and small <= 30.0 else 'missed'}.", "",
              "Compiled ahead (`symdyn.jax.compile_many(g1, five, batch_sizes=(B,), "
              "workers=w)`, wall seconds): the functions the first calls of such batches run "
              "(their checks included: slightly more than the batched function "
              "of the table above), compiled before any call, one after the other (one thread) "
              f"and on {many_cores} threads (one per core: one algorithm is recorded and traced "
              "in Python while XLA compiles another). Same process, after the table above.", ""]
    lines += table(["G1, five algorithms", "nv", "one thread s", f"{many_cores} threads s"],
                   [[r[0], r[1], f"{r[2]:.1f}", f"{r[3]:.1f}"] for r in many])
    lines += ["", f"With `compile_many` on {many_cores} threads G1's five compile in "
              f"{ahead:.1f} s ({ahead_small:.1f} s for batches of 100 states): "
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
